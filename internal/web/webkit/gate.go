package webkit

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Gate admits the sign-in work (the attempt's reservation, the user's lookup,
// the password's argon2id check, 19 MiB each) a few at a time and fairly: each
// attempt names its sources (its client address, the account it tries), and no
// source holds more than PerSource places (working or waiting), so a flood from
// one address or against one account takes at most that many, and the others
// find a place at once or after the few ahead of them. The waiting line is
// bounded (Queue) and so is the wait (Wait): what finds no place is refused at
// once, before touching the database, so a flood of sign-ins never holds more
// than Slots of the database's connections.
type Gate struct {
	slots, queue, perSource int
	wait                    time.Duration

	mu      sync.Mutex
	running int
	held    map[string]int
	line    []*waiter
}

type waiter struct {
	ready chan struct{}
	// admitted is set under the gate's lock when the waiter is given a slot.
	admitted bool
}

// ErrGateBusy refuses an attempt for which the gate had no place: the caller
// answers 503 with Retry-After, and nothing was checked or counted.
var ErrGateBusy = errors.New("too many sign-ins at once")

// The sign-in gate's sizes: as many at work as partnerusers.HashSlots (the
// argon2 memory bound), half of them at most for one source, a short line.
const (
	GateSlots     = 4
	GatePerSource = 2
	GateQueue     = 32
	GateWait      = 2 * time.Second
)

// NewGate returns a gate of slots places at work, queue places waiting, at most
// perSource for one source, and a wait of at most wait.
func NewGate(slots, queue, perSource int, wait time.Duration) *Gate {
	return &Gate{slots: slots, queue: queue, perSource: perSource, wait: wait, held: map[string]int{}}
}

// Enter takes a place for an attempt from sources (empty ones are ignored) and
// returns its release, or ErrGateBusy (or ctx's error) without a place.
func (g *Gate) Enter(ctx context.Context, sources ...string) (func(), error) {
	g.mu.Lock()
	for _, s := range sources {
		if s != "" && g.held[s] >= g.perSource {
			g.mu.Unlock()
			return nil, ErrGateBusy
		}
	}
	if g.running < g.slots && len(g.line) == 0 {
		g.running++
		g.hold(sources, 1)
		g.mu.Unlock()
		return g.leave(sources), nil
	}
	if len(g.line) >= g.queue {
		g.mu.Unlock()
		return nil, ErrGateBusy
	}
	w := &waiter{ready: make(chan struct{})}
	g.line = append(g.line, w)
	g.hold(sources, 1)
	g.mu.Unlock()

	t := time.NewTimer(g.wait)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return g.leave(sources), nil
	case <-t.C:
		err = ErrGateBusy
	case <-ctx.Done():
		err = ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.admitted { // given a slot as the wait ended: hand it on
		g.running--
		g.next()
	} else {
		for i, x := range g.line {
			if x == w {
				g.line = append(g.line[:i], g.line[i+1:]...)
				break
			}
		}
	}
	g.hold(sources, -1)
	return nil, err
}

// hold counts a place more (or less) for each source.
func (g *Gate) hold(sources []string, d int) {
	for _, s := range sources {
		if s == "" {
			continue
		}
		if g.held[s] += d; g.held[s] <= 0 {
			delete(g.held, s)
		}
	}
}

// leave is the release of a place at work.
func (g *Gate) leave(sources []string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.running--
			g.hold(sources, -1)
			g.next()
		})
	}
}

// next gives free slots to the first in line.
func (g *Gate) next() {
	for g.running < g.slots && len(g.line) > 0 {
		w := g.line[0]
		g.line = g.line[1:]
		w.admitted = true
		g.running++
		close(w.ready)
	}
}
