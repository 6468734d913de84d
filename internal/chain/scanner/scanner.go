// Package scanner is the deposit watcher of one network: it follows the chain's
// head through the node's JSON-RPC (package chain/rpc: eth_blockNumber, eth_getLogs,
// eth_getBlockByNumber), hands the Transfer logs of the configured token to deposit
// addresses to a Sink in bounded batches, raises confirmations, and re-checks that a
// deposit's block is still canonical before it confirms. Where the node answers
// the "finalized" block tag, a deposit also waits until its block is final.
//
// # Sizing eth_getLogs
//
// Providers cap a request's block range (often 5,000) and its results (10,000
// logs), and USDT carries 50–90 transfers a block. Each request's span is sized
// from the density the previous one returned, aiming at half the result cap; a
// range or result refusal teaches the cap (from the node's message when it names
// it) and the request is retried at once at a size that fits. Rate limits are
// never read as a cap.
//
// # Failures nobody names
//
// A provider may refuse a wide eth_getLogs in words no rule knows (an HTTP 400, a
// proxy's error page, a generic JSON-RPC error) or simply time out on it. Such a
// failure (rpc.KindRPC, KindHTTP, KindDecode, KindTimeout) on a request wider than
// one block halves the span and retries at once, so a backlog is still read; the
// smaller span becomes a ceiling the scanner remembers. After 32 requests served
// at the ceiling one request probes twice the ceiling: served, the ceiling is
// dropped (the failure was passing); refused, the ceiling stays and the next probe
// waits twice as many requests (at most 1,024). When even one block fails, the span
// was not the cause: the ceiling learnt in that sequence is forgotten, and the
// failure is an error naming the block (log ERROR, partnerd_chain_rpc_errors_total)
// retried with backoff, each retry asking that block alone (one call, not the
// halvings again) until it is served. No failing request is repeated without a
// wait.
//
// # Waits and refusals
//
// Failures back off from the poll interval, doubling to MaxBackoff. A rate limit
// naming its wait (Retry-After, or a body such as TronGrid's "suspended for 30s",
// read by package rpc into Error.RetryAfter) is honoured: no call before it ends.
// A provider that refuses eth_getLogs, or answers every eth_getLogs with a rate
// limit while its other methods answer (bsc-dataseed's -32005 "limit exceeded":
// the method is disabled there; the provider pool decides, after 5 such answers
// in a row, and answers refused), does not
// serve eth_getLogs: one ERROR line, the refused error kind on every answer, and
// the method is tried again at MaxBackoff, so a rate limit that ends, or a
// provider that enables the method, still recovers.
//
// # Answers that succeed and are wrong
//
// Providers put several backends behind one URL, and one that lags or syncs
// answers with success: an empty list of logs for blocks it has not reached, no
// block for a block it has not reached, a head of 0. No such answer may cost a
// deposit, so a successful answer is checked against what is already known:
//
//   - a head below the cursor by more than a reorganisation goes (twice the
//     confirmations) is a node behind, an error of kind behind: nothing is
//     scanned, rewound or dropped (the provider pool says so first, per
//     provider, and asks eth_syncing);
//   - "no block" for the cursor's block, a deposit's block or a block to record
//     is a node behind (kind missing_block), asked again next poll: a
//     reorganisation is believed only from a block actually returned whose hash
//     differs from the one recorded, and a rewind goes back from the cursor,
//     never from a head;
//   - an eth_getLogs answer vouches for every block up to the highest one it has
//     a log of (a node holds a block's logs whole, and every block below one it
//     holds). Above that, the blocks VerifyDepth below the head are believed when
//     the request ended there, else asked again alone; nearer the head, a block
//     whose header is at hand (the range's last block, or a pushed header) and
//     whose logsBloom rules the token's Transfer out is believed, and the others
//     are asked again alone once VerifyDepth deep (recheckDeep; java-tron's
//     headers carry no bloom), as are the blocks below the cursor once after
//     each start, so a transfer a lagging backend left out is recorded late
//     (kind missing_logs, a WARN), never lost.
//
// Each such answer is counted in partnerd_chain_rpc_errors_total by its kind, and
// not-ready answers are asked again every poll, without a growing backoff, so
// the watcher reads on as soon as the provider catches up.
//
// # Finality
//
// The rule is "tag" (a deposit also waits for the node's finalized block),
// "confirmations" (the count alone) or, while the tag's answer is missing,
// "unknown": nothing confirms on the network then (deposits keep their rising
// confirmations). The state is reported (partnerd_chain_finality_state) at start
// and on every change, and logged: WARN for unknown or the count, INFO when the
// tag answers again. Once the node has served the finalized block, or when
// CHAIN_FINALITY_<NETWORK> is "tag", no answer downgrades the rule: a failure to
// read the block ("finalized block not found" while a node restarts, a timeout, an
// HTTP error, even "not supported") makes it unknown until the node answers again
// (asked every poll while a deposit waits for it, every FinalityRecheck
// otherwise); a rate limit there backs the poll off and changes nothing. Only a
// node that has never served the tag and says it does not support it confirms by
// count, and it is asked again every FinalityRecheck, so a node that gains the tag
// gets the tag rule. "confirmations" pins the count and never asks.
//
// # One scanner per network
//
// Every instance runs a Scanner for every configured network, but only the holder of
// the network's lock scans: on PostgreSQL a session-level advisory lock held on a
// dedicated connection for as long as the scanner runs (Locker). A long-running
// loop with its own backoff fits a lock better than a River periodic job (whose
// runs would need their own overlap guard and would add the job poll interval to
// the detection delay). If the holder dies, its connection closes, PostgreSQL
// releases the lock, and another instance takes over within a poll interval. As a
// second guard the cursor is moved with a compare-and-set in the batch's database
// transaction, so even two scanners could not record one batch twice. SQLite
// serves a single instance; its lock is a process-local one.
package scanner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"partnerd/internal/chain"
	"partnerd/internal/chain/rpc"
)

// Client is the node as the scanner reads it: one rpc.Client, or a pool of
// providers (package chain/providers).
type Client = rpc.Reader

