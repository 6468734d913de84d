package providers

import (
	"context"
	"sync"
	"time"
)

// Wake signals a new head pushed by a provider (buffered, never blocks the
// pusher): the scanner's scanner.Config.Wake.
func (p *Pool) Wake() <-chan struct{} { return p.wake }

// Run keeps a subscription to new heads open on every provider that pushes,
// reconnecting with a growing wait when it fails, until ctx is done. Background
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

// subscribe keeps m's subscription open while the pool is in use: only the
// instance whose scanner holds the network's lock subscribes (providers count
// pushed heads against quotas too).
func (p *Pool) subscribe(ctx context.Context, m *member) {
	wait := time.Second
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
			wait = time.Second // it held for a while: a fresh failure
		}
		msg := "subscription ended"
		if err != nil {
			msg = err.Error()
		}
		p.log.Warn("chain provider's new-heads subscription failed; polling meanwhile, reconnecting", "provider", m.name, "error", msg, "retry_in", wait.String())
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
	return m.push.SubscribeHeads(ctx, func(n uint64) {
		p.mu.Lock()
		if !m.pushing {
			m.pushing = true
			p.log.Info("chain provider pushes new heads", "provider", m.name)
		}
		newer := n > p.best
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
