package providers

import (
	"time"

	"partnerd/internal/chain"
)

// States returns every provider's state, in the configured order.
func (p *Pool) States() []chain.ProviderState {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.updateLocked(time.Now())
	return p.statesLocked()
}

func (p *Pool) statesLocked() []chain.ProviderState {
	out := make([]chain.ProviderState, len(p.members))
	for i, m := range p.members {
		out[i] = chain.ProviderState{Name: m.name, State: m.state, Head: m.head, Push: m.push != nil, Since: m.since}
		if m.state != chain.ProviderActive && m.state != chain.ProviderStandby {
			out[i].Error = m.lastErr
		}
	}
	return out
}

// updateLocked recomputes every member's state.
func (p *Pool) updateLocked(now time.Time) {
	for i, m := range p.members {
		s := chain.ProviderStandby
		switch {
		case m.wrongChain:
			s = chain.ProviderFailing
		case m.operator:
			s = chain.ProviderActionNeeded
		case now.Before(m.coolUntil) || now.Before(m.logsCoolUntil):
			s = chain.ProviderRateLimited
		case m.failures > 0 || now.Before(m.logsRetryAt):
			s = chain.ProviderFailing
		case m.syncing:
			s = chain.ProviderSyncing
		case m.behindHead:
			s = chain.ProviderBehind
		case m.disagree || m.lagging:
			s = chain.ProviderLagging
		case m.noLogs:
			s = chain.ProviderNoLogs
		case i == p.active:
			s = chain.ProviderActive
		}
		if s != m.state {
			m.state, m.since = s, now
		}
	}
}

// report tells the observer when a state changed since the last report.
func (p *Pool) report() {
	if p.opts.Observer == nil {
		return
	}
	p.mu.Lock()
	p.updateLocked(time.Now())
	states := p.statesLocked()
	changed := len(states) != len(p.reported)
	for i := 0; !changed && i < len(states); i++ {
		a, b := states[i], p.reported[i]
		changed = a.State != b.State || a.Error != b.Error || a.Push != b.Push
	}
	if changed {
		p.reported = states
	}
	p.mu.Unlock()
	if changed {
		p.opts.Observer.ChainProviders(p.opts.Network, states)
	}
}

// Stranded reports, when no provider of the network can serve the watcher until
// a person acts (each needs its operator, or is on another chain), why: one line
// per provider. nil while any provider may still answer. /readyz says degraded then.
func (p *Pool) Stranded() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.members {
		if !m.operator && !m.wrongChain {
			return nil
		}
		out = append(out, m.name+": "+m.lastErr)
	}
	return out
}
