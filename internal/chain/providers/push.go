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

func (p *Pool) subscribe(ctx context.Context, m *member) {
	wait := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		err := p.checkChainID(ctx, m)
		p.mu.Lock()
		wrong := m.wrongChain
		p.mu.Unlock()
		if wrong {
			return
		}
		if err == nil {
			err = m.push.SubscribeHeads(ctx, func(n uint64) {
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
		p.mu.Lock()
		m.pushing = false
		p.mu.Unlock()
		if ctx.Err() != nil {
			return
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
