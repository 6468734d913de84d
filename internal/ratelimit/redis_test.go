package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"partnerd/internal/testsupport/testdb"
)

// newRedisClient connects to the tests' Redis (testdb.RedisURL), failing the test if
// it does not answer: a missing Redis fails the tests rather than skipping them, so a
// broken setup cannot pass as green.
func newRedisClient(t *testing.T) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(testdb.RedisURL())
	require.NoError(t, err, "TEST_REDIS_URL")
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, client.Ping(ctx).Err(), "Redis must answer at %s for these tests (make test starts one)", opts.Addr)
	return client
}

// testPrefix returns a random key prefix so parallel tests (and repeated runs)
// never share a bucket, and deletes the test's buckets when it ends.
func testPrefix(t *testing.T, client *redis.Client) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	prefix := "test-" + hex.EncodeToString(b) + "-"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, "rate:"+redisKeyPrefix+"*:"+prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			_ = client.Del(ctx, iter.Val()).Err()
		}
	})
	return prefix
}

func TestRedisAllowsBurstThenDenies(t *testing.T) {
	t.Parallel()
	client := newRedisClient(t)
	testBurstThenDeny(t, NewRedis(client), testPrefix(t, client)+"partner-a")
}

func TestRedisRefills(t *testing.T) {
	t.Parallel()
	client := newRedisClient(t)
	testRefill(t, NewRedis(client), testPrefix(t, client)+"partner-a")
}

func TestRedisClassesAndKeysAreIndependent(t *testing.T) {
	t.Parallel()
	client := newRedisClient(t)
	testIndependence(t, NewRedis(client), testPrefix(t, client))
}

func TestRedisSeparateLimitersShareOneBudget(t *testing.T) {
	t.Parallel()
	// Two clients and two limiters, as in two server instances.
	first, second := newRedisClient(t), newRedisClient(t)
	a, b := NewRedis(first), NewRedis(second)
	ctx := context.Background()
	key := testPrefix(t, first) + "partner-a"
	limit := Limit{Rate: 1, Burst: 2, Period: time.Minute}

	res, err := a.Allow(ctx, key, Writes, limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 1, res.Remaining)
	res, err = b.Allow(ctx, key, Writes, limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 0, res.Remaining, "the second instance sees the first one's request")
	res, err = a.Allow(ctx, key, Writes, limit)
	require.NoError(t, err)
	require.False(t, res.Allowed, "the budget is shared, not per instance")
	require.Greater(t, res.RetryAfter, 50*time.Second)
	require.LessOrEqual(t, res.RetryAfter, time.Minute)
	res, err = b.Allow(ctx, key, Writes, limit)
	require.NoError(t, err)
	require.False(t, res.Allowed)

	res, err = b.Allow(ctx, key, Reads, limit)
	require.NoError(t, err)
	require.True(t, res.Allowed, "other classes are untouched")
}

func TestRedisConcurrentInstancesShareOneBudget(t *testing.T) {
	t.Parallel()
	first, second := newRedisClient(t), newRedisClient(t)
	testSharedBudget(t, []Limiter{NewRedis(first), NewRedis(second)}, testPrefix(t, first)+"partner-a")
}

func TestRedisKeysAreNamespaced(t *testing.T) {
	t.Parallel()
	client := newRedisClient(t)
	key := testPrefix(t, client) + "partner-a"
	_, err := NewRedis(client).Allow(context.Background(), key, Reads, Limit{Rate: 1, Burst: 1, Period: time.Minute})
	require.NoError(t, err)
	ttl, err := client.PTTL(context.Background(), "rate:partnerd:reads:"+key).Result()
	require.NoError(t, err)
	require.Positive(t, ttl, "the bucket exists and expires by itself")
	require.LessOrEqual(t, ttl, time.Minute)
}

func TestRedisRejectsInvalidLimit(t *testing.T) {
	t.Parallel()
	client := newRedisClient(t)
	_, err := NewRedis(client).Allow(context.Background(), testPrefix(t, client)+"k", Reads, Limit{Rate: 1, Period: time.Second})
	require.Error(t, err)
}

