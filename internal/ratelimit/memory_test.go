package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock for the tests that must not depend on timing.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestMemoryAllowsBurstThenDenies(t *testing.T) {
	t.Parallel()
	testBurstThenDeny(t, NewMemory(), "partner-a")
}

func TestMemoryRefills(t *testing.T) {
	t.Parallel()
	testRefill(t, NewMemory(), "partner-a")
}

func TestMemoryClassesAndKeysAreIndependent(t *testing.T) {
	t.Parallel()
	testIndependence(t, NewMemory(), "")
}

func TestMemoryConcurrentCallersShareOneBudget(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	testSharedBudget(t, []Limiter{m, m}, "partner-a")
}

func TestMemoryRejectsInvalidLimit(t *testing.T) {
	t.Parallel()
	_, err := NewMemory().Allow(context.Background(), "k", Reads, Limit{})
	require.Error(t, err)
}

func TestMemoryFollowsChangedLimit(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	m := newMemory(10, clock.Now)
	ctx := context.Background()
	slow := Limit{Rate: 1, Burst: 1, Period: time.Hour}
	fast := Limit{Rate: 1000, Burst: 1, Period: time.Second}

	res, err := m.Allow(ctx, "k", Reads, slow)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	clock.Advance(2 * time.Millisecond)
	res, err = m.Allow(ctx, "k", Reads, slow)
	require.NoError(t, err)
	require.False(t, res.Allowed, "the slow limit has not refilled after 2ms")

	res, err = m.Allow(ctx, "k", Reads, fast)
	require.NoError(t, err)
	require.False(t, res.Allowed, "a new limit does not grant tokens retroactively")
	clock.Advance(2 * time.Millisecond)
	res, err = m.Allow(ctx, "k", Reads, fast)
	require.NoError(t, err)
	require.True(t, res.Allowed, "the new rate refills the bucket")
	require.Equal(t, fast, res.Limit)
}

func TestMemoryEvictsLeastRecentlyUsedAtCapacity(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	m := newMemory(2, clock.Now)
	ctx := context.Background()
	l := Limit{Rate: 1, Burst: 1, Period: time.Hour}
	allow := func(key string) Result {
		t.Helper()
		clock.Advance(time.Millisecond)
		res, err := m.Allow(ctx, key, Reads, l)
		require.NoError(t, err)
		return res
	}

	require.True(t, allow("a").Allowed)
	require.True(t, allow("b").Allowed)
	require.False(t, allow("a").Allowed, "a is spent, and now the most recently used")
	require.True(t, allow("c").Allowed)
	require.Equal(t, 2, m.Len(), "the map never grows past its capacity")
	require.Contains(t, m.buckets, bucketKey{key: "a", class: Reads})
	require.Contains(t, m.buckets, bucketKey{key: "c", class: Reads})
	require.NotContains(t, m.buckets, bucketKey{key: "b", class: Reads}, "b was the least recently used")
	require.False(t, allow("a").Allowed, "a survived eviction with its state")
}

func TestMemorySweepsIdleBuckets(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	m := newMemory(100, clock.Now)
	ctx := context.Background()
	short := Limit{Rate: 1, Burst: 2, Period: time.Second}
	long := Limit{Rate: 1, Burst: 2, Period: time.Hour}

	_, err := m.Allow(ctx, "idle", Reads, short)
	require.NoError(t, err)
	_, err = m.Allow(ctx, "busy", Reads, long)
	require.NoError(t, err)
	require.Equal(t, 2, m.Len())

	clock.Advance(2 * time.Second)
	_, err = m.Allow(ctx, "other", Writes, short)
	require.NoError(t, err)
	require.Equal(t, 3, m.Len(), "no sweep before a minute has passed")

	clock.Advance(sweepEvery)
	res, err := m.Allow(ctx, "busy", Reads, long)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 1, m.Len(), "refilled buckets are dropped; the half-spent one stays")
	require.Contains(t, m.buckets, bucketKey{key: "busy", class: Reads})
	require.Equal(t, 0, res.Remaining, "the kept bucket kept its state")

	res, err = m.Allow(ctx, "idle", Reads, short)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 1, res.Remaining, "a dropped bucket comes back full, as it would have been")
}