// Sink records what the scanner finds (the deposits service).
type Sink interface {
	// Cursor returns the network's cursor, or nil before the first batch.
	Cursor(ctx context.Context, network string) (*chain.Cursor, error)
	// Watching returns which of addrs (in the network's form) are deposit addresses.
	Watching(ctx context.Context, network string, addrs []string) (map[string]bool, error)
	// Record stores the batch's transfers and moves the cursor from prev (nil: none
	// yet) to next, in one database transaction. It fails, recording nothing, when
	// the cursor is no longer prev.
	Record(ctx context.Context, network string, prev *chain.Cursor, next chain.Cursor, transfers []chain.Transfer) error
	// Pending returns the network's detected deposits that are not final.
	Pending(ctx context.Context, network string) ([]chain.Pending, error)
	// Confirm records that p now has confirmations confirmations (its block was just
	// checked to be canonical); at the network's requirement, and once final (its
	// block at or below the node's finalized block, where the node has one), it
	// confirms.
	Confirm(ctx context.Context, p chain.Pending, confirmations int, final bool) error
	// Drop undoes p: its block is no longer canonical.
	Drop(ctx context.Context, p chain.Pending) error
}

// Lock is a held scanner lock.
type Lock interface {
	// Alive reports an error when the lock may have been lost (its connection died).
	Alive(ctx context.Context) error
	Release()
}

// Locker hands out the per-network scanner lock.
type Locker interface {
	// TryLock takes the lock named name if it is free; ok is false when another
	// instance holds it.
	TryLock(ctx context.Context, name string) (l Lock, ok bool, err error)
}

// Metrics hears the scanner's progress.
type Metrics interface {
	ChainHead(network string, block uint64)
	ChainScanned(network string, block uint64)
	ChainFinalized(network string, block uint64)
	// ChainFinality reports the network's finality state (chain.Finality*).
	ChainFinality(network, state string)
	// ChainRPCError counts a failed call by its kind (rpc.Kind*).
	ChainRPCError(network, kind string)
}

// Config configures one network's scanner.
type Config struct {
	Network string
	// Tokens are the network's token contracts.
	Tokens []chain.Token
	// Confirmations is the network's requirement; a first start begins at head −
	// Confirmations unless StartBlock is set.
	Confirmations int
	StartBlock    *uint64
	// ChainID is the chain id the node must report (CHAIN_ID_<NETWORK>); nil: not checked.
	ChainID *big.Int
	// PollInterval is the wait between polls once caught up (CHAIN_POLL_INTERVAL).
	PollInterval time.Duration
	// MaxSpan bounds the new blocks of one eth_getLogs (default 4999: with the
	// cursor's block, 5,000 blocks, a common provider cap); a node's range refusal
	// lowers it.
	MaxSpan uint64
	// FirstSpan is the span of the first request, before any density is known
	// (default 100: 8,000 logs at 80 transfers a block, under a 10,000 cap).
	FirstSpan uint64
	// TargetLogs is the logs one eth_getLogs aims at (default 5000, half the common
	// 10,000 cap); a node's result refusal naming its cap sets it to half of that.
	TargetLogs int
	// MaxBackoff caps the wait after RPC errors (default 20 poll intervals, from 1
	// second to 1 minute: a watcher polling fast recovers fast). A wait the node
	// names is honoured beyond it, up to 10 minutes.
	MaxBackoff time.Duration
	// FinalityRecheck is how often a node that said it has no finalized block, or
	// whose finalized block is unknown while no deposit waits for it, is asked
	// again (default as MaxBackoff).
	FinalityRecheck time.Duration
	// Wake, when set, ends a caught-up scanner's wait for its next poll at once (a
	// provider pushing new heads); every block is still read in order by eth_getLogs.
	Wake <-chan struct{}
	// Finality pins the finality rule (CHAIN_FINALITY_<NETWORK>): "tag" (the
	// node's finalized block), "confirmations" (the count alone); "" asks the node.
	Finality string
	// LagWarning is the lag in blocks beyond which a warning is logged (default 300).
	LagWarning uint64
	// VerifyDepth is how far below the head an answer without logs is believed
	// whatever asked for it (default twice Confirmations, at least 12): nearer
	// the head, a backend behind its load balancer answers an empty list for
	// blocks it has not reached, so the headers are asked, or the blocks again
	// once this deep (see "Answers that succeed and are wrong").
	VerifyDepth uint64
	// Tracing gives each scan step (Poll) a span, "scan <network>", with the
	// blocks it read and the transfers it found; the calls to the node and the
	// statements it makes are its children, so a slow or failing step shows
	// where its time went. nil: the no-op provider (traces off).
	Tracing trace.TracerProvider
}

const (
	// maxHonoured bounds a wait the node names (a garbled hint never parks the
	// watcher for hours).
	maxHonoured = 10 * time.Minute
	// probeAfter is how many requests served at a learnt ceiling precede the first
	// probe of twice the ceiling; maxProbeAfter bounds its doubling.
	probeAfter, maxProbeAfter = 32, 1024
)

// Scanner watches one network.
type Scanner struct {
	cfg     Config
	client  Client
	sink    Sink
	locker  Locker
	metrics Metrics
	log     *slog.Logger
	tracer  trace.Tracer
	byAddr  map[common.Address]chain.Token

	// span is the next eth_getLogs' block count; density the logs per block the
	// last one returned (−1: unknown); maxSpan the node's range cap.
	span    uint64
	maxSpan uint64
	target  int
	density float64
	// ceiling is the span learnt from failures nobody named (0: none); served
	// counts the requests served at it since; probeAfter is how many it takes
	// before a probe; probing is set while a probe is in flight.
	ceiling    uint64
	served     int
	probeAfter int
	probing    bool
	// failing is the block whose eth_getLogs failed alone for a reason nobody
	// names (nil: none): the next attempt asks it alone.
	failing *uint64
	// noLogs is set once eth_getLogs is refused (its ERROR is said once); the
	// pool decides when a run of rate limits means the method is not served.
	noLogs bool
	idOK   bool
	// finality is the rule in force (chain.Finality*); servedTag is set once the
	// node has answered the finalized block; askedAt is when it was last asked
	// (the metric is refreshed at least once a minute); started is set once the
	// start-up line is written (changes are logged after it).
	finality  string
	servedTag bool
	askedAt   time.Time
	started   bool
	// finalErr is the last failure to read the finalized block (nil once read).
	finalErr error
	// recheck are ranges recorded as without logs near the head on a node whose
	// headers carry no bloom: asked again alone once VerifyDepth deep;
	// rechecked is set once the blocks below the cursor at start are queued.
	recheck   []span
	rechecked bool
	// behindSaid is when a node behind was last logged (zero: not behind), and
	// behindKind the kind of answer that showed it.
	behindSaid time.Time
	behindKind string
}

