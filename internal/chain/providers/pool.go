// Package providers reads one network through several JSON-RPC providers: a Pool
// answers the scanner's calls (it is a scanner.Client) from the first healthy
// provider in the order CHAIN_RPC_<NETWORK> lists them, and fails over to the next
// on errors, timeouts, rate limits, a head lagging the others' and a refused
// eth_getLogs. Providers that push new heads (ws(s)://) wake the scanner.
//
// # Which provider answers
//
// Primary and standby: the operator lists the providers in order of preference
// (a paid plan first, a free tier after), and every call goes to the first one
// that is usable for it. A call is never sent to a provider that cannot serve
// it:
//
//   - one rate-limited is skipped until the wait it asked for (Retry-After, or
//     the hint in its answer) is over; the pool does not call it at all;
//
//   - one whose calls failed or timed out is skipped while another is usable,
//     and probed in the background (one eth_blockNumber a head check) until it
//     answers again; with no other provider left it is still tried, so a lone
//     provider behaves as a single client does;
//
//   - one whose head lags the best known head by more than MaxLag blocks is
//     asked only when no provider that does not lag can answer (its view of the
//     latest blocks may be a branch the others left);
//
//   - eth_getLogs(from, to), a block read and an eth_call at a block go only to
//     a provider whose known head is at least the block asked for, while any provider has reported it: a
//     node behind answers an empty log list or no block, and the scanner would
//     skip a block or take it for a reorganisation (a block no provider has
//     reported is asked of them all: a reorganisation may have shortened the chain);
//
//   - one that answers eth_getLogs with a refusal, or with a rate limit NoLogsAfter
//     times in a row while its other methods answer (bsc-dataseed's disabled
//     eth_getLogs says "limit exceeded"), is out of the rotation for eth_getLogs,
//     with an error logged once; one eth_getLogs every NoLogsRetry (10 minutes)
//     tries it again. When no provider serves eth_getLogs they are all still
//     asked (the scanner spaces its attempts to its longest backoff then), so a
//     rate limit that ends is noticed.
//
//   - one whose eth_getLogs failed for a reason nobody names (an HTML page, a
//     proxy's text, an unknown envelope, a timeout) is asked for logs only when
//     no other provider can, for a wait that doubles with each such failure in a
//     row (1 s up to MaxBackoff) and ends only when it serves eth_getLogs again:
//     its head answering does not put it back, so it is never hammered; alone,
//     it is still asked (the scanner's own backoff spaces the attempts);
//
//   - one whose answer says a person must act (rpc.KindOperator: a refused key,
//     an exhausted quota or plan, a retired endpoint) is out of the rotation, with
//     an ERROR naming it and the reason and the state action_needed, and is tried
//     again every OperatorRetry; with none left, Stranded says why (/readyz);
//
//   - a successful answer is checked against what the pool knows of the same
//     provider: a head below the one it reported before by more than ReorgDepth
//     (a syncing node's 0x0, a load balancer's lagging backend) is not a rewind
//     of the chain but the provider behind (eth_syncing is asked, when it
//     answers, to tell "syncing" from "behind"): the head is not believed, the
//     call fails with kind behind (another provider answers; alone, the scanner
//     asks again next poll), and the provider's state says so until a head at
//     or near the last one comes back; a null block at or below a head it
//     reported is a backend behind (kind missing_block), never a
//     reorganisation, and never a reason to think it on another branch;
//
//   - an eth_getLogs range refusal is a hint, never passed on: a request above the
//     provider's own head (read again) or every provider's is the provider behind
//     (not_ready, another is asked); otherwise the range is asked again in pieces
//     of the cap named (or half the span), and the cap is believed for that
//     provider alone once a piece is served, and forgotten after CapForget.
//
// With no usable provider the call fails with the last provider's error (or, for
// providers skipped without a call, an error of the reason's kind: rate_limit with
// the shortest remaining wait, refused when none serves eth_getLogs, not_ready
// when none has reached the block).
//
// # Quotas
//
// Each provider may have a calls-per-second cap (CHAIN_RPC_RATE_<NETWORK>_<N>): a
// call that would exceed it goes to the next usable provider instead, and waits
// for the cap only when no other provider can take it. Standby providers cost one
// eth_blockNumber per head check (HeadEvery, the poll interval), none when they
// push their heads.
//
// # Cross-check
//
// Before a provider answers its first call (and again after it failed), the hash
// it reports for a block CheckDepth (the network's confirmations) below its head
// is compared with the hash another provider reported for that block earlier. A
// provider that disagrees is on another branch (or another chain): it is logged,
// reported as lagging and not used until a later check agrees. Each provider's
// chain id is also checked before its first use (CHAIN_ID_<NETWORK>); one
// reporting another is out of the pool for good.
//
// # Push
//
// Run subscribes to newHeads on every ws(s):// provider while the pool is in use
// (only the instance whose scanner holds the network's lock calls it), and each
// new head signals Wake, which ends the scanner's wait for its next poll. The
// pushed header also answers the scanner's next head read and its reads of the
// newest blocks (their hashes, linked parent to child from the newest pushed
// head) without a call, so with push a block costs its eth_getLogs alone. The
// scanner still reads every block's logs in order, so a dropped subscription
// loses nothing and polling goes on meanwhile (its head read by a call); the
// subscription reconnects with a growing wait.
package providers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/time/rate"

	"partnerd/internal/chain"
	"partnerd/internal/chain/rpc"
)

