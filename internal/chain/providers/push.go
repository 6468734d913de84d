package providers

import (
	"context"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"partnerd/internal/chain/rpc"
)

// Wake signals a new head pushed by a provider (buffered, never blocks the
// pusher): the scanner's scanner.Config.Wake.
func (p *Pool) Wake() <-chan struct{} { return p.wake }

// Run keeps a subscription to new heads open on every provider that pushes,
// reconnecting with a growing wait when it fails, until ctx is done. A
// subscription refused for the number already open on the connection
// (rpc.KindSubscriptions) is asked again on a new connection; refused
// refusalsBeforeWarn times in a row, the provider is taken to refuse push (one
// WARN) and asked again every MaxBackoff while the watcher polls. Background
// head checks started while it runs stop with ctx too.
func (p *Pool) Run(ctx context.Context) {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range p.members {
		if m.push == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.subscribe(ctx, m)
		}()
	}
	wg.Wait()
}

// idleAfter is how long after the pool's last call it counts as unused: the
// scanner of another instance holds the network's lock, or this one stopped.
func (p *Pool) idleAfter() time.Duration { return max(3*p.opts.HeadEvery, 2*time.Minute) }

// inUse reports whether the scanner called the pool lately.
func (p *Pool) inUse() bool {
	return time.Since(time.Unix(0, p.lastUse.Load())) < p.idleAfter()
}

// reconnecter is a client whose connection can be dropped, the next call or
// subscription dialling a new one (rpc.Client over ws(s)://).
type reconnecter interface {
	Reconnect()
}

// refusalsBeforeWarn is how many subscriptions refused in a row for the number
// open on the connection, each asked on a new connection, mean the provider
// refuses push (a plan without it, a limit per key rather than per connection).
const refusalsBeforeWarn = 3

