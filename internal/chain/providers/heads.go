package providers

import (
	"fmt"
	"time"
)

// setHead records a member's head and whether it lags. A member's lag is judged
// when its own head is read (a head read earlier is not compared with a newer one).
func (p *Pool) setHead(m *member, head uint64) {
	p.mu.Lock()
	m.head = head
	p.best = max(p.best, head)
	lag := head+p.opts.MaxLag < p.best
	if lag && !m.lagging {
		p.log.Warn("chain provider lags behind the others", "provider", m.name, "head", head, "best_head", p.best, "max_lag", p.opts.MaxLag)
	}
	if lag {
		m.lastErr = fmt.Sprintf("head %d, %d behind the best known head", head, p.best-head)
	} else if m.lagging {
		p.log.Info("chain provider caught up", "provider", m.name, "head", head)
	}
	m.lagging = lag
	p.updateLocked(time.Now())
	p.mu.Unlock()
	p.report()
}

// refresh reads the heads of the providers not answering for the scanner (at most
// once per HeadEvery each, in the background): how lag is noticed, and how a
// failing or disagreeing provider is found to be back.
func (p *Pool) refresh(except *member) {
	if len(p.members) < 2 {
		return
	}
	now := time.Now()
	p.mu.Lock()
	ctx := p.ctx
	var due []*member
	for _, m := range p.members {
		if m == except || m.wrongChain || m.operator && now.Before(m.operatorRetry) || m.checking || m.pushing || now.Before(m.coolUntil) || now.Sub(m.checkedAt) < p.opts.HeadEvery ||
			(m.failures > 0 && now.Before(m.retryAt)) {
			continue
		}
		if m.limit != nil && !m.limit.AllowN(now, 1) {
			continue
		}
		m.checking, m.checkedAt = true, now
		due = append(due, m)
	}
	p.mu.Unlock()
	for _, m := range due {
		go func() {
			defer func() {
				p.mu.Lock()
				m.checking = false
				p.mu.Unlock()
			}()
			if p.checkChainID(ctx, m) != nil {
				return
			}
			head, err := m.c.BlockNumber(ctx)
			if err != nil {
				if ctx.Err() == nil {
					p.failed(m, mHead, err)
				}
				return
			}
			p.setHead(m, head)
			p.succeededProbe(m)
			p.mu.Lock()
			recheck := m.disagree
			p.mu.Unlock()
			if recheck {
				_ = p.check(ctx, m)
			}
		}()
	}
}

// succeededProbe records a background head read: a failing provider is healthy again.
func (p *Pool) succeededProbe(m *member) {
	p.mu.Lock()
	if m.failures > 0 {
		p.log.Info("chain provider answers again", "provider", m.name)
		m.failures = 0
	}
	m.otherOK = true
	p.updateLocked(time.Now())
	p.mu.Unlock()
	p.report()
}

// behind reports whether m lags and another provider, usable now, is ahead of it.
func (p *Pool) behind(m *member) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !m.lagging {
		return false
	}
	now := time.Now()
	for _, o := range p.members {
		if o != m && o.head > m.head+p.opts.MaxLag && o.failures == 0 && !o.disagree && !now.Before(o.coolUntil) {
			return true
		}
	}
	return false
}