// span is the blocks from..to; start: queued when the scanner took the lock.
type span struct {
	from, to uint64
	start    bool
}

// New returns a scanner of cfg.Network.
func New(cfg Config, client Client, sink Sink, locker Locker, m Metrics, log *slog.Logger) *Scanner {
	if cfg.MaxSpan == 0 {
		cfg.MaxSpan = 4999
	}
	if cfg.FirstSpan == 0 {
		cfg.FirstSpan = 100
	}
	if cfg.TargetLogs <= 0 {
		cfg.TargetLogs = 5000
	}
	if cfg.LagWarning == 0 {
		cfg.LagWarning = 300
	}
	if cfg.VerifyDepth == 0 {
		cfg.VerifyDepth = max(2*uint64(max(cfg.Confirmations, 0)), 12)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 3 * time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = min(max(20*cfg.PollInterval, time.Second), time.Minute)
	}
	if cfg.FinalityRecheck <= 0 {
		cfg.FinalityRecheck = cfg.MaxBackoff
	}
	if cfg.Tracing == nil {
		cfg.Tracing = noop.NewTracerProvider()
	}
	finality := chain.FinalityUnknown
	if cfg.Finality == chain.FinalityConfirmations {
		finality = chain.FinalityConfirmations
	}
	by := map[common.Address]chain.Token{}
	for _, t := range cfg.Tokens {
		by[t.Contract] = t
	}
	return &Scanner{cfg: cfg, client: client, sink: sink, locker: locker, metrics: m,
		log: log.With("network", cfg.Network), tracer: cfg.Tracing.Tracer("partnerd/internal/chain/scanner"), byAddr: by,
		span: min(cfg.FirstSpan, cfg.MaxSpan), maxSpan: cfg.MaxSpan, target: cfg.TargetLogs, density: -1,
		probeAfter: probeAfter, finality: finality}
}

// ErrChainID is a node reporting another chain than CHAIN_ID_<NETWORK>.
var ErrChainID = errors.New("the node reports another chain id")

// CheckChainID compares the node's eth_chainId with the configured one.
func CheckChainID(ctx context.Context, c Client, want *big.Int) error {
	got, err := c.ChainID(ctx)
	if err != nil {
		return err
	}
	if got.Cmp(want) != 0 {
		return fmt.Errorf("%w: %s (0x%x), want %s (0x%x)", ErrChainID, got, got, want, want)
	}
	return nil
}

// Run scans until ctx is done. It never returns an error: RPC and database
// failures are logged, counted and retried with a growing backoff. It stops (with
// an error logged) only when the node reports another chain id.
func (s *Scanner) Run(ctx context.Context) {
	var lock Lock
	defer func() {
		if lock != nil {
			lock.Release()
		}
	}()
	backoff := s.cfg.PollInterval
	for ctx.Err() == nil {
		if lock != nil {
			if err := lock.Alive(ctx); err != nil {
				s.log.Warn("chain scanner lost its lock", "error", err.Error())
				lock.Release()
				lock = nil
			}
		}
		if lock == nil {
			l, ok, err := s.locker.TryLock(ctx, "chain-scanner/"+s.cfg.Network)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("chain scanner lock", "error", err.Error())
			}
			if !ok {
				sleep(ctx, s.cfg.PollInterval)
				continue
			}
			lock = l
			s.start(ctx)
		}
		err := s.checkChain(ctx)
		if errors.Is(err, ErrChainID) {
			s.log.Error("deposit watcher stopped: CHAIN_ID_"+upper(s.cfg.Network)+" does not match the node", "error", err.Error())
			return
		}
		more := false
		if err == nil {
			more, err = s.Poll(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			sleep(ctx, s.failed(err, &backoff))
			continue
		}
		backoff = s.cfg.PollInterval
		if !s.behindSaid.IsZero() {
			s.behindSaid, s.behindKind = time.Time{}, ""
			s.log.Info("chain node answers again; scanning")
		}
		if !more {
			s.idle(ctx)
		}
	}
}

// failed reports a failed poll (a log line, the error's kind counted) and returns
// the wait before the next one: the backoff, or the wait the node named (up to
// maxHonoured); the backoff doubles, up to MaxBackoff.
func (s *Scanner) failed(err error, backoff *time.Duration) time.Duration {
	kind := rpc.KindOf(err)
	wait := *backoff
	if ra := rpc.RetryAfterOf(err); ra > 0 {
		wait = max(min(ra, maxHonoured), s.cfg.PollInterval)
	}
	logs := methodOf(err) == "eth_getLogs"
	var single *blockError
	switch {
	case logs && kind == rpc.KindRefused:
		// eth_getLogs refused, or (the provider pool's rule, told here as a
		// refusal) only eth_getLogs rate-limited again and again: the method is
		// disabled there (bsc-dataseed's "limit exceeded"). Said once; asked
		// again at the longest backoff.
		wait = max(wait, s.cfg.MaxBackoff)
		if !s.noLogs {
			s.noLogs = true
			s.log.Error("the provider does not serve eth_getLogs: it refuses it, or answers every request for logs with a rate limit while its other methods answer (a provider with eth_getLogs is required); retrying at the longest backoff",
				"error", err.Error(), "retry_in", wait.String())
		}
	case kind == rpc.KindOperator:
		wait = max(wait, s.cfg.MaxBackoff)
		s.log.Error("no provider of the network serves the watcher until its operator acts (a key, a quota or plan, an endpoint); retrying at the longest backoff",
			"error", err.Error(), "retry_in", wait.String())
	case kind == rpc.KindRateLimit:
		wait = max(wait, time.Second)
		s.log.Warn("chain node rate-limits the watcher; backing off", "error", err.Error(), "retry_in", wait.String())
	case rpc.NotReady(kind):
		// The provider is behind (it said so, or its answer showed it): asked
		// again next poll, without a growing wait, so it is read as soon as it
		// catches up. Nothing is rewound or dropped meanwhile.
		if time.Since(s.behindSaid) >= time.Minute || s.behindKind != kind {
			// Said when it starts or changes, then once a minute while it lasts.
			s.behindSaid, s.behindKind = time.Now(), kind
			s.log.Warn("chain node is behind; nothing is believed from it until it catches up, asking again every poll", "error", err.Error())
		}
		s.metrics.ChainRPCError(s.cfg.Network, kind)
		return s.cfg.PollInterval
	case errors.As(err, &single):
		s.log.Error("eth_getLogs fails on a single block, for a reason the node does not name; retrying with backoff",
			"block", single.block, "error", err.Error(), "retry_in", wait.String())
	case kind == rpc.KindRefused:
		s.log.Error("chain node refuses a method the watcher needs", "error", err.Error(), "retry_in", wait.String())
	default:
		s.log.Warn("chain scan failed; retrying", "error", err.Error(), "retry_in", wait.String())
	}
	if kind != "" {
		s.metrics.ChainRPCError(s.cfg.Network, kind)
	}
	*backoff = min(max(*backoff, wait)*2, s.cfg.MaxBackoff)
	return wait
}