// subscribe keeps m's subscription open while the pool is in use: only the
// instance whose scanner holds the network's lock subscribes (providers count
// pushed heads against quotas too).
func (p *Pool) subscribe(ctx context.Context, m *member) {
	wait := min(time.Second, p.opts.MaxBackoff)
	// refused counts the subscriptions refused in a row for the number open on
	// the connection (rpc.KindSubscriptions).
	refused := 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ctx.Err() == nil {
		if !p.inUse() {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			continue
		}
		start := time.Now()
		subCtx, cancel := context.WithCancel(ctx)
		idle := make(chan struct{})
		go func() {
			for {
				select {
				case <-subCtx.Done():
					return
				case <-tick.C:
					if !p.inUse() {
						close(idle)
						cancel()
						return
					}
				}
			}
		}()
		err := p.subscribeOnce(subCtx, m)
		cancel()
		p.mu.Lock()
		m.pushing = false
		wrong := m.wrongChain
		p.mu.Unlock()
		if ctx.Err() != nil || wrong {
			return
		}
		select {
		case <-idle:
			p.log.Info("chain provider's new-heads subscription closed: the watcher does not read through this instance now", "provider", m.name)
			continue
		default:
		}
		if time.Since(start) > 2*wait {
			wait = min(time.Second, p.opts.MaxBackoff) // it held for a while: a fresh failure
		}
		msg := "subscription ended"
		if err != nil {
			msg = err.Error()
		}
		if rpc.KindOf(err) == rpc.KindSubscriptions {
			refused++
			wait = p.refusedSubscription(m, refused, msg, wait)
		} else {
			refused = 0
			p.log.Warn("chain provider's new-heads subscription failed; polling meanwhile, reconnecting", "provider", m.name, "error", msg, "retry_in", wait.String())
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(wait*2, p.opts.MaxBackoff)
	}
}

// refusedSubscription handles the refused-th subscription in a row that m
// refused for the number open on its connection, and returns the wait before
// the next one. The connection may hold subscriptions the provider still counts
// (ours, from before a drop it did not notice, or a load balancer's), and waiting
// on it does not end them: it is dropped, and the next subscription dials a new
// one (calls in flight on it fail, and the pool asks again). Refused on new
// connections refusalsBeforeWarn times, the provider refuses push: one WARN,
// then MaxBackoff between attempts, each logged at debug level.
func (p *Pool) refusedSubscription(m *member, refused int, msg string, wait time.Duration) time.Duration {
	rc, ok := m.push.(reconnecter)
	if ok {
		rc.Reconnect()
	}
	switch {
	case refused < refusalsBeforeWarn:
		p.log.Info("chain provider refused the new-heads subscription for the subscriptions open on its connection; subscribing again on a new connection",
			"provider", m.name, "error", msg, "reconnected", ok, "retry_in", wait.String())
		return wait
	case refused == refusalsBeforeWarn:
		p.log.Warn("chain provider refuses push: it refused the new-heads subscription on new connections; the watcher polls meanwhile and asks again now and then",
			"provider", m.name, "refusals", refused, "error", msg, "retry_every", p.opts.MaxBackoff.String())
	default:
		p.log.Debug("chain provider refused the new-heads subscription again; the watcher polls",
			"provider", m.name, "refusals", refused, "error", msg, "retry_in", p.opts.MaxBackoff.String())
	}
	return p.opts.MaxBackoff
}

// subscribeOnce checks m's chain id, then runs one subscription until it fails
// or ctx is done.
func (p *Pool) subscribeOnce(ctx context.Context, m *member) error {
	err := p.checkChainID(ctx, m)
	p.mu.Lock()
	wrong := m.wrongChain
	p.mu.Unlock()
	if wrong || err != nil {
		return err
	}
	return m.push.SubscribeHeads(ctx, func(h *rpc.Block) {
		n := h.Number
		p.mu.Lock()
		if !m.pushing {
			m.pushing = true
			p.log.Info("chain provider pushes new heads", "provider", m.name)
		}
		newer := n > p.best
		if h.Hash != (common.Hash{}) && (p.top == nil || n >= p.top.Number) {
			p.keepPushedLocked(m, h)
		}
		n = max(m.head, n)
		p.mu.Unlock()
		p.setHead(m, n)
		if newer {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	})
}

// keepPushed is how many pushed headers the pool keeps: a few minutes of blocks,
// far more than a scanner that keeps up reads back.
const keepPushed = 256

// keepPushedLocked records a header m pushed as the newest one.
func (p *Pool) keepPushedLocked(m *member, h *rpc.Block) {
	p.pushed[h.Number] = h
	p.top, p.topBy, p.fresh = h, m, true
	if len(p.pushed) > keepPushed {
		for n := range p.pushed {
			if n+keepPushed <= h.Number || n > h.Number {
				delete(p.pushed, n)
			}
		}
	}
}

// pushedHead returns the newest pushed head and who pushed it when it was pushed
// since the last call (nil otherwise, and then the head is read by a call: a
// poll the timer started, or a subscription gone quiet, costs one call as
// without push) and its pusher is in good standing: its chain id checked, it
// agreed with the blocks read so far, neither failing, lagging, rate-limited
// nor waiting for its operator. With push, each block then costs the scanner
// its eth_getLogs alone (the last block's hash comes from the pushed header
// too, see pushedBlock): BNB Smart Chain's 192,000 blocks a day, where polling
// the head and reading the last block cost three calls a block.
func (p *Pool) pushedHead() (uint64, *member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.topBy
	if !p.fresh || m == nil {
		return 0, nil
	}
	p.fresh = false
	if !m.idOK || !m.agreed || m.disagree || m.wrongChain || m.operator || m.failures > 0 || m.lagging ||
		time.Now().Before(m.coolUntil) || p.top.Number < p.best {
		return 0, nil
	}
	return p.top.Number, m
}

// pushedBlock returns block n from the pushed headers when each header from the
// newest pushed head down to n was pushed and names the one below it as its
// parent: n is then on the branch of that head, as a call would have said (a
// reorganisation breaks the links: a block not linked is read by a call). A
// newest pushed head below the best head known is stale (a call saw a newer
// head, perhaps of another branch, whose headers are still on their way), so
// then every block is read by a call.
func (p *Pool) pushedBlock(n uint64) *rpc.Block {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.top
	if b == nil || n > b.Number || b.Number-n >= keepPushed || b.Number < p.best {
		return nil
	}
	for b.Number > n {
		parent, ok := p.pushed[b.Number-1]
		if !ok || parent.Hash != b.ParentHash {
			return nil
		}
		b = parent
	}
	return b
}
