package ratelimit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// redisKeyPrefix namespaces this service's buckets in a Redis that may be shared;
// redis_rate adds its own "rate:" in front.
const redisKeyPrefix = "partnerd:"

// Redis is a Limiter whose buckets live in Redis, so every instance connected to
// the same Redis spends from one budget per (key, class). Each check is a single
// GCRA Lua script (github.com/go-redis/redis_rate), which Redis runs atomically:
// concurrent instances cannot both spend the last token, and each bucket is one
// small string that expires by itself once it has refilled.
//
// Redis being unreachable makes Allow fail; Middleware then fails open. Keep the
// client's dial and read timeouts short, since they bound the delay a Redis outage
// adds to every request.
type Redis struct {
	limiter *redis_rate.Limiter
}

// NewRedis returns a limiter that keeps its buckets in client's Redis. The client
// is shared, not owned: closing it is the caller's job.
func NewRedis(client *redis.Client) *Redis {
	return &Redis{limiter: redis_rate.NewLimiter(client)}
}

// Allow spends one request of key's budget for class under l. It fails for an
// invalid l and when Redis cannot be reached or answers with an error.
func (r *Redis) Allow(ctx context.Context, key string, class Class, l Limit) (Result, error) {
	if err := l.Validate(); err != nil {
		return Result{}, err
	}
	res, err := r.limiter.Allow(ctx, redisKeyPrefix+string(class)+":"+key,
		redis_rate.Limit{Rate: l.Rate, Burst: l.Burst, Period: l.Period})
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	// redis_rate reports "not applicable" durations as -1.
	out := Result{
		Allowed:    res.Allowed > 0,
		Limit:      l,
		RetryAfter: max(0, res.RetryAfter),
		ResetAfter: max(0, res.ResetAfter),
	}
	if out.Allowed {
		out.Remaining = remainingFromReset(l, out.ResetAfter)
	}
	return out, nil
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
