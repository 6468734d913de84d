package ratelimit

import (
	"container/list"
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMemoryCapacity is how many (key, class) buckets a Memory from NewMemory
// keeps at most. Keys are authenticated partners, so real traffic stays far below
// it; the bound only matters if something feeds the limiter unbounded keys.
const DefaultMemoryCapacity = 100_000

// sweepEvery is how often Memory walks its buckets to drop idle ones.
const sweepEvery = time.Minute

// Memory is a Limiter that keeps one golang.org/x/time/rate bucket per (key, class)
// in process memory. It is exact and needs no infrastructure, but each instance
// counts alone: behind a load balancer with N instances a key effectively gets N
// budgets. Use it for a single instance, in development, or as a fallback; use
// Redis when several instances must share one budget.
//
// The number of buckets is bounded. A bucket that has refilled completely is
// indistinguishable from a new one, so such idle buckets are dropped on a periodic
// sweep at no cost in accuracy. If the bound is reached anyway, the least recently
// used bucket is dropped; that can only forgive a caller, never over-limit one.
type Memory struct {
	mu        sync.Mutex
	capacity  int
	now       func() time.Time
	buckets   map[bucketKey]*list.Element
	lru       *list.List // of *bucket, most recently used first
	lastSweep time.Time
}

type bucketKey struct {
	key   string
	class Class
}

type bucket struct {
	id  bucketKey
	lim *rate.Limiter
	// fullAt is when the bucket will have refilled completely; from then on it can
	// be dropped without changing any decision.
	fullAt time.Time
}

// NewMemory returns an empty in-process limiter holding at most
// DefaultMemoryCapacity buckets.
func NewMemory() *Memory {
	return newMemory(DefaultMemoryCapacity, time.Now)
}

func newMemory(capacity int, now func() time.Time) *Memory {
	return &Memory{
		capacity:  capacity,
		now:       now,
		buckets:   make(map[bucketKey]*list.Element),
		lru:       list.New(),
		lastSweep: now(),
	}
}

// Allow spends one request of key's budget for class under l. It fails only for an
// invalid l. The bucket follows l as given on each call, so a changed
// configuration applies to existing callers without a restart.
func (m *Memory) Allow(_ context.Context, key string, class Class, l Limit) (Result, error) {
	if err := l.Validate(); err != nil {
		return Result{}, err
	}
	now := m.now()
	perSecond := rate.Limit(float64(l.Rate) / l.Period.Seconds())

	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.lastSweep) >= sweepEvery {
		m.sweep(now)
	}
	b := m.bucket(bucketKey{key: key, class: class}, now, perSecond, l.Burst)
	lim := b.lim
	if lim.Limit() != perSecond {
		lim.SetLimitAt(now, perSecond)
	}
	if lim.Burst() != l.Burst {
		lim.SetBurstAt(now, l.Burst)
	}

	res := Result{Limit: l, Allowed: lim.AllowN(now, 1)}
	tokens := lim.TokensAt(now)
	if !res.Allowed {
		res.RetryAfter = tokenDuration(1-tokens, perSecond)
	}
	res.Remaining = max(0, int(math.Floor(tokens)))
	res.ResetAfter = tokenDuration(float64(l.Burst)-tokens, perSecond)
	b.fullAt = now.Add(res.ResetAfter)
	return res, nil
}

// bucket returns the bucket for id, marked most recently used, creating it (and
// making room for it) if needed. m.mu must be held.
func (m *Memory) bucket(id bucketKey, now time.Time, r rate.Limit, burst int) *bucket {
	if el, ok := m.buckets[id]; ok {
		m.lru.MoveToFront(el)
		return el.Value.(*bucket)
	}
	if m.lru.Len() >= m.capacity {
		m.sweep(now)
	}
	for m.lru.Len() >= m.capacity {
		m.remove(m.lru.Back())
	}
	b := &bucket{id: id, lim: rate.NewLimiter(r, burst), fullAt: now}
	m.buckets[id] = m.lru.PushFront(b)
	return b
}

// sweep drops every bucket that has refilled completely. m.mu must be held.
func (m *Memory) sweep(now time.Time) {
	m.lastSweep = now
	for el := m.lru.Back(); el != nil; {
		prev := el.Prev()
		if !now.Before(el.Value.(*bucket).fullAt) {
			m.remove(el)
		}
		el = prev
	}
}

func (m *Memory) remove(el *list.Element) {
	delete(m.buckets, el.Value.(*bucket).id)
	m.lru.Remove(el)
}

// tokenDuration is how long r takes to produce tokens, never negative.
func tokenDuration(tokens float64, r rate.Limit) time.Duration {
	if tokens <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(tokens / float64(r) * float64(time.Second)))
}
