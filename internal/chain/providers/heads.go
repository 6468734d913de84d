package providers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"partnerd/internal/chain/rpc"
)

// setHead records a member's head and whether it lags. A member's lag is judged
// when its own head is read (a head read earlier is not compared with a newer one).
// A head below its last by more than ReorgDepth is not believed (see judgeHead):
// the provider is marked behind and its head stays the last one believed.
func (p *Pool) setHead(m *member, head uint64) {
	p.mu.Lock()
	if p.wrongHeadLocked(m, head) {
		if !m.behindHead {
			p.behindLocked(m, head, rpc.SyncStatus{}, nil)
		}
		p.updateLocked(time.Now())
		p.mu.Unlock()
		p.report()
		return
	}
	p.caughtUpLocked(m, head)
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

// Syncer is a client that answers eth_syncing (rpc.Client).
type Syncer interface {
	Syncing(ctx context.Context) (rpc.SyncStatus, error)
}

// wrongHeadLocked reports whether head, answered by m, cannot be its real head:
// 0 after a head above 0, or below its last head by more than ReorgDepth. A
// syncing node answers so, and a load balancer that sent the call to a backend
// still syncing; a reorganisation never moves a head back that far.
func (p *Pool) wrongHeadLocked(m *member, head uint64) bool {
	return m.head > 0 && (head == 0 || head+p.opts.ReorgDepth < m.head)
}

// judgeHead checks the head m answered before it is believed: a head that
// cannot be m's real one (wrongHeadLocked), or 0 while eth_syncing says the node
// is catching up, fails with kind behind, and m is marked behind (syncing when
// eth_syncing says so) until a believable head comes back.
func (p *Pool) judgeHead(ctx context.Context, m *member, head uint64) error {
	p.mu.Lock()
	wrong := p.wrongHeadLocked(m, head)
	last := m.head
	p.mu.Unlock()
	if !wrong && head > 0 {
		return nil
	}
	var st rpc.SyncStatus
	var serr error
	if s, ok := m.c.Client.(Syncer); ok {
		st, serr = s.Syncing(ctx)
		if serr != nil && ctx.Err() == nil {
			p.countError(rpc.KindOf(serr))
		}
	}
	if !wrong && (serr != nil || st.Behind() <= p.opts.ReorgDepth) {
		return nil // a chain at its genesis (a development chain), not a node behind
	}
	p.mu.Lock()
	msg := p.behindLocked(m, head, st, serr)
	p.updateLocked(time.Now())
	p.mu.Unlock()
	p.report()
	return &rpc.Error{Kind: rpc.KindBehind, Method: mHead,
		Message: fmt.Sprintf("head %d (the head it reported before: %d): %s", head, last, msg)}
}

// behindLocked marks m behind after a head that cannot be its real one, logging
// the change once, and returns why.
func (p *Pool) behindLocked(m *member, head uint64, st rpc.SyncStatus, serr error) string {
	syncing := st.Behind() > p.opts.ReorgDepth
	msg := "behind: its head went back (a node syncing, or a backend behind its load balancer)"
	switch {
	case syncing:
		msg = fmt.Sprintf("syncing: eth_syncing says block %d of %d", st.Current, st.Highest)
	case serr != nil && !errors.Is(serr, context.Canceled):
		msg += "; eth_syncing: " + serr.Error()
	}
	m.lastErr = fmt.Sprintf("%s (answered head %d, last believed %d)", msg, head, m.head)
	if !m.behindHead || m.syncing != syncing {
		p.log.Warn("chain provider answers a head it cannot have; it is behind, not a reorganisation: its head is not believed until it catches up",
			"provider", m.name, "head", head, "last_head", m.head, "reason", msg)
	}
	m.behindHead, m.syncing = true, syncing
	return msg
}

// caughtUpLocked clears m's behind mark once it answers a believable head.
func (p *Pool) caughtUpLocked(m *member, head uint64) {
	if !m.behindHead {
		return
	}
	m.behindHead, m.syncing = false, false
	p.log.Info("chain provider answers its head again; caught up", "provider", m.name, "head", head)
}

// Behind reports, when every provider of the network that could serve the
// watcher is behind or syncing (see judgeHead), why: one line per provider; nil
// while any provider answers a believable head. /readyz says degraded then.
func (p *Pool) Behind() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.members {
		if m.wrongChain {
			continue
		}
		if !m.behindHead {
			return nil
		}
		out = append(out, m.name+": "+m.lastErr)
	}
	return out
}