// Client is one provider's JSON-RPC client (rpc.Client), the same methods the
// scanner reads the chain with.
type Client = rpc.Reader

// Caller is a client that runs eth_call (rpc.Client). It is not part of Client
// (rpc.Reader), which the scanner's own clients implement without it: the pool
// asks a provider for it when a caller (the sanctions oracle) needs it.
type Caller interface {
	Call(ctx context.Context, to common.Address, data []byte, block uint64) ([]byte, error)
}

// Receipts is a client that reads transaction receipts (rpc.Client). Like
// Caller it is not part of Client: only a rescan asks for a receipt.
type Receipts interface {
	// Receipt returns nil when the node does not know the transaction.
	Receipt(ctx context.Context, txHash common.Hash) (*rpc.Receipt, error)
}

// Pusher is a client that can push new heads (rpc.Client over ws(s)://).
type Pusher interface {
	// Push reports whether the client's transport pushes (WebSocket).
	Push() bool
	// SubscribeHeads calls onHead with each new head until ctx is done or the
	// subscription fails (its error is returned); a head's Hash is zero when the
	// node pushed its number alone.
	SubscribeHeads(ctx context.Context, onHead func(*rpc.Block)) error
}

// Provider is one provider of the pool.
type Provider struct {
	// URL is the provider's endpoint; only its scheme and host are ever shown (Name).
	URL    string
	Client Client
	// Rate caps the calls a second sent to it (0: no cap).
	Rate float64
	// ChainIDChecked: its eth_chainId was found to be Options.ChainID already (at
	// start); otherwise the pool checks it before its first use.
	ChainIDChecked bool
}

// Observer hears every change of the providers' states (metrics, the overview).
type Observer interface {
	ChainProviders(network string, states []chain.ProviderState)
}

// Options configure a Pool.
type Options struct {
	Network string
	// ChainID is the chain id every provider must report (CHAIN_ID_<NETWORK>); a
	// provider reporting another is out of the pool for good. nil: not checked.
	ChainID *big.Int
	// MaxLag is how many blocks a provider's head may be behind the best known
	// head before it is passed over (default: DefaultMaxLag of the network).
	MaxLag uint64
	// CheckDepth is how far below a provider's head the cross-check compares a
	// block's hash (the network's confirmations; default 1).
	CheckDepth uint64
	// ReorgDepth is how far a provider's head may go back before the pool calls
	// it behind rather than reorganised: the scanner's (scanner.ReorgDepth);
	// default twice CheckDepth.
	ReorgDepth uint64
	// HeadEvery is the least time between two reads of a standby provider's head
	// (default 3s, the poll interval).
	HeadEvery time.Duration
	// NoLogsAfter is how many eth_getLogs rate limits in a row, while the
	// provider's other methods answer, mean it does not serve eth_getLogs (default 5).
	NoLogsAfter int
	// NoLogsRetry is how long such a provider stays out of eth_getLogs' rotation
	// before it is tried again (default DefaultNoLogsRetry).
	NoLogsRetry time.Duration
	// OperatorRetry is how long a provider whose answer says a person must act
	// (rpc.KindOperator) stays out of the rotation before one call tries it again
	// (default DefaultOperatorRetry).
	OperatorRetry time.Duration
	// CapForget is how long a provider's eth_getLogs range cap, once confirmed, is
	// kept before a full request probes it again (default DefaultCapForget).
	CapForget time.Duration
	// MaxBackoff caps the wait before a failing provider is tried again, and
	// between reconnections of a push subscription (default 30s).
	MaxBackoff time.Duration
	// Observer, when set, hears every change of the providers' states.
	Observer Observer
	Log      *slog.Logger
	// Tracing gives each call to a provider a client span under the span of the
	// work that made it (a scan step, a sanctions check), named by its method,
	// with the provider's Name, the network and the outcome, so a slow or failed
	// scan shows which provider answered what. nil: the no-op provider, spans cost
	// nothing (traces off).
	Tracing trace.TracerProvider
}

// DefaultNoLogsRetry is how long a provider that does not serve eth_getLogs stays
// out of its rotation before one eth_getLogs tries it again (a plan changed, a
// node fixed).
const DefaultNoLogsRetry = 10 * time.Minute

// DefaultOperatorRetry is how long a provider that needs its operator stays out
// of the rotation before it is tried again (a key replaced, a plan renewed).
const DefaultOperatorRetry = 10 * time.Minute

// DefaultCapForget is how long a learnt range cap is kept: nothing learnt from an
// answer is kept for good (a plan upgraded, a backend replaced), and a real cap
// costs one refused request to learn again.
const DefaultCapForget = 10 * time.Minute

