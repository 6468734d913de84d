// Package quietlog collapses the warnings and errors a retrying component repeats
// while something it depends on is down, so an outage is told in a few lines
// rather than one per retry.
//
// Why: River's services (producer, elector, notifier, maintenance services) each
// retry their statements on their own schedule and log every failed attempt; a
// six-minute database outage wrote thousands of ERROR lines that said the same
// thing, drowning whatever else was logged meanwhile. The rule kept here, and only
// here, is: the first WARN or ERROR record while healthy is the state change,
// logged once as Options.Down with the original message (cause) and its
// attributes (the error); a later record whose message and component differ from
// every one logged since is logged as it is, once; every repeat is only counted.
// When the component says it recovered (Recovered: a unit of work succeeded) or,
// with Options.Quiet set, when no warning came for that long, one line
// Options.Up says how many records were suppressed and for how long. Records
// below WARN pass through untouched: they do not say the component recovered
// (River reports routine INFO while the database is down).
package quietlog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Options configure a Handler.
type Options struct {
	// Down is the message of the line that opens an outage; Up of the line that
	// closes it.
	Down, Up string
	// Quiet, when positive, closes an outage once no warning or error came for
	// that long (checked when a record is handled or Recovered is called).
	Quiet time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Handler is the slog.Handler wrapper; create it with New.
type Handler struct {
	next      slog.Handler
	s         *state
	component string
	grouped   bool
}

// state is shared by a Handler and every handler derived from it (WithAttrs,
// WithGroup): one outage across all the component's loggers.
type state struct {
	opts Options
	root slog.Handler // where the Up line goes

	mu         sync.Mutex
	down       bool
	since      time.Time // when the outage opened
	last       time.Time // the last warning or error
	seen       map[string]bool
	suppressed int
	total      int // suppressed over the Handler's life
}

// New wraps next.
func New(next slog.Handler, opts Options) *Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Handler{next: next, s: &state{opts: opts, root: next}}
}

// Enabled reports whether next is.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle logs r, or counts it when it repeats a warning or error of the outage.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	s := h.s
	now := s.opts.Now()
	s.mu.Lock()
	up := s.expire(now)
	if r.Level < slog.LevelWarn {
		s.mu.Unlock()
		s.emitUp(ctx, up)
		return h.next.Handle(ctx, r)
	}
	component := h.component
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "component" && !h.grouped {
			component = a.Value.String()
			return false
		}
		return true
	})
	key := component + "\x00" + r.Message
	opening := !s.down
	if opening {
		s.down, s.since, s.seen, s.suppressed = true, now, map[string]bool{}, 0
	}
	s.last = now
	if s.seen[key] {
		s.suppressed++
		s.total++
		s.mu.Unlock()
		s.emitUp(ctx, up)
		return nil
	}
	s.seen[key] = true
	s.mu.Unlock()
	s.emitUp(ctx, up)
	if opening && s.opts.Down != "" {
		line := slog.NewRecord(r.Time, r.Level, s.opts.Down, r.PC)
		line.AddAttrs(slog.String("cause", r.Message))
		r.Attrs(func(a slog.Attr) bool { line.AddAttrs(a); return true })
		r = line
	}
	return h.next.Handle(ctx, r)
}

// Recovered says the component works again (a unit of work succeeded): an open
// outage is closed with the Up line. It is cheap when none is open.
func (h *Handler) Recovered(ctx context.Context) {
	s := h.s
	s.mu.Lock()
	if !s.down {
		s.mu.Unlock()
		return
	}
	up := s.close(s.opts.Now())
	s.mu.Unlock()
	s.emitUp(ctx, up)
}

// Suppressed is how many records the Handler has counted instead of logging.
func (h *Handler) Suppressed() int {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.s.total
}

// upLine is a closed outage's Up line, emitted outside the lock.
type upLine struct {
	at         time.Time
	suppressed int
	lasted     time.Duration
}

// expire closes the outage when Quiet has passed since its last warning.
func (s *state) expire(now time.Time) *upLine {
	if !s.down || s.opts.Quiet <= 0 || now.Sub(s.last) < s.opts.Quiet {
		return nil
	}
	return s.close(now)
}

// close ends the outage; the caller holds mu.
func (s *state) close(now time.Time) *upLine {
	up := &upLine{at: now, suppressed: s.suppressed, lasted: now.Sub(s.since)}
	s.down, s.seen, s.suppressed = false, nil, 0
	return up
}

func (s *state) emitUp(ctx context.Context, up *upLine) {
	if up == nil || s.opts.Up == "" || !s.root.Enabled(ctx, slog.LevelInfo) {
		return
	}
	r := slog.NewRecord(up.at, slog.LevelInfo, s.opts.Up, 0)
	r.AddAttrs(slog.Int("suppressed", up.suppressed), slog.String("down_for", up.lasted.Round(time.Millisecond).String()))
	_ = s.root.Handle(ctx, r)
}

// WithAttrs keeps the component attribute for the key.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	if !h.grouped {
		for _, a := range as {
			if a.Key == "component" {
				c.component = a.Value.String()
			}
		}
	}
	return &c
}

// WithGroup qualifies later attributes, so a component inside a group is not the key's.
func (h *Handler) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	c.grouped = c.grouped || name != ""
	return &c
}