// methodOf returns the method of a failed call ("" when err is not an *rpc.Error).
func methodOf(err error) string {
	var e *rpc.Error
	if errors.As(err, &e) {
		return e.Method
	}
	return ""
}

// blockError is eth_getLogs failing on a single block for a reason the node does
// not name: the span is not the cause, so it is the operator's to see.
type blockError struct {
	block uint64
	err   error
}

func (e *blockError) Error() string {
	return fmt.Sprintf("block %d: %v", e.block, e.err)
}

func (e *blockError) Unwrap() error { return e.err }

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// checkChain checks the chain id once per scanner (a node unreachable at start-up
// is checked when it answers).
func (s *Scanner) checkChain(ctx context.Context) error {
	if s.idOK || s.cfg.ChainID == nil {
		return nil
	}
	if err := CheckChainID(ctx, s.client, s.cfg.ChainID); err != nil {
		return err
	}
	s.idOK = true
	return nil
}

// start logs the scanner's rules once it holds the lock, asking the node for its
// finalized block unless the count is pinned, and reports the finality state.
func (s *Scanner) start(ctx context.Context) {
	pin := "CHAIN_FINALITY_" + upper(s.cfg.Network)
	if s.cfg.Finality != chain.FinalityConfirmations {
		// A rate limit here leaves the state as it is; the first poll backs off.
		_, _ = s.readFinalized(ctx)
	}
	var rule string
	switch {
	case s.cfg.Finality == chain.FinalityConfirmations:
		rule = "confirmations only (" + pin + "=confirmations)"
	case s.finality == chain.FinalityTag && s.cfg.Finality == chain.FinalityTag:
		rule = "confirmations and the node's finalized block (" + pin + "=tag)"
	case s.finality == chain.FinalityTag:
		rule = "confirmations and the node's finalized block"
	case s.finality == chain.FinalityConfirmations:
		rule = "confirmations only (the node does not answer the finalized block tag)"
	case s.cfg.Finality == chain.FinalityTag:
		rule = "confirmations and the node's finalized block (" + pin + "=tag), once the node answers it (not answered: nothing confirms until it does)"
	default:
		rule = "confirmations and the node's finalized block, once the node answers it (not answered yet: nothing confirms until it does)"
	}
	attrs := []any{"confirmations", s.cfg.Confirmations, "finality", rule, "finality_state", s.finality}
	if s.finalErr != nil && s.finality != chain.FinalityConfirmations {
		attrs = append(attrs, "error", s.finalErr.Error())
	}
	if s.finality == chain.FinalityUnknown {
		s.log.Warn("chain scanner started; the node's finalized block is unknown: nothing confirms on this network until the node answers it", attrs...)
	} else {
		s.log.Info("chain scanner started", attrs...)
	}
	s.metrics.ChainFinality(s.cfg.Network, s.finality)
	s.started = true
	// Another instance may have scanned meanwhile: the blocks below the cursor
	// are asked again once deep (recheckDeep).
	s.rechecked, s.recheck = false, nil
}

// readFinalized asks the node for its finalized block and moves the finality rule
// by the answer (see the package comment). It returns nil when the node gave no
// block, and an error only for a rate limit (the poll backs off) or ctx's end:
// any other failure makes the rule unknown, never the count.
func (s *Scanner) readFinalized(ctx context.Context) (*rpc.Block, error) {
	s.askedAt = time.Now()
	b, err := s.client.Finalized(ctx)
	s.finalErr = err
	if err == nil {
		s.servedTag = true
		s.metrics.ChainFinalized(s.cfg.Network, b.Number)
		s.setFinality(chain.FinalityTag, nil)
		return b, nil
	}
	kind := rpc.KindOf(err)
	if ctx.Err() != nil || kind == rpc.KindRateLimit {
		return nil, err
	}
	if kind != "" {
		s.metrics.ChainRPCError(s.cfg.Network, kind)
	}
	asks := s.cfg.Finality == "" && !s.servedTag
	switch {
	case asks && kind == rpc.KindUnsupported:
		s.setFinality(chain.FinalityConfirmations, err)
	case asks && s.finality == chain.FinalityConfirmations:
		// A node without the tag failing a re-check: nothing has changed.
	default:
		s.setFinality(chain.FinalityUnknown, err)
	}
	return nil, nil
}

// setFinality moves the finality rule to state, reporting a change (metric, and
// after the start-up line a log line: WARN unless the tag rule is back).
func (s *Scanner) setFinality(state string, err error) {
	if state == s.finality {
		return
	}
	s.finality = state
	s.metrics.ChainFinality(s.cfg.Network, state)
	if !s.started {
		return
	}
	attrs := []any{"finality_state", state}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	switch state {
	case chain.FinalityTag:
		s.log.Info("the node answers the finalized block: deposits confirm once final", attrs...)
	case chain.FinalityConfirmations:
		s.log.Warn("the node does not answer the finalized block tag; deposits confirm by confirmations only (CHAIN_FINALITY_"+upper(s.cfg.Network)+"=tag keeps the tag rule)", attrs...)
	default:
		s.log.Warn("the node's finalized block is unknown: nothing confirms on this network until the node answers it again", attrs...)
	}
}