// ErrorObserver, when the Observer implements it, counts each failed call the
// pool answers itself (by failing over, or by splitting a range): the caller sees
// only the last error, and counts that one.
type ErrorObserver interface {
	ChainRPCError(network, kind string)
}

// DefaultMaxLag is the lag in blocks beyond which a provider is passed over, per
// network: about two poll intervals of blocks at 3 s. BNB Smart Chain makes a
// block every 0.45 s and healthy providers differ by 3–8 blocks at a 3 s poll, so
// 3 would flap between them; 20 blocks is 9 s there. Tron's 3 s blocks: 5 blocks.
func DefaultMaxLag(network string) uint64 {
	if network == chain.TRC20 {
		return 5
	}
	return 20
}

// Name is how a provider is shown: scheme and host only. Providers put API keys
// in paths and query strings, so neither is ever logged or reported.
func Name(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "provider"
	}
	return u.Scheme + "://" + u.Host
}

// member is one provider and what the pool knows of it.
type member struct {
	i    int
	name string
	// c is the provider's client, each call traced (see tracedClient).
	c     *tracedClient
	push  Pusher
	limit *rate.Limiter

	head uint64
	// idOK: its chain id is the network's; wrongChain: it is not (never used).
	idOK       bool
	wrongChain bool
	// coolUntil: not called before (a rate limit's wait); failures: calls failed
	// in a row (0: healthy); retryAt: the next background probe of a failing one.
	coolUntil time.Time
	// logsCoolUntil: eth_getLogs is not sent before (its own rate limit).
	logsCoolUntil time.Time
	// logsFailed counts eth_getLogs failures nobody names (a page, a text, a
	// timeout) in a row, which only a served eth_getLogs ends (a head read does
	// not); until logsRetryAt it is asked for logs only when no other provider can.
	logsFailed  int
	logsRetryAt time.Time
	limits      int
	failures    int
	retryAt     time.Time
	lastErr     string
	lagging     bool
	// behindHead: its last head answered was below its head before by more than
	// ReorgDepth (head keeps the last one believed); syncing: eth_syncing said so.
	behindHead bool
	syncing    bool
	// agreed: it passed the cross-check; disagree: it failed it.
	agreed   bool
	disagree bool
	// noLogs: out of the rotation for eth_getLogs; logsLimited counts eth_getLogs
	// rate limits in a row, otherOK whether its other methods answered since.
	noLogs      bool
	noLogsRetry time.Time
	logsLimited int
	otherOK     bool
	checking    bool
	checkedAt   time.Time
	pushing     bool
	// operator: its answer said a person must act; out of the rotation until
	// operatorRetry.
	operator      bool
	operatorRetry time.Time
	// logsCap is its eth_getLogs range cap in blocks, believed once a request of
	// that size was served (0: none); learnt at capAt, forgotten after CapForget.
	logsCap uint64
	capAt   time.Time

	state string
	since time.Time
}

// Pool is a scanner.Client over several providers of one network.
type Pool struct {
	opts    Options
	log     *slog.Logger
	members []*member
	wake    chan struct{}
	// lastUse is when the scanner last called (unix nanoseconds).
	lastUse atomic.Int64

	mu     sync.Mutex
	active int
	best   uint64
	// seen holds hashes of blocks the pool answered with (the cross-check's reference).
	seen map[uint64]common.Hash
	// pushed holds the newest pushed headers by number (at most keepPushed), top
	// the newest; fresh is set while top was pushed after the scanner last read
	// the head (see pushedHead).
	pushed   map[uint64]*rpc.Block
	top      *rpc.Block
	topBy    *member
	fresh    bool
	reported []chain.ProviderState
	ctx      context.Context
}

