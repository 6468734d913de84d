package ratelimit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/apperr"
)

// limiterFunc adapts a function to Limiter.
type limiterFunc func(ctx context.Context, key string, class Class, l Limit) (Result, error)

func (f limiterFunc) Allow(ctx context.Context, key string, class Class, l Limit) (Result, error) {
	return f(ctx, key, class, l)
}

// syncBuffer is a bytes.Buffer safe to share between a logger and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.FieldsFunc(b.buf.String(), func(r rune) bool { return r == '\n' })
}

// classify is the test's route classes: health checks are never limited, safe
// methods are reads, the rest writes, and /v1/unclassed has a class without a limit.
func classify(c echo.Context) Class {
	switch {
	case c.Path() == "/healthz":
		return ""
	case c.Path() == "/v1/unclassed":
		return "unclassed"
	case c.Request().Method == http.MethodGet || c.Request().Method == http.MethodHead:
		return Reads
	default:
		return Writes
	}
}

// keyOf stands in for the hash of the authenticated API key.
func keyOf(c echo.Context) string { return c.Request().Header.Get("X-Test-Key") }

// testServer is Echo with the middleware, a counting handler, and an error handler
// that records the error and writes its code and Retry-After like the real one.
type testServer struct {
	e     *echo.Echo
	mu    sync.Mutex
	calls int
	errs  []error
}

func newTestServer(t *testing.T, mw echo.MiddlewareFunc) *testServer {
	t.Helper()
	s := &testServer{e: echo.New()}
	s.e.HTTPErrorHandler = func(err error, c echo.Context) {
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
		status := http.StatusInternalServerError
		ae, ok := apperr.As(err)
		if ok && ae.Code == apperr.RateLimited {
			status = http.StatusTooManyRequests
		}
		if ok && ae.RetryAfterSeconds > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(ae.RetryAfterSeconds))
		}
		code := string(apperr.Internal)
		if ok {
			code = string(ae.Code)
		}
		_ = c.String(status, code)
	}
	s.e.Use(mw)
	handler := func(c echo.Context) error {
		s.mu.Lock()
		s.calls++
		s.mu.Unlock()
		return c.String(http.StatusOK, "ok")
	}
	for _, path := range []string{"/healthz", "/v1/things", "/v1/unclassed"} {
		s.e.GET(path, handler)
		s.e.POST(path, handler)
	}
	return s
}

func (s *testServer) do(method, path, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	if key != "" {
		req.Header.Set("X-Test-Key", key)
	}
	rec := httptest.NewRecorder()
	s.e.ServeHTTP(rec, req)
	return rec
}

func (s *testServer) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *testServer) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestMiddlewareSetsHeadersOnAllowedResponses(t *testing.T) {
	t.Parallel()
	limits := map[Class]Limit{
		Reads:  {Rate: 10, Burst: 3, Period: time.Second},
		Writes: {Rate: 100, Burst: 5, Period: time.Minute},
	}
	s := newTestServer(t, Middleware(NewMemory(), limits, classify, keyOf, discardLogger()))

	rec := s.do(http.MethodGet, "/v1/things", "partner-a")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, `"reads";q=10;w=1`, rec.Header().Get("RateLimit-Policy"))
	require.Equal(t, `"reads";r=2;t=1`, rec.Header().Get("RateLimit"))
	require.Empty(t, rec.Header().Get("Retry-After"))

	rec = s.do(http.MethodPost, "/v1/things", "partner-a")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, `"writes";q=100;w=60`, rec.Header().Get("RateLimit-Policy"))
	require.Equal(t, `"writes";r=4;t=1`, rec.Header().Get("RateLimit"), "a token every 0.6s, rounded up")

	rec = s.do(http.MethodGet, "/v1/things", "partner-a")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Regexp(t, `^"reads";r=[12];t=1$`, rec.Header().Get("RateLimit"), "one left, or two if a token came back meanwhile")
	require.Equal(t, 3, s.Calls())
	require.Empty(t, s.Errors())
}

