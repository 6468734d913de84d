package webkit

import (
	"context"
	"time"
)

// Limit is how many attempts (sign-ins, codes) a key may make in a window.
// With Backoff, a window that ended full makes the next one twice as long (up to
// maxBackoff windows), so a guesser who waits out the window meets a longer
// one, while a key that stays under the limit starts afresh.
type Limit struct {
	Max     int
	Window  time.Duration
	Backoff bool
}

// maxBackoff bounds the growth of a backed-off window: 2^5 windows.
const maxBackoff = 5

// decide is the limit's rule over a key's window at now: the attempt is counted
// in the current window, or opens a new one; refused when the window is full.
func (l Limit) decide(w AttemptWindow, now time.Time) (AttemptWindow, bool) {
	if w.End.IsZero() || !now.Before(w.End) { // a new window
		strikes := 0
		if l.Backoff && !w.End.IsZero() && w.Count >= l.Max {
			strikes = min(w.Strikes+1, maxBackoff)
		}
		return AttemptWindow{Count: 1, Strikes: strikes, End: now.Add(l.Window << strikes)}, true
	}
	if w.Count >= l.Max {
		return w, false
	}
	w.Count++
	return w, true
}

// AttemptStore keeps the attempt counts: the database (store.Store), so a limit
// counts the attempts made on every instance.
type AttemptStore interface {
	ReserveAttempt(ctx context.Context, key string, decide func(w AttemptWindow) (AttemptWindow, bool)) (AttemptWindow, bool, error)
	ReleaseAttempt(ctx context.Context, key string, end time.Time) error
}

// Limiter reserves attempts before the work they guard (a password's or a
// code's check), so parallel attempts cannot overtake the limit: each one takes
// its place first, and at most Max of them ever reach the check. An attempt that
// succeeds is handed back (only failures count).
type Limiter struct {
	st  AttemptStore
	now func() time.Time
}

// NewLimiter returns a Limiter counting in st.
func NewLimiter(st AttemptStore, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{st: st, now: now}
}

// Key is a limited key ("dashboard:address:…") and its limit.
type Key struct {
	Name  string
	Limit Limit
}

// Reservation is the attempts taken for one try; Release hands them back.
type Reservation struct {
	l     *Limiter
	taken []AttemptWindow
	keys  []string
}

// Reserve takes one attempt of every key, or none: when a key is full it hands
// back those taken and returns nil and how long until that key's window ends.
func (l *Limiter) Reserve(ctx context.Context, keys ...Key) (*Reservation, time.Duration, error) {
	res := &Reservation{l: l}
	for _, k := range keys {
		now := l.now().UTC().Truncate(time.Microsecond)
		w, ok, err := l.st.ReserveAttempt(ctx, k.Name, func(w AttemptWindow) (AttemptWindow, bool) { return k.Limit.decide(w, now) })
		if err != nil || !ok {
			res.Release(context.WithoutCancel(ctx))
			return nil, max(time.Second, w.End.Sub(now)).Round(time.Second), err
		}
		res.taken, res.keys = append(res.taken, w), append(res.keys, k.Name)
	}
	return res, 0, nil
}

// Release hands back the reservation's attempts (the try succeeded). A nil
// reservation releases nothing.
func (r *Reservation) Release(ctx context.Context) {
	if r == nil {
		return
	}
	for i, k := range r.keys {
		_ = r.l.st.ReleaseAttempt(ctx, k, r.taken[i].End)
	}
	r.keys, r.taken = nil, nil
}