// New returns a pool over providers, tried in their order.
func New(opts Options, providers []Provider) *Pool {
	if opts.MaxLag == 0 {
		opts.MaxLag = DefaultMaxLag(opts.Network)
	}
	if opts.CheckDepth == 0 {
		opts.CheckDepth = 1
	}
	if opts.ReorgDepth == 0 {
		opts.ReorgDepth = 2 * opts.CheckDepth
	}
	if opts.HeadEvery <= 0 {
		opts.HeadEvery = 3 * time.Second
	}
	if opts.NoLogsAfter <= 0 {
		opts.NoLogsAfter = 5
	}
	if opts.NoLogsRetry <= 0 {
		opts.NoLogsRetry = DefaultNoLogsRetry
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.OperatorRetry <= 0 {
		opts.OperatorRetry = DefaultOperatorRetry
	}
	if opts.CapForget <= 0 {
		opts.CapForget = DefaultCapForget
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Tracing == nil {
		opts.Tracing = noop.NewTracerProvider()
	}
	tracer := opts.Tracing.Tracer("partnerd/internal/chain/providers")
	p := &Pool{opts: opts, log: opts.Log.With("network", opts.Network), wake: make(chan struct{}, 1),
		seen: map[uint64]common.Hash{}, pushed: map[uint64]*rpc.Block{}, active: -1, ctx: context.Background()}
	now := time.Now()
	for i, pr := range providers {
		name := Name(pr.URL)
		m := &member{i: i, name: name, c: newTracedClient(pr.Client, tracer, opts.Network, name, pr.URL),
			state: chain.ProviderStandby, since: now, idOK: pr.ChainIDChecked || opts.ChainID == nil}
		if ps, ok := pr.Client.(Pusher); ok && ps.Push() {
			m.push = ps
		}
		if pr.Rate > 0 {
			m.limit = rate.NewLimiter(rate.Limit(pr.Rate), max(1, int(pr.Rate)))
		}
		p.members = append(p.members, m)
	}
	return p
}

// A call's method, as the errors name it.
const (
	mChainID = "eth_chainId"
	mHead    = "eth_blockNumber"
	mBlock   = "eth_getBlockByNumber"
	mLogs    = "eth_getLogs"
	mCall    = "eth_call"
	mReceipt = "eth_getTransactionReceipt"
)

// errDisagree is a provider failing the cross-check.
var errDisagree = errors.New("the provider is on another branch")

// order returns the members to try for a call needing block need (0: none), best
// first, how many of them are not failing, the members whose head was last read
// below need, and the error to return when none is left. Members are healthy ones
// in the configured order, lagging ones, then failing ones.
func (p *Pool) order(method string, need uint64, now time.Time) ([]*member, int, []*member, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var healthy, behind, failing, shorts, withoutLogs []*member
	var wait time.Duration
	if need > 0 && !slices.ContainsFunc(p.members, func(m *member) bool { return m.head >= need && !m.wrongChain && !m.disagree }) {
		// No provider has reported the block: it is not on the chain (a
		// reorganisation shortened it), and the providers' answer says so.
		need = 0
	}
	limited, noLogs, short, other, fix := 0, 0, 0, 0, 0
	fixErr := ""
	for _, m := range p.members {
		switch {
		case m.wrongChain:
			other++
		case m.operator && now.Before(m.operatorRetry):
			fix++ // past operatorRetry it has a second chance, in its turn
			fixErr = m.name + ": " + m.lastErr
		case method == mLogs && m.noLogs && now.Before(m.noLogsRetry):
			noLogs++ // past noLogsRetry it has a second chance, in its turn
			withoutLogs = append(withoutLogs, m)
		case now.Before(m.coolUntil) || method == mLogs && now.Before(m.logsCoolUntil):
			limited++
			until := m.coolUntil
			if method == mLogs && m.logsCoolUntil.After(until) {
				until = m.logsCoolUntil
			}
			if w := until.Sub(now); wait == 0 || w < wait {
				wait = w
			}
		case m.disagree:
			other++
		case need > 0 && m.head < need:
			short++
			if m.failures == 0 {
				shorts = append(shorts, m)
			}
		case m.failures > 0 || method == mLogs && now.Before(m.logsRetryAt):
			failing = append(failing, m)
		case m.lagging || m.behindHead:
			behind = append(behind, m)
		default:
			healthy = append(healthy, m)
		}
	}
	out := slices.Concat(healthy, behind, failing)
	if len(out) > 0 {
		return out, len(healthy) + len(behind), shorts, nil
	}
	if noLogs == len(p.members) {
		// No provider serves eth_getLogs: ask them anyway rather than refuse
		// without a call, so a rate limit that ends, or a provider that enables
		// the method, is noticed at the scanner's next attempt (it asks once per
		// its longest backoff then); a success clears the mark.
		return withoutLogs, len(withoutLogs), shorts, nil
	}
	switch {
	case fix > 0 && fix+other == len(p.members):
		return nil, 0, shorts, &rpc.Error{Kind: rpc.KindOperator, Method: method,
			Message: "every provider needs its operator (" + fixErr + ")"}
	case limited > 0:
		return nil, 0, shorts, &rpc.Error{Kind: rpc.KindRateLimit, Method: method, RetryAfter: wait,
			Message: fmt.Sprintf("every provider asked to wait (%d rate-limited)", limited)}
	case short > 0:
		return nil, 0, shorts, &rpc.Error{Kind: rpc.KindNotReady, Method: method, Message: "no provider has reached block " + strconv.FormatUint(need, 10) + " yet"}
	default:
		return nil, 0, shorts, &rpc.Error{Kind: rpc.KindRPC, Method: method, Message: "every provider is on another chain or branch than the blocks read so far"}
	}
}

// do runs call on the first member that serves it: see the package comment.
func do[T any](ctx context.Context, p *Pool, method string, need uint64, call func(context.Context, *member) (T, error)) (T, error) {
	p.lastUse.Store(time.Now().UnixNano())
	var zero T
	var last error
	// Each failed call is counted once: the one returned by the caller, the
	// others (answered by failing over) here.
	var kinds []string
	defer func() {
		if len(kinds) > 0 && last != nil && rpc.KindOf(last) == kinds[len(kinds)-1] {
			kinds = kinds[:len(kinds)-1]
		}
		for _, k := range kinds {
			p.countError(k)
		}
	}()
	tried := map[*member]bool{}
	reread := false
	for {
		now := time.Now()
		cands, preferred, shorts, noneErr := p.order(method, need, now)
		var capped *member
		progressed := false
		for i, m := range cands {
			if tried[m] {
				continue
			}
			if i >= preferred && !reread && len(shorts) > 0 {
				// A failing provider is asked only once the healthy ones whose
				// head was below the block have been read again.
				break
			}
			if m.limit != nil && !m.limit.AllowN(now, 1) {
				if capped == nil {
					capped = m
				}
				continue
			}
			tried[m] = true
			progressed = true
			if err := p.check(ctx, m); err != nil {
				last = err
				if ctx.Err() != nil {
					return zero, err
				}
				continue
			}
			v, err := call(ctx, m)
			if err == nil {
				p.succeeded(m, method)
				last = nil
				return v, nil
			}
			if ctx.Err() != nil {
				return zero, err
			}
			if k := rpc.KindOf(err); k != "" {
				kinds = append(kinds, k)
			}
			last = err
			if !p.failed(m, method, err) {
				return zero, err
			}
			break // states changed: order again
		}
		if progressed {
			continue
		}
		if !reread && len(shorts) > 0 {
			// Those whose head was below the block when last read may have it by
			// now: read their heads once (a head read in the background may not
			// have finished).
			reread = true
			for _, m := range shorts {
				if m.limit != nil && !m.limit.AllowN(time.Now(), 1) {
					continue
				}
				h, err := m.c.BlockNumber(ctx)
				if err != nil {
					last = err
					p.failed(m, mHead, err)
					continue
				}
				p.setHead(m, h)
				if h >= need {
					break
				}
			}
			continue
		}
		if capped != nil {
			// Our own cap, and no other provider free: wait for its next slot.
			r := capped.limit.Reserve()
			t := time.NewTimer(r.Delay())
			select {
			case <-ctx.Done():
				t.Stop()
				r.Cancel()
				return zero, ctx.Err()
			case <-t.C:
			}
			tried[capped] = true
			if err := p.check(ctx, capped); err != nil {
				return zero, err
			}
			v, err := call(ctx, capped)
			if err == nil {
				p.succeeded(capped, method)
				last = nil
				return v, nil
			}
			p.failed(capped, method, err)
			last = err
			return zero, err
		}
		if noneErr != nil && (last == nil || rpc.KindOf(noneErr) == rpc.KindRefused) {
			last = noneErr
			return zero, noneErr
		}
		return zero, last
	}
}

// countError counts a failed call the caller does not see (see ErrorObserver).
func (p *Pool) countError(kind string) {
	if o, ok := p.opts.Observer.(ErrorObserver); ok {
		o.ChainRPCError(p.opts.Network, kind)
	}
}

// succeeded records a member's answer; a switch of the active provider is logged.
func (p *Pool) succeeded(m *member, method string) {
	p.mu.Lock()
	if m.failures > 0 {
		p.log.Info("chain provider answers again", "provider", m.name, "method", method)
	}
	if m.operator {
		m.operator = false
		p.log.Info("chain provider serves the watcher again; back in the rotation", "provider", m.name, "method", method)
	}
	m.failures = 0
	if method == mLogs || !time.Now().Before(m.logsRetryAt) {
		m.lastErr = "" // an eth_getLogs failure still waited out stays shown
	}
	m.limits = 0
	if method == mLogs {
		m.logsLimited = 0
		if m.logsFailed > 0 {
			p.log.Info("chain provider serves eth_getLogs again", "provider", m.name)
		}
		m.logsFailed, m.logsRetryAt = 0, time.Time{}
		if m.noLogs {
			m.noLogs = false
			p.log.Info("chain provider serves eth_getLogs again; back in its rotation", "provider", m.name)
		}
	} else {
		m.otherOK = true
	}
	if method == mHead {
		// The provider answering the head is the one the scanner follows.
		p.switchLocked(m)
	}
	p.updateLocked(time.Now())
	p.mu.Unlock()
	p.report()
}

func (p *Pool) switchLocked(m *member) {
	if p.active == m.i {
		return
	}
	if p.active >= 0 {
		from := p.members[p.active]
		p.log.Warn("chain watcher switched provider", "from", from.name, "to", m.name, "from_state", from.state, "reason", from.lastErr)
	} else if len(p.members) > 1 {
		p.log.Info("chain watcher reads through provider", "provider", m.name)
	}
	p.active = m.i
}

// failed records a member's failure and reports whether another provider may
// answer the call instead (false: the answer is the scanner's to handle, e.g. a
// range refusal that sizes its requests).
func (p *Pool) failed(m *member, method string, err error) bool {
	kind := rpc.KindOf(err)
	now := time.Now()
	p.mu.Lock()
	defer func() {
		p.updateLocked(now)
		p.mu.Unlock()
		p.report()
	}()
	if m.disagree || m.wrongChain {
		return true // the cross-check's verdict, recorded already
	}
	if rpc.NotReady(kind) {
		// Transient on this node (behind its head, starting, a backend behind a
		// load balancer): another may have it.
		return true
	}
	switch kind {
	case rpc.KindRange, rpc.KindResults, rpc.KindUnsupported, rpc.KindReverted:
		// About the request, not the provider.
		return false
	case rpc.KindOperator:
		// No wait ends it: out of the rotation, and the operator is told once.
		m.operatorRetry, m.lastErr = now.Add(p.opts.OperatorRetry), "needs its operator: "+err.Error()
		if !m.operator {
			m.operator = true
			p.log.Error("chain provider refuses the watcher until its operator acts (a bad or revoked key, an exhausted quota or plan, a retired endpoint, a method or history outside the plan); it is out of the rotation: fix its key, plan or URL in CHAIN_RPC_"+
				strings.ToUpper(p.opts.Network)+", or replace it",
				"provider", m.name, "method", method, "error", err.Error(), "retry_in", p.opts.OperatorRetry.String())
		}
		return true
	case rpc.KindRefused:
		if method == mLogs {
			p.noLogsLocked(m, err)
			return true
		}
	case rpc.KindRateLimit:
		wait := rpc.RetryAfterOf(err)
		if method == mLogs && m.noLogs {
			p.noLogsLocked(m, err) // its second chance: still no
			return true
		}
		if method == mLogs && m.otherOK {
			// Only eth_getLogs is refused while the rest answers: bsc-dataseed's
			// disabled method says "limit exceeded". Only eth_getLogs waits here.
			m.logsLimited++
			if m.logsLimited >= p.opts.NoLogsAfter {
				p.noLogsLocked(m, err)
				return true
			}
			m.logsCoolUntil, m.lastErr = now.Add(max(wait, time.Second)), err.Error()
			p.log.Warn("chain provider rate-limits eth_getLogs; other providers read the logs until its wait is over", "provider", m.name,
				"wait", max(wait, time.Second).String(), "error", err.Error())
			return true
		}
		m.otherOK = false
		m.limits++
		if wait <= 0 {
			// No hint: a second, as the scanner itself waits at least; doubling
			// while other providers can answer meanwhile.
			wait = time.Second
			if len(p.members) > 1 {
				wait = min(time.Second<<min(m.limits-1, 6), p.opts.MaxBackoff)
			}
		}
		m.coolUntil, m.lastErr = now.Add(wait), err.Error()
		p.log.Warn("chain provider rate-limits the watcher; skipped until its wait is over", "provider", m.name, "wait", wait.String(), "error", err.Error())
		return true
	}
	if method == mLogs {
		// Only eth_getLogs failed: the provider still answers the rest, and is
		// asked for logs after a wait that doubles while they keep failing.
		m.logsFailed++
		wait := min(time.Second<<min(m.logsFailed-1, 6), p.opts.MaxBackoff)
		m.logsRetryAt, m.lastErr = now.Add(wait), err.Error()
		if m.logsFailed == 1 {
			p.log.Warn("chain provider fails eth_getLogs for a reason it does not name; other providers read the logs while it waits", "provider", m.name, "error", err.Error())
		}
		return true
	}
	m.otherOK = false
	m.failures++
	m.agreed = false
	m.lastErr = err.Error()
	m.retryAt = now.Add(min(time.Second<<min(m.failures-1, 6), p.opts.MaxBackoff))
	if m.failures == 1 {
		p.log.Warn("chain provider failed; trying the next", "provider", m.name, "error", err.Error())
	}
	return true
}

func (p *Pool) noLogsLocked(m *member, err error) {
	m.noLogsRetry = time.Now().Add(p.opts.NoLogsRetry)
	if m.noLogs {
		return
	}
	m.noLogs, m.lastErr = true, "does not serve eth_getLogs: "+err.Error()
	p.log.Error("chain provider does not serve eth_getLogs; it is out of the rotation for it (the watcher needs a provider that serves it)",
		"provider", m.name, "error", err.Error())
}

// ChainID returns the first usable provider's eth_chainId (app checks every
// provider's own at start).
func (p *Pool) ChainID(ctx context.Context) (*big.Int, error) {
	return do(ctx, p, mChainID, 0, func(ctx context.Context, m *member) (*big.Int, error) { return m.c.ChainID(ctx) })
}

// BlockNumber returns the head of the first usable provider whose head does not
// lag; the other providers' heads are read in the background. A head pushed since
// the last read by a provider in good standing is returned without a call (see
// pushedHead).
func (p *Pool) BlockNumber(ctx context.Context) (uint64, error) {
	if h, by := p.pushedHead(); by != nil {
		// Pushed since the last read: the head costs no call.
		p.lastUse.Store(time.Now().UnixNano())
		p.refresh(by)
		return h, nil
	}
	var answered *member
	head, err := do(ctx, p, mHead, 0, func(ctx context.Context, m *member) (uint64, error) {
		h, err := m.c.BlockNumber(ctx)
		if err != nil {
			return 0, err
		}
		if err := p.judgeHead(ctx, m, h); err != nil {
			return 0, err
		}
		p.setHead(m, h)
		if err := p.check(ctx, m); err != nil {
			return 0, err
		}
		if p.behind(m) {
			// Behind the others: the next provider answers for the head.
			return 0, &rpc.Error{Kind: rpc.KindNotReady, Method: mHead, Message: fmt.Sprintf("head %d lags the best known head", h)}
		}
		answered = m
		return h, nil
	})
	p.refresh(answered)
	return head, err
}

// BlockByNumber returns block number from a provider whose head has reached it,
// or, without a call, from the headers pushed lately when they link it to the
// newest pushed head (see pushedBlock).
func (p *Pool) BlockByNumber(ctx context.Context, number uint64) (*rpc.Block, error) {
	if b := p.pushedBlock(number); b != nil {
		p.lastUse.Store(time.Now().UnixNano())
		p.remember(b)
		return b, nil
	}
	b, err := do(ctx, p, mBlock, number, func(ctx context.Context, m *member) (*rpc.Block, error) {
		b, err := m.c.BlockByNumber(ctx, number)
		p.mu.Lock()
		head, alone := m.head, p.usableLocked() <= 1
		p.mu.Unlock()
		for try := 1; err == nil && b == nil && number <= head && alone && try < sameAgain; try++ {
			// Alone, the provider is asked again at once: a load balancer sends
			// each call to one of its backends, and another may have the block.
			p.countError(rpc.KindMissingBlock)
			b, err = m.c.BlockByNumber(ctx, number)
		}
		if err != nil || b != nil {
			return b, err
		}
		if number <= head {
			// Its head was at or above the block: the backend that answered is
			// behind, and "no block" says nothing of the chain.
			return nil, &rpc.Error{Kind: rpc.KindMissingBlock, Method: mBlock,
				Message: fmt.Sprintf("no block %d although its head is %d: a backend behind, not a reorganisation", number, head)}
		}
		return nil, nil
	})
	if err == nil {
		p.remember(b)
	}
	return b, err
}

// sameAgain is how many times in a row a provider alone is asked for a block it
// answered null for although its head is at or above it.
const sameAgain = 3

// usableLocked counts the providers that may answer a call: on the network's
// chain, not waiting for their operator.
func (p *Pool) usableLocked() int {
	n := 0
	for _, m := range p.members {
		if !m.wrongChain && !m.operator {
			n++
		}
	}
	return n
}

// CachedBlock returns block n when the headers pushed lately link it to the
// newest pushed head (see pushedBlock), without a call; nil otherwise. The
// scanner reads a block's logsBloom from it where it costs nothing.
func (p *Pool) CachedBlock(n uint64) *rpc.Block { return p.pushedBlock(n) }

// Finalized returns the first usable provider's finalized block.
func (p *Pool) Finalized(ctx context.Context) (*rpc.Block, error) {
	return do(ctx, p, mBlock, 0, func(ctx context.Context, m *member) (*rpc.Block, error) { return m.c.Finalized(ctx) })
}

// Logs returns the logs of blocks from..to from a provider that serves eth_getLogs
// and whose head has reached to. A provider's range refusal is a hint, answered
// here (see logsOn): the caller sees the whole range served, or the provider's
// failure. When no provider serves eth_getLogs the error is of kind refused: the
// rule that makes a run of rate limits a method not served lives here alone.
func (p *Pool) Logs(ctx context.Context, from, to uint64, contracts []common.Address, topic common.Hash) ([]rpc.Log, error) {
	logs, err := do(ctx, p, mLogs, to, func(ctx context.Context, m *member) ([]rpc.Log, error) {
		return p.logsOn(ctx, m, from, to, contracts, topic)
	})
	if err != nil && rpc.KindOf(err) == rpc.KindRateLimit && p.noneServesLogs() {
		return nil, &rpc.Error{Kind: rpc.KindRefused, Method: mLogs, Message: "no provider serves eth_getLogs: " + err.Error()}
	}
	return logs, err
}

// noneServesLogs reports whether every provider is out of eth_getLogs' rotation.
func (p *Pool) noneServesLogs() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.members {
		if !m.noLogs && !m.wrongChain {
			return false
		}
	}
	return true
}

// logsOn asks m for the logs of from..to. Its text only suggests; its behaviour
// confirms:
//
//   - a request above the provider's own head (read again) or above every
//     provider's is the provider behind, not a cap: not_ready, and another
//     provider is asked (its head, as read, keeps it from this block meanwhile);
//   - otherwise a range refusal names a cap (or none: half the span), and the
//     range is asked again in pieces of that size; the cap is believed (kept for
//     m alone, for CapForget) once a piece is served. Refused again, the piece
//     halves; refused on one block, it was no cap: m failed, and another
//     provider is asked.
//
// So a range refusal never reaches the caller from a pool, and a provider's
// words never shrink another provider's requests.
func (p *Pool) logsOn(ctx context.Context, m *member, from, to uint64, contracts []common.Address, topic common.Hash) ([]rpc.Log, error) {
	if c := p.capOf(m); c > 0 && to-from+1 > c {
		return p.pieces(ctx, m, from, to, c, false, contracts, topic)
	}
	logs, err := m.c.Logs(ctx, from, to, contracts, topic)
	switch rpc.KindOf(err) {
	case rpc.KindNotReady:
		p.mu.Lock()
		if m.head >= to {
			m.head = to - 1 // behind for this block, until its head is read again
		}
		p.mu.Unlock()
		return nil, err
	case rpc.KindRange:
	default:
		return logs, err
	}
	if behind := p.behindLogs(ctx, m, to, err); behind != nil {
		return nil, behind
	}
	p.countError(rpc.KindRange)
	span := to - from + 1
	c := rpc.LimitOf(err)
	if c < 1 || c >= span {
		c = span / 2
	}
	if c < 1 {
		return nil, notACap(err)
	}
	return p.pieces(ctx, m, from, to, c, true, contracts, topic)
}

// behindLogs reads m's head again after a range refusal of a request up to to:
// an error of kind not_ready when to is above it, or above every provider's head.
func (p *Pool) behindLogs(ctx context.Context, m *member, to uint64, refusal error) error {
	head, err := m.c.BlockNumber(ctx)
	if err == nil {
		p.setHead(m, head)
	}
	p.mu.Lock()
	if err != nil {
		head = m.head
	}
	best := p.best
	if to > head && m.head >= to {
		m.head = to - 1
	}
	p.mu.Unlock()
	if to <= head && to <= best {
		return nil
	}
	return &rpc.Error{Kind: rpc.KindNotReady, Method: mLogs,
		Message: fmt.Sprintf("behind its head (head %d, asked up to block %d), not a cap: %s", head, to, refusal.Error())}
}

// pieces asks m for from..to in pieces of c blocks; hint: c comes from a refusal
// and is believed once a piece is served.
func (p *Pool) pieces(ctx context.Context, m *member, from, to, c uint64, hint bool, contracts []common.Address, topic common.Hash) ([]rpc.Log, error) {
	var out []rpc.Log
	for lo := from; lo <= to; {
		hi := min(to, lo+c-1)
		logs, err := m.c.Logs(ctx, lo, hi, contracts, topic)
		if rpc.KindOf(err) == rpc.KindRange {
			if hi == lo {
				// Refused on one block: what looked like a cap was not one (a
				// backend behind, a refusal in a cap's words): nothing is learnt.
				p.mu.Lock()
				m.logsCap = 0
				p.mu.Unlock()
				return nil, notACap(err)
			}
			p.countError(rpc.KindRange)
			next := rpc.LimitOf(err)
			if next < 1 || next >= hi-lo+1 {
				next = (hi - lo + 1) / 2
			}
			c, hint = next, true
			continue
		}
		if err != nil {
			return nil, err
		}
		if hint {
			hint = false
			p.setCap(m, c)
		}
		out = append(out, logs...)
		lo = hi + 1
	}
	return out, nil
}

// notACap is a range refusal of a single block: no span is the cause.
func notACap(err error) error {
	return &rpc.Error{Kind: rpc.KindRPC, Method: mLogs, Message: "refused for its range even on one block, so no cap: " + err.Error()}
}

// capOf returns m's believed range cap (0: none, or forgotten).
func (p *Pool) capOf(m *member) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.logsCap > 0 && time.Since(m.capAt) > p.opts.CapForget {
		p.log.Info("chain provider's eth_getLogs range cap forgotten; a full request probes it again", "provider", m.name, "max_blocks", m.logsCap)
		m.logsCap = 0
	}
	return m.logsCap
}