func TestMiddlewareRejectsOverLimit(t *testing.T) {
	t.Parallel()
	limits := map[Class]Limit{Reads: {Rate: 1, Burst: 2, Period: time.Minute}}
	s := newTestServer(t, Middleware(NewMemory(), limits, classify, keyOf, discardLogger()))

	for range 2 {
		require.Equal(t, http.StatusOK, s.do(http.MethodGet, "/v1/things", "partner-a").Code)
	}
	rec := s.do(http.MethodGet, "/v1/things", "partner-a")
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, string(apperr.RateLimited), rec.Body.String())
	retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, retry, 59, "the next token is a minute away")
	require.LessOrEqual(t, retry, 60)
	require.Equal(t, `"reads";q=2;w=120`, rec.Header().Get("RateLimit-Policy"), "the refusal carries the fields too")
	require.Regexp(t, regexp.MustCompile(`^"reads";r=0;t=1(19|20)$`), rec.Header().Get("RateLimit"))
	require.Equal(t, 2, s.Calls(), "the handler does not run for a refused request")

	errs := s.Errors()
	require.Len(t, errs, 1)
	var ae *apperr.Error
	require.ErrorAs(t, errs[0], &ae)
	require.Equal(t, apperr.RateLimited, ae.Code)
	require.Equal(t, "Too many requests; retry later.", ae.Message)
	require.Equal(t, retry, ae.RetryAfterSeconds)

	require.Equal(t, http.StatusOK, s.do(http.MethodGet, "/v1/things", "partner-b").Code, "other keys are unaffected")
}

func TestMiddlewareRetryAfterIsAtLeastOneSecond(t *testing.T) {
	t.Parallel()
	cases := map[string]time.Duration{"zero": 0, "sub-second": 3 * time.Millisecond, "fraction above": 1500 * time.Millisecond}
	want := map[string]int{"zero": 1, "sub-second": 1, "fraction above": 2}
	for name, retryAfter := range cases {
		deny := limiterFunc(func(_ context.Context, _ string, _ Class, l Limit) (Result, error) {
			return Result{Limit: l, RetryAfter: retryAfter, ResetAfter: retryAfter}, nil
		})
		limits := map[Class]Limit{Reads: {Rate: 1000, Burst: 1, Period: time.Second}}
		s := newTestServer(t, Middleware(deny, limits, classify, keyOf, discardLogger()))
		rec := s.do(http.MethodGet, "/v1/things", "partner-a")
		require.Equal(t, http.StatusTooManyRequests, rec.Code, name)
		require.Equal(t, strconv.Itoa(want[name]), rec.Header().Get("Retry-After"), name)
		ae, ok := apperr.As(s.Errors()[0])
		require.True(t, ok, name)
		require.Equal(t, want[name], ae.RetryAfterSeconds, name)
	}
}

func TestMiddlewarePassesKeyClassAndLimit(t *testing.T) {
	t.Parallel()
	type call struct {
		key   string
		class Class
		limit Limit
	}
	var calls []call
	record := limiterFunc(func(_ context.Context, key string, class Class, l Limit) (Result, error) {
		calls = append(calls, call{key, class, l})
		return Result{Allowed: true, Limit: l, Remaining: 7, ResetAfter: 2500 * time.Millisecond}, nil
	})
	limits := map[Class]Limit{
		Reads:  {Rate: 10, Burst: 10, Period: time.Second},
		Writes: {Rate: 2, Burst: 8, Period: 1500 * time.Millisecond},
	}
	s := newTestServer(t, Middleware(record, limits, classify, keyOf, discardLogger()))

	rec := s.do(http.MethodPost, "/v1/things", "hash-1")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, `"writes";q=8;w=6`, rec.Header().Get("RateLimit-Policy"), "a burst above the rate is the quota, over its refill time")
	require.Equal(t, `"writes";r=7;t=3`, rec.Header().Get("RateLimit"))
	require.Equal(t, []call{{"hash-1", Writes, limits[Writes]}}, calls)
}