// testBurstThenDeny checks that l allows Burst requests at once, then denies with a
// RetryAfter of about one emission interval.
func testBurstThenDeny(t *testing.T, l Limiter, key string) {
	t.Helper()
	ctx := context.Background()
	// One token a second: the test is far quicker than a refill.
	limit := Limit{Rate: 1, Burst: 3, Period: time.Second}
	for i := range limit.Burst {
		res, err := l.Allow(ctx, key, Reads, limit)
		require.NoError(t, err)
		require.True(t, res.Allowed, "request %d is within the burst", i+1)
		require.Equal(t, limit.Burst-1-i, res.Remaining)
		require.Equal(t, limit, res.Limit)
		require.Zero(t, res.RetryAfter)
		require.Greater(t, res.ResetAfter, time.Duration(i)*time.Second)
		require.LessOrEqual(t, res.ResetAfter, time.Duration(i+1)*time.Second)
	}
	res, err := l.Allow(ctx, key, Reads, limit)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.Zero(t, res.Remaining)
	require.Greater(t, res.RetryAfter, 500*time.Millisecond, "the next token is about a second away")
	require.LessOrEqual(t, res.RetryAfter, time.Second)
	require.Greater(t, res.ResetAfter, 2*time.Second, "three tokens to refill")
	require.LessOrEqual(t, res.ResetAfter, 3*time.Second)

	again, err := l.Allow(ctx, key, Reads, limit)
	require.NoError(t, err)
	require.False(t, again.Allowed)
	require.LessOrEqual(t, again.RetryAfter, res.RetryAfter, "a denied request spends nothing")
}

// testRefill checks that a spent bucket allows again once RetryAfter has passed,
// and is full again after ResetAfter.
func testRefill(t *testing.T, l Limiter, key string) {
	t.Helper()
	ctx := context.Background()
	limit := Limit{Rate: 10, Burst: 2, Period: time.Second} // a token every 100ms
	for range limit.Burst {
		res, err := l.Allow(ctx, key, Writes, limit)
		require.NoError(t, err)
		require.True(t, res.Allowed)
	}
	res, err := l.Allow(ctx, key, Writes, limit)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.Positive(t, res.RetryAfter)
	require.LessOrEqual(t, res.RetryAfter, 100*time.Millisecond)

	time.Sleep(res.RetryAfter + 10*time.Millisecond)
	res, err = l.Allow(ctx, key, Writes, limit)
	require.NoError(t, err)
	require.True(t, res.Allowed, "a token came back after RetryAfter")

	time.Sleep(res.ResetAfter + 10*time.Millisecond)
	res, err = l.Allow(ctx, key, Writes, limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, limit.Burst-1, res.Remaining, "the bucket was full again after ResetAfter")
}

// testIndependence checks that each (key, class) has its own budget.
func testIndependence(t *testing.T, l Limiter, prefix string) {
	t.Helper()
	ctx := context.Background()
	limit := Limit{Rate: 1, Burst: 1, Period: time.Minute}
	allowed := func(key string, class Class) bool {
		t.Helper()
		res, err := l.Allow(ctx, prefix+key, class, limit)
		require.NoError(t, err)
		return res.Allowed
	}
	require.True(t, allowed("a", Reads))
	require.False(t, allowed("a", Reads), "a's reads are spent")
	require.True(t, allowed("a", Writes), "a's writes have their own budget")
	require.True(t, allowed("b", Reads), "b has its own budget")
	require.False(t, allowed("a", Writes))
	require.False(t, allowed("b", Reads))
}

// testSharedBudget spends one budget from many goroutines spread over limiters and
// checks that exactly Burst requests got through.
func testSharedBudget(t *testing.T, limiters []Limiter, key string) {
	t.Helper()
	limit := Limit{Rate: 1, Burst: 10, Period: time.Minute}
	var allowed atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			res, err := limiters[i%len(limiters)].Allow(context.Background(), key, Writes, limit)
			if err != nil {
				errs <- err
				return
			}
			if res.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int32(limit.Burst), allowed.Load())
}