// idle waits for the next poll: the poll interval, or less when Wake signals a
// new head.
func (s *Scanner) idle(ctx context.Context) {
	t := time.NewTimer(s.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-s.cfg.Wake:
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Attributes of a scan step's span.
const (
	attrNetwork   = attribute.Key("chain.network")
	attrHead      = attribute.Key("chain.head_block")
	attrFromBlock = attribute.Key("chain.from_block")
	attrToBlock   = attribute.Key("chain.to_block")
	attrLogs      = attribute.Key("chain.logs")
	attrTransfers = attribute.Key("chain.transfers")
	attrErrorKind = attribute.Key("error.type")
)

// Poll runs one step: re-check and confirm pending deposits, then scan one batch.
// It reports whether blocks remain to scan (the caller polls again at once). The
// step is a span (Config.Tracing).
func (s *Scanner) Poll(ctx context.Context) (more bool, err error) {
	ctx, span := s.tracer.Start(ctx, "scan "+s.cfg.Network, trace.WithAttributes(attrNetwork.String(s.cfg.Network)))
	defer func() {
		if err != nil {
			kind := rpc.KindOf(err)
			if kind == "" {
				kind = "error"
			}
			span.SetAttributes(attrErrorKind.String(kind))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	return s.poll(ctx)
}

func (s *Scanner) poll(ctx context.Context) (more bool, err error) {
	head, err := s.client.BlockNumber(ctx)
	if err != nil {
		return false, err
	}
	trace.SpanFromContext(ctx).SetAttributes(attrHead.Int64(int64(head)))
	s.metrics.ChainHead(s.cfg.Network, head)
	cur, err := s.sink.Cursor(ctx, s.cfg.Network)
	if err != nil {
		return false, err
	}
	if cur != nil && head+s.depth() < cur.Block {
		// A head below the cursor by more than a reorganisation goes: the node
		// is behind (syncing), not the chain rewound. Nothing moves back.
		return false, &rpc.Error{Kind: rpc.KindBehind, Method: "eth_blockNumber",
			Message: fmt.Sprintf("head %d is %d blocks below the blocks scanned (%d): the node is behind or syncing", head, cur.Block-head, cur.Block)}
	}
	if cur == nil {
		if err := s.settle(ctx, head, nil, false); err != nil {
			return false, err
		}
		start := uint64(0)
		switch {
		case s.cfg.StartBlock != nil:
			start = *s.cfg.StartBlock
		case head+1 > uint64(s.cfg.Confirmations):
			start = head + 1 - uint64(s.cfg.Confirmations)
		}
		if start == 0 {
			// Nothing before genesis: begin with block 0 itself.
			return s.scan(ctx, nil, 0, head)
		}
		b, err := s.block(ctx, start-1)
		if err != nil {
			return false, err
		}
		first := chain.Cursor{Block: start - 1, Hash: b.Hash}
		if err := s.sink.Record(ctx, s.cfg.Network, nil, first, nil); err != nil {
			return false, err
		}
		s.log.Info("chain scanner cursor set", "start_block", start)
		return true, nil
	}
	var logs []rpc.Log
	to := cur.Block
	if cur.Block < head {
		// The request overlaps the cursor's block: at mainnet density its logs carry
		// the block's hash, so the cursor is re-checked without a call of its own.
		if logs, to, err = s.logs(ctx, cur.Block+1, head, true); err != nil {
			return false, err
		}
	}
	// Is the cursor's block still canonical? Block hashes chain, so if it is, so is
	// every block below it, and the pending deposits there need no check of their own.
	intact, known := false, false
	for _, lg := range logs {
		if lg.BlockNumber == cur.Block {
			intact, known = lg.BlockHash == cur.Hash, true
			break
		}
	}
	if !known {
		// A block actually returned decides: "no block" at the cursor is a node
		// behind (an error, asked again), never a reorganisation.
		b, err := s.block(ctx, cur.Block)
		if err != nil {
			return false, err
		}
		intact = b.Hash == cur.Hash
	}
	if err := s.settle(ctx, head, cur, intact); err != nil {
		return false, err
	}
	if !intact {
		// Reorganised at or below the cursor: rescan from an ancestor still
		// canonical; transfers seen before are recognised by (tx hash, log index).
		back, err := s.rewind(ctx, cur)
		if err != nil {
			return false, err
		}
		if err := s.sink.Record(ctx, s.cfg.Network, cur, back, nil); err != nil {
			return false, err
		}
		s.recheck = slices.DeleteFunc(s.recheck, func(r span) bool { return r.to > back.Block })
		s.log.Warn("chain reorganised below the cursor; rescanning", "cursor", cur.Block, "from", back.Block+1)
		return true, nil
	}
	s.metrics.ChainScanned(s.cfg.Network, cur.Block)
	if err := s.recheckDeep(ctx, cur, head); err != nil {
		return false, err
	}
	if cur.Block >= head {
		return false, nil
	}
	if lag := head - cur.Block; lag > s.cfg.LagWarning {
		s.log.Warn("chain scanner is behind", "lag_blocks", lag, "head", head, "scanned", cur.Block)
	}
	return s.record(ctx, cur, logs, cur.Block+1, to, head)
}

// block reads block n, which must exist.
func (s *Scanner) block(ctx context.Context, n uint64) (*rpc.Block, error) {
	b, err := s.client.BlockByNumber(ctx, n)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, &rpc.Error{Kind: rpc.KindMissingBlock, Method: "eth_getBlockByNumber",
			Message: fmt.Sprintf("block %d: the node has no such block yet", n)}
	}
	return b, nil
}

// ReorgDepth is the deepest reorganisation followed on a network requiring
// confirmations: twice them (at least 2). The scanner rewinds no further, and
// the provider pool (providers.Options.ReorgDepth) calls a head that went back
// further a provider behind.
func ReorgDepth(confirmations int) uint64 { return uint64(max(confirmations, 1)) * 2 }

// depth is the network's ReorgDepth.
func (s *Scanner) depth() uint64 { return ReorgDepth(s.cfg.Confirmations) }

// rewind finds the newest ancestor of the cursor at most one reorg depth back
// whose hash the node still has on its canonical chain (the walk is bounded by the
// network's confirmations, the deepest reorg the service tolerates).
func (s *Scanner) rewind(ctx context.Context, cur *chain.Cursor) (chain.Cursor, error) {
	// From the cursor, never from the head: a head read from a node behind must
	// not take the cursor further back than a reorganisation goes.
	to := uint64(0)
	if cur.Block > s.depth() {
		to = cur.Block - s.depth()
	}
	b, err := s.block(ctx, to)
	if err != nil {
		return chain.Cursor{}, err
	}
	return chain.Cursor{Block: to, Hash: b.Hash}, nil
}

// logs reads the token's Transfer logs of the blocks first..to, to at most head
// and the span sized to fit the provider's caps; with overlap the request also
// covers block first−1 (the cursor's block, re-checked by its logs' hash). A range
// or result refusal teaches the cap and the request is retried at once; a failure
// nobody names halves the span and retries (see the package comment); any other
// failure is returned.
func (s *Scanner) logs(ctx context.Context, first, head uint64, overlap bool) ([]rpc.Log, uint64, error) {
	// What this call's halvings change, restored if even one block fails.
	halved := false
	var ceiling, span uint64
	// The block that failed alone last time is asked alone first: no halving
	// again down to it, one call an attempt while it fails.
	alone := s.failing != nil && *s.failing == first
	for {
		n := s.span
		if alone {
			n, overlap = 1, false
		}
		if s.ceiling > 0 && !alone && s.served >= s.probeAfter && head-first+1 >= 2*s.ceiling && !halved {
			n, s.probing = min(2*s.ceiling, s.maxSpan), true
		}
		from, to := first, min(head, first+n-1)
		if overlap {
			from--
		}
		logs, err := s.client.Logs(ctx, from, to, s.contracts(), chain.TransferTopic)
		switch kind := rpc.KindOf(err); {
		case err == nil:
			s.failing = nil
			s.servedLogs(to - first + 1)
			n := 0
			for _, lg := range logs {
				if lg.BlockNumber >= first {
					n++
				}
			}
			s.fit(n, to-first+1)
			return logs, to, nil
		case kind == rpc.KindRange && s.span > 1:
			s.metrics.ChainRPCError(s.cfg.Network, kind)
			s.probing = false
			// A cap of L blocks admits L blocks (BNB Smart Chain's providers) or
			// to − from = L (java-tron): L − 1 new blocks after the overlap fit both.
			limit := rpc.LimitOf(err)
			if limit < 2 || limit-1 >= s.span {
				limit = s.span/2 + 1
			}
			s.maxSpan = max(1, limit-1)
			s.span = min(s.span, s.maxSpan)
			s.log.Info("the node caps eth_getLogs' block range; smaller requests", "max_span", s.maxSpan, "error", err.Error())
		case kind == rpc.KindResults && to > from:
			s.metrics.ChainRPCError(s.cfg.Network, kind)
			s.probing = false
			if limit := rpc.LimitOf(err); limit > 1 {
				s.target = max(1, int(limit/2))
			}
			if s.span == 1 {
				// One new block and the cursor's are too many: the new block alone.
				overlap = false
			}
			// The density is unknown past "more than the cap": measure it on one block.
			s.span = 1
			s.log.Info("the node caps eth_getLogs' results; smaller requests", "target_logs", s.target, "error", err.Error())
		case unnamed(kind) && to > from:
			s.metrics.ChainRPCError(s.cfg.Network, kind)
			if !halved {
				halved, ceiling, span = true, s.ceiling, s.span
			}
			if s.probing {
				// Twice the ceiling is still refused: probe less often.
				s.probing = false
				s.probeAfter = min(2*s.probeAfter, maxProbeAfter)
			}
			if to > first {
				s.ceiling = max(1, (to-first+1)/2)
				s.span = min(s.span, s.ceiling)
				s.served = 0
			} else {
				// One new block: ask for it without the cursor's block.
				overlap = false
			}
			s.log.Warn("eth_getLogs failed for a reason the node does not name; retrying on fewer blocks",
				"from", from, "to", to, "span", s.span, "error", err.Error())
		case unnamed(kind):
			if halved {
				// Even one block fails: the span was not the cause.
				s.ceiling, s.span = ceiling, span
			}
			s.failing = &first
			return nil, 0, &blockError{block: first, err: err}
		default:
			return nil, 0, err
		}
	}
}

// unnamed reports whether a failure of kind gives no reason the scanner can act on
// (no cap, no rate limit, no refusal): a wide request's size may be its cause.
func unnamed(kind string) bool {
	switch kind {
	case rpc.KindRPC, rpc.KindHTTP, rpc.KindDecode, rpc.KindTimeout:
		return true
	}
	return false
}

// servedLogs notes a served eth_getLogs of blocks new blocks: the method is served
// (a run of rate limits ends), and a request at the learnt ceiling counts towards
// the next probe, or, if it was the probe, drops the ceiling.
func (s *Scanner) servedLogs(blocks uint64) {
	if s.noLogs {
		s.noLogs = false
		s.log.Info("the provider serves eth_getLogs again")
	}
	switch {
	case s.probing:
		s.log.Info("eth_getLogs serves wider requests again; the span learnt from unnamed failures is dropped", "ceiling", s.ceiling, "served", blocks)
		s.ceiling, s.served, s.probing, s.probeAfter = 0, 0, false, probeAfter
	case s.ceiling > 0 && blocks >= s.ceiling:
		s.served++
	}
}

// fit sizes the next request from the density n logs over blocks blocks showed:
// the target's worth of blocks at that density, the span growing at most twofold
// a request (so one quiet block does not launch a huge request into a busy
// stretch), within the node's cap and the learnt ceiling. A caught-up poll
// covering fewer blocks leaves the span as it is.
func (s *Scanner) fit(n int, blocks uint64) {
	s.density = float64(n) / float64(blocks)
	limit := s.maxSpan
	if s.ceiling > 0 {
		limit = min(limit, s.ceiling)
	}
	span := limit
	if s.density > 0 {
		span = uint64(float64(s.target) / s.density)
	}
	s.span = min(max(span, 1), limit, max(s.span, 1)*2)
}

// record turns the logs of blocks from..to into transfers and records them with
// the new cursor, once verify believes them (up to the block it says).
func (s *Scanner) record(ctx context.Context, cur *chain.Cursor, logs []rpc.Log, from, to, head uint64) (bool, error) {
	logs, end, queue, err := s.verify(ctx, logs, from, to, head)
	if err != nil {
		return false, err
	}
	// The batch's last block is read after its logs, and before the deposits' own
	// blocks are compared with their logs: a reorganisation before this read makes
	// that comparison fail (and the batch is retried), one after it leaves the
	// cursor on the old branch too, which the next poll notices. So the recorded
	// cursor never vouches for a deposit on another branch.
	transfers, err := s.transfers(ctx, logs, from, to, end)
	if err != nil {
		return false, err
	}
	for i := range transfers {
		transfers[i].Confirmations = int(head - transfers[i].Block + 1)
	}
	trace.SpanFromContext(ctx).SetAttributes(attrFromBlock.Int64(int64(from)), attrToBlock.Int64(int64(to)),
		attrLogs.Int(len(logs)), attrTransfers.Int(len(transfers)))
	if err := s.sink.Record(ctx, s.cfg.Network, cur, chain.Cursor{Block: to, Hash: end.Hash}, transfers); err != nil {
		return false, err
	}
	if queue != nil {
		s.queue(*queue)
	}
	s.metrics.ChainScanned(s.cfg.Network, to)
	return to < head, nil
}

// verify decides how much of an eth_getLogs answer for blocks from..to is
// believed now, and returns the logs, the last block's header, and a range to
// ask again once deep (see "Answers that succeed and are wrong" in the package
// comment):
//
//   - every block up to the highest one the answer has a log of is believed: a
//     node holds a block's logs whole, and every block below one it holds;
//   - above it, blocks at least VerifyDepth below the head are believed when the
//     request ended there; when it did not, they are asked again alone;
//   - nearer the head, a block whose header is at hand (the range's last block,
//     read for the cursor anyway, or a header the provider pushed) and whose
//     logsBloom rules the token's Transfer out is believed; the others (a bloom
//     that says it may hold one, a header not at hand or without a bloom, as
//     java-tron's) are believed for now and returned to be asked again, alone,
//     once VerifyDepth deep. Asking a header of every such block would cost a
//     call a block on a quiet token, and holding the cursor below each bloom
//     that says "maybe" (a full block's bloom says it of most things) would
//     delay every deposit after it; asking again deep costs one call for many
//     blocks and delays only what a lagging backend left out.
func (s *Scanner) verify(ctx context.Context, logs []rpc.Log, from, to, head uint64) ([]rpc.Log, *rpc.Block, *span, error) {
	// next is the first block the answer does not vouch for.
	next := from
	for _, lg := range logs {
		if lg.BlockNumber >= from && lg.BlockNumber <= to {
			next = max(next, lg.BlockNumber+1)
		}
	}
	deep := uint64(0)
	if head > s.cfg.VerifyDepth {
		deep = head - s.cfg.VerifyDepth
	}
	if next <= deep && to > deep {
		// Deep blocks the answer had nothing for, asked by a request reaching
		// nearer the head: asked again alone, by a request ending deep.
		more, err := s.client.Logs(ctx, next, deep, s.contracts(), chain.TransferTopic)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(more) > 0 {
			s.metrics.ChainRPCError(s.cfg.Network, rpc.KindMissingLogs)
			s.log.Warn("eth_getLogs answered no logs for blocks its own later answer has logs in (a backend behind); the later answer is used",
				"from", next, "to", deep, "logs", len(more))
			logs = append(logs, more...)
		}
		next = deep + 1
	}
	end, err := s.block(ctx, to)
	if err != nil {
		return nil, nil, nil, err
	}
	if next > to || to <= deep {
		return logs, end, nil, nil
	}
	// Blocks next..to near the head, without logs in the answer: the ones whose
	// header is at hand and rules the token out need nothing more.
	tokens := make([][]byte, 0, len(s.cfg.Tokens))
	for _, t := range s.cfg.Tokens {
		tokens = append(tokens, t.Contract.Bytes())
	}
	cache, _ := s.client.(headers)
	var again *span
	for n := next; n <= to; n++ {
		b := end
		if n < to {
			if b = nil; cache != nil {
				b = cache.CachedBlock(n)
			}
		}
		if b != nil && !mayHold(b, tokens) { // a block without a bloom may hold anything
			continue
		}
		if again == nil {
			again = &span{from: n}
		}
		again.to = n
	}
	return logs, end, again, nil
}

// headers is a client that keeps headers at hand (the provider pool keeps the
// ones pushed to it): CachedBlock returns block n when it has it, without a call.
type headers interface {
	CachedBlock(n uint64) *rpc.Block
}

// mayHold reports whether block b's bloom lets a Transfer log of one of the
// tokens be in it.
func mayHold(b *rpc.Block, tokens [][]byte) bool {
	for _, t := range tokens {
		if b.MayHold(t, chain.TransferTopic.Bytes()) {
			return true
		}
	}
	return false
}

// queue adds r to the ranges asked again once deep, merged with the last when
// fewer than VerifyDepth blocks lie between them (asking a few blocks more costs
// nothing; a call more for each range would).
func (s *Scanner) queue(r span) {
	if n := len(s.recheck); n > 0 && s.recheck[n-1].to+s.cfg.VerifyDepth >= r.from && !s.recheck[n-1].start {
		s.recheck[n-1].to = max(s.recheck[n-1].to, r.to)
		return
	}
	s.recheck = append(s.recheck, r)
}

// recheckDeep asks again, alone, the ranges queued by verify once they are
// VerifyDepth below the head (a range whose top follows the head, as on a quiet
// chain, once VerifyDepth of its blocks are), and records the transfers a
// backend behind left out (the cursor stays where it is): kind missing_logs and
// a WARN then. After the scanner takes the lock, the blocks below the cursor
// that a scanner before it may have believed so are queued too (twice
// VerifyDepth: what it may have queued and not asked yet); finding transfers
// recorded already there is no fault, and recording them again changes nothing.
func (s *Scanner) recheckDeep(ctx context.Context, cur *chain.Cursor, head uint64) error {
	if !s.rechecked {
		s.rechecked = true
		from := uint64(1)
		if cur.Block > 2*s.cfg.VerifyDepth {
			from = cur.Block - 2*s.cfg.VerifyDepth + 1
		}
		if from <= cur.Block {
			s.recheck = append([]span{{from: from, to: cur.Block, start: true}}, s.recheck...)
		}
	}
	for len(s.recheck) > 0 {
		r := s.recheck[0]
		r.to = min(r.to, cur.Block)
		if r.from > r.to || r.from+s.cfg.VerifyDepth > head {
			return nil
		}
		deepTo := min(r.to, head-s.cfg.VerifyDepth)
		if deepTo < r.to && deepTo-r.from+1 < s.cfg.VerifyDepth {
			return nil // wait for more of it to be deep: one call for many blocks
		}
		r.to = deepTo
		logs, err := s.client.Logs(ctx, r.from, r.to, s.contracts(), chain.TransferTopic)
		if err != nil {
			return err
		}
		transfers, err := s.transfers(ctx, logs, r.from, r.to, nil)
		if err != nil {
			return err
		}
		if len(transfers) > 0 {
			for i := range transfers {
				transfers[i].Confirmations = int(head - transfers[i].Block + 1)
			}
			if !r.start {
				s.metrics.ChainRPCError(s.cfg.Network, rpc.KindMissingLogs)
				s.log.Warn("blocks answered without logs near the head hold transfers to deposit addresses when asked again (a backend behind); recorded now",
					"from", r.from, "to", r.to, "transfers", len(transfers))
			}
			if err := s.sink.Record(ctx, s.cfg.Network, cur, *cur, transfers); err != nil {
				return err
			}
		}
		if s.recheck[0].from = r.to + 1; s.recheck[0].from > s.recheck[0].to {
			s.recheck = s.recheck[1:]
		}
	}
	return nil
}

// scan reads and records from..min(head, from+span−1) (a first start at genesis).
func (s *Scanner) scan(ctx context.Context, cur *chain.Cursor, from, head uint64) (bool, error) {
	logs, to, err := s.logs(ctx, from, head, false)
	if err != nil {
		return false, err
	}
	return s.record(ctx, cur, logs, from, to, head)
}

func (s *Scanner) contracts() []common.Address {
	out := make([]common.Address, 0, len(s.cfg.Tokens))
	for _, t := range s.cfg.Tokens {
		out = append(out, t.Contract)
	}
	return out
}

// transfers turns logs of blocks from..to into transfers to our deposit
// addresses; logs of other contracts or blocks, malformed logs, amounts that round
// to zero and transfers to other addresses are ignored. Each transfer's block is
// read (end, block to, when the caller has it) to check the log's hash.
func (s *Scanner) transfers(ctx context.Context, logs []rpc.Log, from, to uint64, end *rpc.Block) ([]chain.Transfer, error) {
	var cands []chain.Transfer
	var addrs []string
	for _, lg := range logs {
		tok, ok := s.byAddr[lg.Address]
		if !ok || lg.Removed || lg.BlockNumber < from || lg.BlockNumber > to ||
			len(lg.Topics) != 3 || lg.Topics[0] != chain.TransferTopic || len(lg.Data) != 32 {
			continue
		}
		to := common.BytesToAddress(lg.Topics[2].Bytes())
		raw := new(big.Int).SetBytes(lg.Data)
		t := chain.Transfer{
			Network: s.cfg.Network, Token: tok.Symbol, TxHash: lg.TxHash, LogIndex: lg.Index,
			Block: lg.BlockNumber, BlockHash: lg.BlockHash,
			From: common.BytesToAddress(lg.Topics[1].Bytes()), To: to, ToAddress: chain.FormatAddress(s.cfg.Network, to),
			Raw: raw, Amount: chain.ToAmount(raw, tok.Decimals),
		}
		if !t.Amount.IsPositive() {
			// Zero (or below 0.000001) is no payment: such transfers are address
			// poisoning spam, and as a deposit one would fail its transaction as underpaid.
			continue
		}
		cands = append(cands, t)
		addrs = append(addrs, t.ToAddress)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	watched, err := s.sink.Watching(ctx, s.cfg.Network, addrs)
	if err != nil {
		return nil, err
	}
	var out []chain.Transfer
	blocks := map[uint64]*rpc.Block{}
	if end != nil {
		blocks[end.Number] = end
	}
	for _, t := range cands {
		if !watched[t.ToAddress] {
			continue
		}
		b, ok := blocks[t.Block]
		if !ok {
			if b, err = s.block(ctx, t.Block); err != nil {
				return nil, err
			}
			blocks[t.Block] = b
		}
		if b.Hash != t.BlockHash {
			return nil, fmt.Errorf("block %d changed while scanning (reorganisation); retrying", t.Block)
		}
		t.BlockTime = b.Time
		out = append(out, t)
	}
	return out, nil
}

// settle re-checks every pending deposit's block against the canonical chain and
// drops those whose block is gone; the others get head − block + 1 confirmations,
// and are final when their block is at or below the node's finalized block (or
// always, under the count rule; never while the rule is unknown). A deposit at or below an intact cursor is
// canonical (see Poll); any other is checked by its own block.
func (s *Scanner) settle(ctx context.Context, head uint64, cur *chain.Cursor, intact bool) error {
	pending, err := s.sink.Pending(ctx, s.cfg.Network)
	if err != nil {
		return err
	}
	hashes := map[uint64]common.Hash{}
	// The finalized block, read at most once a poll.
	var finalized *rpc.Block
	asked := s.cfg.Finality == chain.FinalityConfirmations
	ask := func() error {
		if asked {
			return nil
		}
		asked = true
		finalized, err = s.readFinalized(ctx)
		return err
	}
	since := time.Since(s.askedAt)
	if s.finality == chain.FinalityTag && since > time.Minute || s.finality != chain.FinalityTag && since >= s.cfg.FinalityRecheck {
		// Keep partnerd_chain_finalized_block current while no deposit waits, and
		// ask a node without the tag, or without an answer lately, again.
		if err := ask(); err != nil {
			return err
		}
	}
	for _, p := range pending {
		canonical := intact && cur != nil && p.Block <= cur.Block
		if !canonical {
			h, ok := hashes[p.Block]
			if !ok {
				b, err := s.client.BlockByNumber(ctx, p.Block)
				if err != nil {
					return err
				}
				if b == nil {
					// No block there (above every head the providers reported: a
					// chain shortened for now): no proof either way, so the
					// deposit keeps its state; a block returned decides.
					continue
				}
				h = b.Hash
				hashes[p.Block] = h
			}
			canonical = h == p.BlockHash
		}
		if !canonical {
			s.log.Warn("deposit's block reorganised away; deposit dropped", "tx_hash", p.TxHash.Hex(), "log_index", p.LogIndex, "block", p.Block)
			if err := s.sink.Drop(ctx, p); err != nil {
				return err
			}
			continue
		}
		if head < p.Block {
			continue
		}
		n := int(head - p.Block + 1)
		final := s.finality == chain.FinalityConfirmations
		if n >= s.cfg.Confirmations && !final {
			// Deep enough: is it final? One read of the finalized block per poll, and
			// only while a deposit waits for it. While the rule is unknown, no.
			if err := ask(); err != nil {
				return err
			}
			final = s.finality == chain.FinalityConfirmations ||
				s.finality == chain.FinalityTag && finalized != nil && p.Block <= finalized.Number
		}
		if n <= p.Confirmations && (n < s.cfg.Confirmations || !final) {
			continue // nothing new, and not ready to confirm
		}
		if err := s.sink.Confirm(ctx, p, n, final); err != nil {
			return err
		}
	}
	return nil
}