func TestMiddlewareSkipsUnclassifiedRoutesAndMissingKeys(t *testing.T) {
	t.Parallel()
	limits := map[Class]Limit{
		Reads:  {Rate: 1, Burst: 1, Period: time.Minute},
		Writes: {Rate: 1, Burst: 1, Period: time.Minute},
	}
	var checks int
	counting := limiterFunc(func(ctx context.Context, key string, class Class, l Limit) (Result, error) {
		checks++
		return Result{Allowed: false, Limit: l, RetryAfter: time.Minute}, nil
	})
	s := newTestServer(t, Middleware(counting, limits, classify, keyOf, discardLogger()))

	for _, r := range []struct{ method, path, key string }{
		{http.MethodGet, "/healthz", "partner-a"},       // classify says ""
		{http.MethodGet, "/v1/things", ""},              // keyOf says ""
		{http.MethodPost, "/v1/unclassed", "partner-a"}, // a class with no limit
	} {
		for range 3 {
			rec := s.do(r.method, r.path, r.key)
			require.Equal(t, http.StatusOK, rec.Code, r.path)
			require.Empty(t, rec.Header().Get("RateLimit-Policy"), r.path)
			require.Empty(t, rec.Header().Get("RateLimit"), r.path)
		}
	}
	require.Zero(t, checks, "skipped requests never reach the limiter")
	require.Equal(t, 9, s.Calls())
}

func TestMiddlewareFailsOpenWhenLimiterErrors(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	failing := limiterFunc(func(context.Context, string, Class, Limit) (Result, error) {
		return Result{}, errors.New("connection refused")
	})
	limits := map[Class]Limit{Reads: {Rate: 1, Burst: 1, Period: time.Minute}}
	s := newTestServer(t, Middleware(failing, limits, classify, keyOf, log))

	for range 5 {
		rec := s.do(http.MethodGet, "/v1/things", "partner-a")
		require.Equal(t, http.StatusOK, rec.Code)
		require.Empty(t, rec.Header().Get("RateLimit-Policy"))
		require.Empty(t, rec.Header().Get("RateLimit"))
		require.Empty(t, rec.Header().Get("Retry-After"))
	}
	require.Equal(t, 5, s.Calls())
	lines := logs.Lines()
	require.Len(t, lines, 1, "one line per minute at most")
	require.Contains(t, lines[0], "rate limiter failed")
	require.Contains(t, lines[0], "connection refused")
	require.Contains(t, lines[0], "class=reads")
	require.NotContains(t, lines[0], "partner-a", "keys stay out of the logs")
}

func TestMiddlewareDoesNotLogCanceledRequests(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	canceled := limiterFunc(func(ctx context.Context, _ string, _ Class, _ Limit) (Result, error) {
		return Result{}, ctx.Err()
	})
	limits := map[Class]Limit{Reads: {Rate: 1, Burst: 1, Period: time.Minute}}
	s := newTestServer(t, Middleware(canceled, limits, classify, keyOf, log))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodGet, "/v1/things", nil).WithContext(ctx)
	req.Header.Set("X-Test-Key", "partner-a")
	rec := httptest.NewRecorder()
	s.e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Empty(t, logs.Lines(), "a client hanging up is not a limiter outage")
}

func TestMiddlewareFailsOpenWhenRedisIsDown(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	limits := map[Class]Limit{Writes: {Rate: 1, Burst: 1, Period: time.Minute}}
	s := newTestServer(t, Middleware(NewRedis(closedPortClient(t)), limits, classify, keyOf, log))

	for range 3 {
		rec := s.do(http.MethodPost, "/v1/things", "partner-a")
		require.Equal(t, http.StatusOK, rec.Code, "a limit it cannot check does not refuse anyone")
		require.Empty(t, rec.Header().Get("RateLimit-Policy"))
		require.Empty(t, rec.Header().Get("RateLimit"))
	}
	require.Equal(t, 3, s.Calls())
	require.Len(t, logs.Lines(), 1)
	require.Contains(t, logs.Lines()[0], "ratelimit: redis")
}

// twoInstances returns two test servers limited under limits through Redis, each
// with its own client, as two instances of the service are, sharing one budget
// per key (the keys get a prefix of the test's own).
func twoInstances(t *testing.T, limits map[Class]Limit) (a, b *testServer) {
	t.Helper()
	first, second := newRedisClient(t), newRedisClient(t)
	prefix := testPrefix(t, first)
	keyOf := func(c echo.Context) string { return prefix + c.Request().Header.Get("X-Test-Key") }
	return newTestServer(t, Middleware(NewRedis(first), limits, classify, keyOf, discardLogger())),
		newTestServer(t, Middleware(NewRedis(second), limits, classify, keyOf, discardLogger()))
}