// setCap believes m's range cap of c blocks (a request of c blocks was served).
func (p *Pool) setCap(m *member, c uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.logsCap != c {
		p.log.Info("chain provider caps eth_getLogs' block range; its requests are split", "provider", m.name, "max_blocks", c)
	}
	m.logsCap, m.capAt = c, time.Now()
}

// Call runs eth_call (data to contract to, at block) on a provider whose head has
// reached block, with the failover of every other call: the sanctions oracle reads
// its answer through the network's providers. A revert is about the call and is
// returned without asking another provider; so is a provider's client that does
// not run eth_call (an error of kind unsupported).
func (p *Pool) Call(ctx context.Context, to common.Address, data []byte, block uint64) ([]byte, error) {
	return do(ctx, p, mCall, block, func(ctx context.Context, m *member) ([]byte, error) {
		return m.c.Call(ctx, to, data, block)
	})
}

// Receipt returns txHash's receipt from the first provider that knows the
// transaction. A provider answering that it does not know it may be a backend
// behind, so the next one is asked; nil when every provider that answered said
// so, and the last failure when none answered.
func (p *Pool) Receipt(ctx context.Context, txHash common.Hash) (*rpc.Receipt, error) {
	unknown := false
	r, err := do(ctx, p, mReceipt, 0, func(ctx context.Context, m *member) (*rpc.Receipt, error) {
		r, err := m.c.Receipt(ctx, txHash)
		if err == nil && r == nil {
			unknown = true
			return nil, errNoReceipt
		}
		return r, err
	})
	if err != nil && unknown {
		return nil, nil
	}
	return r, err
}

// errNoReceipt is a provider that does not know a transaction: not its fault
// (another may be further ahead), so the pool asks the next one.
var errNoReceipt = &rpc.Error{Kind: rpc.KindNotReady, Method: mReceipt, Message: "the provider does not know the transaction"}
