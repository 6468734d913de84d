package webkit

import (
	"sync"
	"time"
)

// Limiter counts failures (wrong keys, passwords or codes) per key, a client
// address or an account: after Max failures within Window the key is blocked
// until its oldest failure leaves the window.
type Limiter struct {
	Max    int
	Window time.Duration
	now    func() time.Time

	mu       sync.Mutex
	failures map[string][]time.Time
}

// NewLimiter returns a Limiter blocking after max failures within window.
func NewLimiter(max int, window time.Duration, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{Max: max, Window: window, now: now, failures: map[string][]time.Time{}}
}

// Blocked reports whether key has Max failures within the window.
func (l *Limiter) Blocked(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recent(key)) >= l.Max
}

// Fail counts one failure of key.
func (l *Limiter) Fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures[key] = append(l.recent(key), l.now())
}

func (l *Limiter) recent(key string) []time.Time {
	now := l.now()
	var keep []time.Time
	for _, t := range l.failures[key] {
		if now.Sub(t) < l.Window {
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 {
		delete(l.failures, key)
	} else {
		l.failures[key] = keep
	}
	return keep
}
