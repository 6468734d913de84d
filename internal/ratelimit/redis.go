package ratelimit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// redisKeyPrefix namespaces this service's buckets in a Redis that may be shared;
// redis_rate adds its own "rate:" in front.
const redisKeyPrefix = "partnerd:"

// leaseShare is the part of a bucket's burst an instance takes from Redis in one
// call: 1/50 of it (at most maxLease, at least one token). Small budgets (a burst
// under 100) are spent one token per call, exactly as before; large ones, where a
// round trip per request was a tenth of a read's CPU, are spent from a local lease.
const (
	leaseShare = 50
	maxLease   = 64
	// maxLeases bounds the lease table; past it, expired leases are dropped.
	maxLeases = 10_000
	// minLeaseLife is the least time a lease's tokens stay usable (see leaseLife).
	minLeaseLife = 100 * time.Millisecond
)

// Redis is a Limiter whose buckets live in Redis, so every instance connected to
// the same Redis spends from one budget per (key, class). Each call to Redis is a
// single GCRA Lua script (github.com/go-redis/redis_rate), which Redis runs
// atomically: concurrent instances cannot both spend the last token, and each
// bucket is one small string that expires by itself once it has refilled.
//
// Under a large budget an instance takes a lease of tokens at once (leaseSize) and
// hands them out from memory until they are spent or the lease lapses (leaseLife).
// Every token is still taken from the shared bucket before a request uses it, so
// all instances together spend one budget; what a lease costs is that up to a
// lease's worth per instance may be held where no request arrives, and then lapses
// unused, or be spent a moment after it was taken. One refill per key is in flight at a
// time, and a refused refill is remembered until its Retry-After, so a partner over
// budget costs no round trip per request either.
//
// Redis being unreachable makes Allow fail; Middleware then fails open. Keep the
// client's dial and read timeouts short, since they bound the delay a Redis outage
// adds to every request.
type Redis struct {
	limiter *redis_rate.Limiter
	now     func() time.Time

	mu     sync.Mutex
	leases map[string]*lease
}

// lease is one instance's share of a (key, class) bucket.
type lease struct {
	limit Limit
	// tokens were taken from Redis and not yet handed out; usable until until.
	tokens int
	until  time.Time
	// remaining is what Redis had left after the lease was taken, resetAt when its
	// bucket is full again; deniedUntil is set when Redis refused a refill.
	remaining   int
	resetAt     time.Time
	deniedUntil time.Time
	// refilling is closed when the refill in flight ends; nil when none is.
	refilling chan struct{}
}

// NewRedis returns a limiter that keeps its buckets in client's Redis. The client
// is shared, not owned: closing it is the caller's job.
func NewRedis(client *redis.Client) *Redis {
	return &Redis{limiter: redis_rate.NewLimiter(client), now: time.Now, leases: map[string]*lease{}}
}

// leaseSize is how many tokens one call to Redis takes for l.
func leaseSize(l Limit) int {
	return min(max(l.Burst/leaseShare, 1), maxLease)
}

// leaseLife is how long a lease of n tokens under l stays usable: the time the
// bucket takes to earn them back, at least minLeaseLife. Holding tokens longer
// would let an idle instance bank what others could use; a token spent up to that
// long after it was taken shifts at most a lease per instance into the next
// moment, so a burst may exceed Burst by that much (2 % per instance).
func leaseLife(l Limit, n int) time.Duration {
	return max(time.Duration(float64(l.Period)*float64(n)/float64(l.Rate)), minLeaseLife)
}

// Allow spends one request of key's budget for class under l. It fails for an
// invalid l and when Redis cannot be reached or answers with an error.
func (r *Redis) Allow(ctx context.Context, key string, class Class, l Limit) (Result, error) {
	if err := l.Validate(); err != nil {
		return Result{}, err
	}
	name := redisKeyPrefix + string(class) + ":" + key
	n := leaseSize(l)
	if n == 1 {
		res, _, err := r.take(ctx, name, l, 1)
		return res, err
	}
	for {
		r.mu.Lock()
		ls := r.leases[name]
		if ls == nil || ls.limit != l {
			ls = &lease{limit: l}
			r.add(name, ls)
		}
		now := r.now()
		switch {
		case ls.tokens > 0 && now.Before(ls.until):
			ls.tokens--
			res := Result{Allowed: true, Limit: l, Remaining: min(ls.remaining+ls.tokens, l.Burst), ResetAfter: max(0, ls.resetAt.Sub(now))}
			r.mu.Unlock()
			return res, nil
		case now.Before(ls.deniedUntil):
			res := Result{Limit: l, RetryAfter: ls.deniedUntil.Sub(now), ResetAfter: max(0, ls.resetAt.Sub(now))}
			r.mu.Unlock()
			return res, nil
		case ls.refilling != nil:
			wait := ls.refilling
			r.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return Result{}, fmt.Errorf("ratelimit: redis: %w", ctx.Err())
			}
		}
		done := make(chan struct{})
		ls.refilling = done
		r.mu.Unlock()

		res, got, err := r.take(ctx, name, l, n)
		now = r.now()
		r.mu.Lock()
		ls.refilling = nil
		close(done)
		if err == nil {
			ls.resetAt = now.Add(res.ResetAfter)
			if got == 0 {
				ls.tokens, ls.deniedUntil = 0, now.Add(res.RetryAfter)
			} else {
				ls.tokens = got - 1
				ls.until = now.Add(leaseLife(l, n))
				ls.remaining, ls.deniedUntil = res.Remaining, time.Time{}
				res.Remaining = min(ls.remaining+ls.tokens, l.Burst)
			}
		}
		r.mu.Unlock()
		return res, err
	}
}

// add stores ls under name, first dropping lapsed leases when the table is full.
// The caller holds r.mu.
func (r *Redis) add(name string, ls *lease) {
	if len(r.leases) >= maxLeases {
		now := r.now()
		for k, old := range r.leases {
			if old.refilling == nil && !now.Before(old.until) && !now.Before(old.deniedUntil) {
				delete(r.leases, k)
			}
		}
	}
	r.leases[name] = ls
}

// take spends up to n tokens of the bucket name in one call to Redis and returns
// the result for the request that asked, with how many tokens were granted.
func (r *Redis) take(ctx context.Context, name string, l Limit, n int) (Result, int, error) {
	res, err := r.limiter.AllowAtMost(ctx, name, redis_rate.Limit{Rate: l.Rate, Burst: l.Burst, Period: l.Period}, n)
	if err != nil {
		return Result{}, 0, fmt.Errorf("ratelimit: redis: %w", err)
	}
	// redis_rate reports "not applicable" durations as -1.
	out := Result{
		Allowed:    res.Allowed > 0,
		Limit:      l,
		RetryAfter: max(0, res.RetryAfter),
		ResetAfter: max(0, res.ResetAfter),
	}
	if out.Allowed {
		out.RetryAfter = 0
		out.Remaining = remainingFromReset(l, out.ResetAfter)
	}
	return out, res.Allowed, nil
}

// remainingFromReset is how many tokens a bucket under l holds when it is
// resetAfter away from full. redis_rate's own Remaining is computed in floating
// point against an epoch-sized clock and truncated by Redis, so a whole token often
// comes back as 0.99999 and is reported as 0; the reset time carries the same
// information without that loss. The tiny tolerance absorbs rounding only.
func remainingFromReset(l Limit, resetAfter time.Duration) int {
	missing := resetAfter.Seconds() * float64(l.Rate) / l.Period.Seconds()
	tokens := math.Floor(float64(l.Burst) - missing + 1e-6)
	return int(min(max(tokens, 0), float64(l.Burst)))
}
