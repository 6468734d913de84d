package app

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"partnerd/internal/backoffice"
	"partnerd/internal/chain"
	"partnerd/internal/metrics"
)

// Write cost of the stored chain progress: a network's reading is written at most
// once per progressEvery, and only when a value changed (head, finalized block,
// finality, a provider's state or head) or, while its watcher still reports,
// progressHeartbeat after the last write, so the stored age says whether an
// instance is watching. That is one small upsert per network per new head at
// most once a second (BNB Smart Chain's 3 s poll: one every 3 s; pushed heads
// every 0.45 s: one a second), off the scanner's path (a separate goroutine) and
// never inside the cursor's unit of work (SQLite has one writer).
const (
	progressEvery     = time.Second
	progressHeartbeat = 10 * time.Second
	// progressWriteTimeout bounds one write, and the last one at shutdown.
	progressWriteTimeout = 5 * time.Second
	// progressScanning is how long after its scanner's last report (any of the
	// scanner's Metrics calls, which it makes only while holding the network's
	// lock) an instance still writes the network's reading: the provider pool may
	// report on every instance, but only the lock holder writes. Twice the
	// scanner's longest back-off, so a provider's failure is still stored while
	// the scanner waits it out.
	progressScanning = 2 * time.Minute
)

// readingStore stores a network's reading (store.Store.SaveChainReading).
type readingStore interface {
	SaveChainReading(ctx context.Context, r backoffice.ChainReading) error
}

// progressRecorder is what the scanners report to (their Metrics) and what the
// provider pool reports each provider's state to (ChainProviders): every report
// goes to the metrics as before, and each network's latest reading is kept and
// written to the database by run, so the overview of every instance (not only
// the one holding the network's scanner lock) shows it with its age. Only the
// lock holder writes: a network is written while its scanner reports (see
// progressScanning).
type progressRecorder struct {
	*metrics.Chain
	st  readingStore
	log *slog.Logger
	now func() time.Time

	mu   sync.Mutex
	nets map[string]*networkReading
}

// networkReading is one network's latest reading and its bookkeeping.
type networkReading struct {
	r backoffice.ChainReading
	// changed: a value differs from the stored one.
	changed bool
	// reported is the last report of any kind; scanned the scanner's last report
	// (zero: none); written the last write (zero: none).
	reported, scanned, written time.Time
	// failing: the last write failed (logged once until one succeeds).
	failing bool
}

// newProgressRecorder records into m and writes through st; now is the clock of
// the readings' times.
func newProgressRecorder(st readingStore, m *metrics.Chain, log *slog.Logger, now func() time.Time) *progressRecorder {
	return &progressRecorder{Chain: m, st: st, log: log, now: now, nets: map[string]*networkReading{}}
}

// report applies fn to network's reading under the lock; fn returns whether a
// value changed. scanner: the report comes from the network's scanner, which
// reports only while it holds the network's lock.
func (p *progressRecorder) report(network string, scanner bool, fn func(r *backoffice.ChainReading, now time.Time) bool) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.nets[network]
	if n == nil {
		n = &networkReading{r: backoffice.ChainReading{Network: network}, changed: true}
		p.nets[network] = n
	}
	if fn(&n.r, now) {
		n.changed = true
	}
	n.reported = now
	if scanner {
		n.scanned = now
	}
}

// ChainHead records the node's head block.
func (p *progressRecorder) ChainHead(network string, block uint64) {
	p.Chain.ChainHead(network, block)
	p.report(network, true, func(r *backoffice.ChainReading, now time.Time) bool {
		b := int64(block)
		changed := r.Head == nil || *r.Head != b
		r.Head, r.HeadAt = &b, &now
		return changed
	})
}

// ChainScanned records the scanned block: the cursor holds it in the database,
// so here it only shows that the scanner is alive.
func (p *progressRecorder) ChainScanned(network string, block uint64) {
	p.Chain.ChainScanned(network, block)
	p.report(network, true, func(*backoffice.ChainReading, time.Time) bool { return false })
}

// ChainRPCError counts a failed call; it also shows the scanner holds the lock
// (so the providers' states, failing ones included, are stored).
func (p *progressRecorder) ChainRPCError(network, kind string) {
	p.Chain.ChainRPCError(network, kind)
	p.report(network, true, func(*backoffice.ChainReading, time.Time) bool { return false })
}

// ChainFinalized records the node's finalized block.
func (p *progressRecorder) ChainFinalized(network string, block uint64) {
	p.Chain.ChainFinalized(network, block)
	p.report(network, true, func(r *backoffice.ChainReading, now time.Time) bool {
		b := int64(block)
		changed := r.Finalized == nil || *r.Finalized != b
		r.Finalized, r.FinalizedAt = &b, &now
		return changed
	})
}

// ChainFinality records the network's finality state (chain.Finality*) and, when
// it changes, since when.
func (p *progressRecorder) ChainFinality(network, state string) {
	p.Chain.ChainFinality(network, state)
	p.report(network, true, func(r *backoffice.ChainReading, now time.Time) bool {
		if r.Finality == state {
			return false
		}
		r.Finality, r.FinalitySince = state, &now
		return true
	})
}

// ChainProviders records each provider's state.
func (p *progressRecorder) ChainProviders(network string, states []chain.ProviderState) {
	p.Chain.ChainProviders(network, states)
	p.report(network, false, func(r *backoffice.ChainReading, _ time.Time) bool {
		if slices.EqualFunc(r.Providers, states, sameProvider) {
			return false
		}
		r.Providers = slices.Clone(states)
		return true
	})
}

// sameProvider compares two provider states (Since as an instant).
func sameProvider(a, b chain.ProviderState) bool {
	since := a.Since.Equal(b.Since)
	a.Since, b.Since = time.Time{}, time.Time{}
	return since && a == b
}

// run writes the readings as they change until stop is closed, then writes the
// last ones.
func (p *progressRecorder) run(stop <-chan struct{}) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			p.flush(true)
			return
		case <-t.C:
			p.flush(false)
		}
	}
}

// flush writes each network's reading that is due (final: every changed one, the
// watchers having stopped).
func (p *progressRecorder) flush(final bool) {
	now := p.now()
	var due []backoffice.ChainReading
	p.mu.Lock()
	for _, n := range p.nets {
		if n.scanned.IsZero() || now.Sub(n.scanned) > progressScanning {
			continue // not this instance's network (now)
		}
		if now.Sub(n.written) < progressEvery && !final {
			continue
		}
		beat := n.reported.After(n.written) && now.Sub(n.written) >= progressHeartbeat
		if !n.changed && !beat {
			continue
		}
		r := n.r
		r.Providers = slices.Clone(r.Providers)
		r.UpdatedAt = now
		due = append(due, r)
		n.changed, n.written = false, now
	}
	p.mu.Unlock()
	for _, r := range due {
		ctx, cancel := context.WithTimeout(context.Background(), progressWriteTimeout)
		err := p.st.SaveChainReading(ctx, r)
		cancel()
		p.mu.Lock()
		n := p.nets[r.Network]
		if err != nil {
			n.changed = true // written again at the next tick
			if !n.failing {
				p.log.Warn("chain progress not stored; the overview shows the last stored reading", "network", r.Network, "error", err.Error())
			}
		}
		n.failing = err != nil
		p.mu.Unlock()
	}
}

// runWatchers runs the deposit watchers and the writer of their progress until
// ctx is done; the last reading is written once the watchers have stopped.
func (a *App) runWatchers(ctx context.Context) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); a.progress.run(stop) }()
	a.watchers.run(ctx)
	close(stop)
	<-done
}
