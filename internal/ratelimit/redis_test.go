package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