func TestRedisUnreachableReturnsError(t *testing.T) {
	t.Parallel()
	client := closedPortClient(t)
	_, err := NewRedis(client).Allow(context.Background(), "k", Reads, Limit{Rate: 1, Burst: 1, Period: time.Second})
	require.Error(t, err)
	require.Contains(t, err.Error(), "ratelimit: redis")
}

// closedPortClient is a client for a port nothing listens on, like a Redis that is down.
func closedPortClient(t *testing.T) *redis.Client {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// countingHook counts the commands a client sends, to show how many requests a
// lease answers without a round trip.
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestRedisLeasesKeepOneSharedBudget: under a large budget each instance takes
// tokens a lease at a time, yet two instances together allow no more than the
// bucket holds, nearly all of it is used, and most requests cost no round trip.
func TestRedisLeasesKeepOneSharedBudget(t *testing.T) {
	t.Parallel()
	first, second := newRedisClient(t), newRedisClient(t)
	hook := &countingHook{}
	first.AddHook(hook)
	second.AddHook(hook)
	key := testPrefix(t, first) + "partner-a"
	limit := Limit{Rate: 100, Burst: 200, Period: time.Hour} // no refill during the test
	require.Equal(t, 4, leaseSize(limit))
	limiters := []*Redis{NewRedis(first), NewRedis(second)}

	var allowed, denied atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 400 {
		wg.Go(func() {
			res, err := limiters[i%2].Allow(context.Background(), key, Reads, limit)
			if err != nil {
				errs <- err
				return
			}
			if res.Allowed {
				allowed.Add(1)
				assert.LessOrEqual(t, res.Remaining, limit.Burst)
			} else {
				denied.Add(1)
				assert.Positive(t, res.RetryAfter)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// GCRA in floating point may leave the last fraction of a token unspent.
	require.LessOrEqual(t, allowed.Load(), int32(limit.Burst), "never more than the shared bucket")
	require.GreaterOrEqual(t, allowed.Load(), int32(limit.Burst-2))
	require.Equal(t, int32(400), allowed.Load()+denied.Load())
	// 200 tokens in leases of 4 is 50 calls, plus the refused refills (each
	// remembered until its Retry-After) and the script's first load.
	require.Less(t, hook.n.Load(), int64(70), "a lease answers most requests from memory")
}

// TestRedisLeaseLapses: tokens held in a lease are used only for the time the
// bucket takes to earn them back; after that the instance asks Redis again.
func TestRedisLeaseLapses(t *testing.T) {
	t.Parallel()
	client := newRedisClient(t)
	hook := &countingHook{}
	client.AddHook(hook)
	key := testPrefix(t, client) + "partner-a"
	limit := Limit{Rate: 100, Burst: 200, Period: time.Second} // a lease of 4, earned back in 40ms
	clock := newFakeClock()
	r := NewRedis(client)
	r.now = clock.Now
	ctx := context.Background()

	res, err := r.Allow(ctx, key, Reads, limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	calls := hook.n.Load()
	for range 3 {
		res, err = r.Allow(ctx, key, Reads, limit)
		require.NoError(t, err)
		require.True(t, res.Allowed)
	}
	require.Equal(t, calls, hook.n.Load(), "the lease's three other tokens came from memory")

	res, err = r.Allow(ctx, key, Reads, limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, calls+1, hook.n.Load(), "a spent lease is refilled from Redis")
	require.Equal(t, minLeaseLife, leaseLife(limit, 4))
	clock.Advance(minLeaseLife - time.Millisecond)
	res, err = r.Allow(ctx, key, Reads, limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, calls+1, hook.n.Load(), "a lease lasts at least minLeaseLife")
	clock.Advance(2 * time.Millisecond)
	res, err = r.Allow(ctx, key, Reads, limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, calls+2, hook.n.Load(), "a lapsed lease is not used")
	require.Equal(t, 2*time.Second, leaseLife(Limit{Rate: 1, Burst: 100, Period: time.Second}, 2), "a slow bucket's lease lasts until it is earned back")
}