func TestMiddlewareWithRedisSharesBudgetAcrossInstances(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t, map[Class]Limit{Writes: {Rate: 1, Burst: 2, Period: time.Minute}})

	rec := a.do(http.MethodPost, "/v1/things", "partner-a")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, `"writes";q=2;w=120`, rec.Header().Get("RateLimit-Policy"))
	require.Regexp(t, `^"writes";r=1;t=(59|60)$`, rec.Header().Get("RateLimit"))

	rec = b.do(http.MethodPost, "/v1/things", "partner-a")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Regexp(t, `^"writes";r=0;t=1(19|20)$`, rec.Header().Get("RateLimit"), "instance b sees a's request")

	rec = a.do(http.MethodPost, "/v1/things", "partner-a")
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, retry, 1)
	require.LessOrEqual(t, retry, 60)
}

// TestMiddlewareWithRedisLeasesSharesBudgetAcrossInstances: with a budget large
// enough for leases, two instances still let through no more than the one bucket
// holds, and refuse the rest with 429 and Retry-After.
func TestMiddlewareWithRedisLeasesSharesBudgetAcrossInstances(t *testing.T) {
	t.Parallel()
	limit := Limit{Rate: 100, Burst: 200, Period: time.Hour}
	require.Greater(t, leaseSize(limit), 1)
	a, b := twoInstances(t, map[Class]Limit{Writes: limit})
	servers := []*testServer{a, b}
	var allowed, refused int
	for i := range 300 {
		rec := servers[i%2].do(http.MethodPost, "/v1/things", "partner-a")
		switch rec.Code {
		case http.StatusOK:
			allowed++
		case http.StatusTooManyRequests:
			refused++
			require.NotEmpty(t, rec.Header().Get("Retry-After"))
		default:
			t.Fatalf("request %d: status %d", i, rec.Code)
		}
	}
	require.LessOrEqual(t, allowed, 200, "never more than the shared bucket")
	require.GreaterOrEqual(t, allowed, 198, "GCRA in floating point may leave a fraction unspent")
	require.Equal(t, 300, allowed+refused)
	require.Equal(t, allowed, servers[0].Calls()+servers[1].Calls())
}

func TestMiddlewarePanicsOnInvalidLimit(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() {
		Middleware(NewMemory(), map[Class]Limit{Reads: {Rate: 1}}, classify, keyOf, nil)
	})
}

func TestThrottledLogLogsAtMostOncePerInterval(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	clock := newFakeClock()
	tl := &throttledLog{log: slog.New(slog.NewTextHandler(&logs, nil)), every: time.Minute, now: clock.Now}
	boom := errors.New("boom")

	tl.record(Reads, boom)
	clock.Advance(30 * time.Second)
	tl.record(Reads, boom)
	tl.record(Writes, boom)
	require.Len(t, logs.Lines(), 1)
	require.Contains(t, logs.Lines()[0], "suppressed=0")

	clock.Advance(31 * time.Second)
	tl.record(Writes, boom)
	lines := logs.Lines()
	require.Len(t, lines, 2)
	require.Contains(t, lines[1], "suppressed=2", "the next line says how many were not logged")
	require.Contains(t, lines[1], "class=writes")
}

func TestSFStringEscapes(t *testing.T) {
	t.Parallel()
	require.Equal(t, `"reads"`, sfString(Reads))
	require.Equal(t, `"a\"b\\c"`, sfString(`a"b\c`))
}

// TestRemainingNeverExceedsQuota: with a burst above the rate (the staging
// defaults), the first answer's remaining count stays within the announced quota.
func TestRemainingNeverExceedsQuota(t *testing.T) {
	t.Parallel()
	limits := map[Class]Limit{Writes: {Rate: 500, Burst: 1000, Period: time.Second}}
	s := newTestServer(t, Middleware(NewMemory(), limits, classify, keyOf, discardLogger()))
	rec := s.do(http.MethodPost, "/v1/things", "partner-a")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, `"writes";q=1000;w=2`, rec.Header().Get("RateLimit-Policy"))
	require.Equal(t, `"writes";r=999;t=1`, rec.Header().Get("RateLimit"))
}
