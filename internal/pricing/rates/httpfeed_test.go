package rates_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/pricing/rates"
)

// feedServer is a local rate feed whose response can be changed mid-test.
type feedServer struct {
	*httptest.Server
	hits atomic.Int64

	mu     sync.Mutex
	status int
	body   string
}

func newFeedServer(t *testing.T, status int, body string) *feedServer {
	t.Helper()
	fs := &feedServer{status: status, body: body}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.hits.Add(1)
		if r.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		fs.mu.Lock()
		status, body := fs.status, fs.body
		fs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *feedServer) set(status int, body string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.status, fs.body = status, body
}

// newFeed builds a feed for srv. Each test uses the server's own client:
// httptest.Server.Close resets http.DefaultTransport, which would break
// requests of other tests running in parallel.
func newFeed(t *testing.T, srv *httptest.Server, url string, fields map[string]string, now func() time.Time) *rates.HTTPFeed {
	t.Helper()
	f, err := rates.NewHTTPFeed(rates.HTTPFeedConfig{
		URL:      url,
		Client:   srv.Client(),
		Fields:   fields,
		Interval: time.Minute,
		Now:      now,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	return f
}

func TestHTTPFeedParsesValuesExactly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
		body string
		want string
	}{
		{name: "string value", path: "data.usdt_ngn", body: `{"data":{"usdt_ngn":"1550.25"}}`, want: "1550.25"},
		{name: "number value", path: "data.usdt_ngn", body: `{"data":{"usdt_ngn":1550.25}}`, want: "1550.25"},
		{name: "string keeps all digits", path: "data.usdt_ngn", body: `{"data":{"usdt_ngn":"1550.123456789"}}`, want: "1550.123456789"},
		{name: "number keeps all digits", path: "data.usdt_ngn", body: `{"data":{"usdt_ngn":1550.123456789}}`, want: "1550.123456789"},
		{name: "number beyond float64 precision", path: "p", body: `{"p":1550.12345678901234567891}`, want: "1550.12345678901234567891"},
		{name: "integer number", path: "p", body: `{"p":1550}`, want: "1550"},
		{name: "exponent number", path: "p", body: `{"p":1.5501e3}`, want: "1550.1"},
		{name: "top-level field", path: "usdt", body: `{"usdt":"1550"}`, want: "1550"},
		{name: "deeply nested", path: "a.b.c.d", body: `{"a":{"x":1,"b":{"c":{"d":"1549.75"}}}}`, want: "1549.75"},
		{name: "extra fields and trailing whitespace", path: "r.v", body: "{\"meta\":[1,2],\"r\":{\"v\":\"1550\",\"w\":true}}\n\n", want: "1550"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFeedServer(t, http.StatusOK, tc.body)
			clock := newFakeClock(t0)
			feed := newFeed(t, srv.Server, srv.URL, map[string]string{"usdt": tc.path}, clock.Now)

			require.NoError(t, feed.Refresh(context.Background()))
			clock.Advance(time.Minute) // AsOf is the fetch time, not the read time
			r, err := feed.Rate(context.Background(), "usdt")
			require.NoError(t, err)
			requireDecimal(t, tc.want, r.Value)
			require.Equal(t, t0, r.AsOf)
		})
	}
}

// badResponses are feed responses that must not produce a rate for usdt
// (configured at path data.usdt_ngn).
var badResponses = []struct {
	name    string
	status  int
	body    string
	wantErr string
}{
	{name: "500", status: http.StatusInternalServerError, body: `{"data":{"usdt_ngn":"1550"}}`, wantErr: "unexpected status 500"},
	{name: "404", status: http.StatusNotFound, body: `not found`, wantErr: "unexpected status 404"},
	{name: "429", status: http.StatusTooManyRequests, body: ``, wantErr: "unexpected status 429"},
	{name: "malformed JSON", status: http.StatusOK, body: `{"data":{"usdt_ngn":"1550"`, wantErr: "malformed JSON"},
	{name: "not JSON", status: http.StatusOK, body: `<html>oops</html>`, wantErr: "malformed JSON"},
	{name: "empty body", status: http.StatusOK, body: ``, wantErr: "malformed JSON"},
	{name: "trailing garbage", status: http.StatusOK, body: `{"data":{"usdt_ngn":"1550"}} x`, wantErr: "unexpected data after"},
	{name: "two documents", status: http.StatusOK, body: `{"data":{"usdt_ngn":"1550"}}{}`, wantErr: "unexpected data after"},
	{name: "document is an array", status: http.StatusOK, body: `[{"data":{"usdt_ngn":"1550"}}]`, wantErr: "document is not a JSON object"},
	{name: "missing field", status: http.StatusOK, body: `{"data":{"usdc_ngn":"1550"}}`, wantErr: `"data.usdt_ngn" is missing`},
	{name: "missing parent", status: http.StatusOK, body: `{"other":{}}`, wantErr: `"data" is missing`},
	{name: "parent not an object", status: http.StatusOK, body: `{"data":"1550"}`, wantErr: `"data" is not a JSON object`},
	{name: "zero number", status: http.StatusOK, body: `{"data":{"usdt_ngn":0}}`, wantErr: "must be positive"},
	{name: "zero string", status: http.StatusOK, body: `{"data":{"usdt_ngn":"0.00"}}`, wantErr: "must be positive"},
	{name: "negative number", status: http.StatusOK, body: `{"data":{"usdt_ngn":-1550.25}}`, wantErr: "must be positive"},
	{name: "negative string", status: http.StatusOK, body: `{"data":{"usdt_ngn":"-1"}}`, wantErr: "must be positive"},
	{name: "non-numeric string", status: http.StatusOK, body: `{"data":{"usdt_ngn":"about 1550"}}`, wantErr: "invalid decimal"},
	{name: "empty string", status: http.StatusOK, body: `{"data":{"usdt_ngn":""}}`, wantErr: "invalid decimal"},
	{name: "null", status: http.StatusOK, body: `{"data":{"usdt_ngn":null}}`, wantErr: "null"},
	{name: "boolean", status: http.StatusOK, body: `{"data":{"usdt_ngn":true}}`, wantErr: "boolean"},
	{name: "object", status: http.StatusOK, body: `{"data":{"usdt_ngn":{"v":1}}}`, wantErr: "object"},
	{name: "array", status: http.StatusOK, body: `{"data":{"usdt_ngn":[1550]}}`, wantErr: "array"},
	{name: "absurd exponent", status: http.StatusOK, body: `{"data":{"usdt_ngn":1e500}}`, wantErr: "out of range"},
}

func TestHTTPFeedRejectsBadResponses(t *testing.T) {
	t.Parallel()
	for _, tc := range badResponses {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFeedServer(t, tc.status, tc.body)
			feed := newFeed(t, srv.Server, srv.URL, map[string]string{"usdt": "data.usdt_ngn"}, nil)

			err := feed.Refresh(context.Background())
			require.ErrorContains(t, err, tc.wantErr)
			require.NotErrorIs(t, err, context.Canceled)

			// Never fetched successfully: unavailable, and the reason is visible.
			_, err = feed.Rate(context.Background(), "usdt")
			require.ErrorIs(t, err, rates.ErrUnavailable)
			require.ErrorContains(t, err, "fetched yet")
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestHTTPFeedKeepsPreviousValueAfterFailedRefresh(t *testing.T) {
	t.Parallel()
	for _, tc := range badResponses {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFeedServer(t, http.StatusOK, `{"data":{"usdt_ngn":"1550.123456789"}}`)
			clock := newFakeClock(t0)
			feed := newFeed(t, srv.Server, srv.URL, map[string]string{"usdt": "data.usdt_ngn"}, clock.Now)
			require.NoError(t, feed.Refresh(context.Background()))

			srv.set(tc.status, tc.body)
			clock.Advance(time.Minute)
			require.ErrorContains(t, feed.Refresh(context.Background()), tc.wantErr)

			r, err := feed.Rate(context.Background(), "usdt")
			require.NoError(t, err)
			requireDecimal(t, "1550.123456789", r.Value)
			require.Equal(t, t0, r.AsOf, "AsOf must stay at the last successful fetch")

			// Recovery replaces the value and moves AsOf forward.
			srv.set(http.StatusOK, `{"data":{"usdt_ngn":1551}}`)
			clock.Advance(time.Minute)
			require.NoError(t, feed.Refresh(context.Background()))
			r, err = feed.Rate(context.Background(), "usdt")
			require.NoError(t, err)
			requireDecimal(t, "1551", r.Value)
			require.Equal(t, t0.Add(2*time.Minute), r.AsOf)
		})
	}
}

func TestHTTPFeedUpdatesTokensIndependently(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, http.StatusOK, `{"rates":{"usdt":"1550","usdc":"1549"}}`)
	clock := newFakeClock(t0)
	feed := newFeed(t, srv.Server, srv.URL, map[string]string{"usdt": "rates.usdt", "usdc": "rates.usdc"}, clock.Now)
	require.NoError(t, feed.Refresh(context.Background()))

	// usdc disappears from the document; usdt still updates.
	srv.set(http.StatusOK, `{"rates":{"usdt":"1560"}}`)
	clock.Advance(time.Minute)
	err := feed.Refresh(context.Background())
	require.ErrorContains(t, err, `token "usdc"`)
	require.NotContains(t, err.Error(), `token "usdt"`)

	usdt, err := feed.Rate(context.Background(), "usdt")
	require.NoError(t, err)
	requireDecimal(t, "1560", usdt.Value)
	require.Equal(t, t0.Add(time.Minute), usdt.AsOf)

	usdc, err := feed.Rate(context.Background(), "usdc")
	require.NoError(t, err)
	requireDecimal(t, "1549", usdc.Value)
	require.Equal(t, t0, usdc.AsOf)
}

func TestHTTPFeedRateUnavailable(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, http.StatusOK, `{"usdt":"1550"}`)
	feed := newFeed(t, srv.Server, srv.URL, map[string]string{"USDT ": "usdt"}, nil)

	_, err := feed.Rate(context.Background(), "usdt")
	require.ErrorIs(t, err, rates.ErrUnavailable, "before any refresh")
	require.ErrorContains(t, err, "fetched yet")
	require.Zero(t, srv.hits.Load(), "Rate must not fetch")

	require.NoError(t, feed.Refresh(context.Background()))
	r, err := feed.Rate(context.Background(), "usdt")
	require.NoError(t, err)
	requireDecimal(t, "1550", r.Value)

	_, err = feed.Rate(context.Background(), "usdc")
	require.ErrorIs(t, err, rates.ErrUnavailable, "token not configured")
	require.ErrorContains(t, err, "not configured")
}

func TestHTTPFeedRefreshHonoursContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	feed := newFeed(t, srv, srv.URL, map[string]string{"usdt": "usdt"}, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := feed.Refresh(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestHTTPFeedKeepsQueryOutOfErrors(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, http.StatusBadGateway, "")
	feed := newFeed(t, srv.Server, srv.URL+"/v1/rates?api_key=s3cret", map[string]string{"usdt": "usdt"}, nil)
	err := feed.Refresh(context.Background())
	require.ErrorContains(t, err, "/v1/rates")
	require.NotContains(t, err.Error(), "s3cret")

	// Transport errors (*url.Error) would otherwise repeat the full URL.
	srv.Close()
	err = feed.Refresh(context.Background())
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}

func TestNewHTTPFeedValidatesConfig(t *testing.T) {
	t.Parallel()
	valid := func() rates.HTTPFeedConfig {
		return rates.HTTPFeedConfig{
			URL:      "https://feed.example/rates",
			Fields:   map[string]string{"usdt": "data.usdt_ngn"},
			Interval: time.Minute,
		}
	}
	tests := []struct {
		name    string
		mutate  func(*rates.HTTPFeedConfig)
		wantErr string
	}{
		{name: "valid", mutate: func(*rates.HTTPFeedConfig) {}},
		{name: "empty URL", mutate: func(c *rates.HTTPFeedConfig) { c.URL = " " }, wantErr: "URL is empty"},
		{name: "relative URL", mutate: func(c *rates.HTTPFeedConfig) { c.URL = "/rates" }, wantErr: "absolute http or https"},
		{name: "other scheme", mutate: func(c *rates.HTTPFeedConfig) { c.URL = "ftp://feed.example/rates" }, wantErr: "absolute http or https"},
		{name: "unparsable URL", mutate: func(c *rates.HTTPFeedConfig) { c.URL = "http://[::1" }, wantErr: "URL is not valid"},
		{name: "no fields", mutate: func(c *rates.HTTPFeedConfig) { c.Fields = nil }, wantErr: "no fields"},
		{name: "empty token", mutate: func(c *rates.HTTPFeedConfig) { c.Fields = map[string]string{" ": "x"} }, wantErr: "empty token"},
		{name: "duplicate token", mutate: func(c *rates.HTTPFeedConfig) { c.Fields = map[string]string{"usdt": "a", "USDT": "b"} }, wantErr: "more than once"},
		{name: "empty path", mutate: func(c *rates.HTTPFeedConfig) { c.Fields = map[string]string{"usdt": ""} }, wantErr: "path is empty"},
		{name: "empty path segment", mutate: func(c *rates.HTTPFeedConfig) { c.Fields = map[string]string{"usdt": "data..usdt"} }, wantErr: "empty segment"},
		{name: "zero interval", mutate: func(c *rates.HTTPFeedConfig) { c.Interval = 0 }, wantErr: "interval must be positive"},
		{name: "negative interval", mutate: func(c *rates.HTTPFeedConfig) { c.Interval = -time.Second }, wantErr: "interval must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid()
			tc.mutate(&cfg)
			feed, err := rates.NewHTTPFeed(cfg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Nil(t, feed)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, feed)
		})
	}
}

func TestParseFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{name: "single", in: "usdt=data.usdt_ngn", want: map[string]string{"usdt": "data.usdt_ngn"}},
		{name: "several, trimmed and lower-cased", in: " USDT = data.usdt_ngn , usdc=usdc ", want: map[string]string{"usdt": "data.usdt_ngn", "usdc": "usdc"}},
		{name: "empty", in: "", wantErr: "empty"},
		{name: "trailing comma", in: "usdt=a,", wantErr: "entry 2 is empty"},
		{name: "no equals", in: "usdt", wantErr: "token=value"},
		{name: "empty token", in: "=a.b", wantErr: "empty token"},
		{name: "empty path", in: "usdt=", wantErr: "empty value"},
		{name: "leading dot", in: "usdt=.a", wantErr: "empty segment"},
		{name: "trailing dot", in: "usdt=a.", wantErr: "empty segment"},
		{name: "double dot", in: "usdt=a..b", wantErr: "empty segment"},
		{name: "duplicate", in: "usdt=a,Usdt=b", wantErr: "more than once"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := rates.ParseFields(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestHTTPFeedWithMaxAge(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, http.StatusOK, `{"data":{"usdt_ngn":"1550.5"}}`)
	clock := newFakeClock(t0)
	feed := newFeed(t, srv.Server, srv.URL, map[string]string{"usdt": "data.usdt_ngn"}, clock.Now)
	src := rates.WithMaxAge(feed, 5*time.Minute, clock.Now)
	ctx := context.Background()

	_, err := src.Rate(ctx, "usdt")
	require.ErrorIs(t, err, rates.ErrUnavailable, "never fetched")

	require.NoError(t, feed.Refresh(ctx))
	clock.Advance(5 * time.Minute)
	r, err := src.Rate(ctx, "usdt")
	require.NoError(t, err)
	requireDecimal(t, "1550.5", r.Value)

	// The feed breaks; the last good value ages out.
	srv.set(http.StatusServiceUnavailable, "")
	require.Error(t, feed.Refresh(ctx))
	clock.Advance(time.Second)
	_, err = src.Rate(ctx, "usdt")
	require.ErrorIs(t, err, rates.ErrUnavailable)
	require.ErrorContains(t, err, "stale: 5m1s old")

	// The feed recovers; the rate is usable again.
	srv.set(http.StatusOK, `{"data":{"usdt_ngn":"1551"}}`)
	require.NoError(t, feed.Refresh(ctx))
	r, err = src.Rate(ctx, "usdt")
	require.NoError(t, err)
	requireDecimal(t, "1551", r.Value)
	require.Equal(t, clock.Now(), r.AsOf)
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestHTTPFeedRunRefreshesUntilCancelled(t *testing.T) {
	t.Parallel()
	// Start broken so Run has to log and keep going.
	srv := newFeedServer(t, http.StatusInternalServerError, "")
	var logs syncBuffer
	feed, err := rates.NewHTTPFeed(rates.HTTPFeedConfig{
		URL:      srv.URL + "?key=s3cret",
		Client:   srv.Client(),
		Fields:   map[string]string{"usdt": "usdt"},
		Interval: 10 * time.Millisecond,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		feed.Run(ctx)
	}()

	// The first refresh happens immediately, well before the first tick would
	// matter, and later ones keep coming despite failures.
	require.Eventually(t, func() bool { return srv.hits.Load() >= 3 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "refresh failed") }, 5*time.Second, time.Millisecond)
	_, err = feed.Rate(ctx, "usdt")
	require.ErrorIs(t, err, rates.ErrUnavailable)

	srv.set(http.StatusOK, `{"usdt":"1550.75"}`)
	require.Eventually(t, func() bool {
		r, err := feed.Rate(ctx, "usdt")
		return err == nil && r.Value.String() == "1550.75"
	}, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "recovered") }, 5*time.Second, time.Millisecond)
	require.NotContains(t, logs.String(), "s3cret")

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	// A request the client sent just before the cancel may reach the server a
	// moment after Run returned; after that, nothing more arrives.
	time.Sleep(50 * time.Millisecond)
	stopped := srv.hits.Load()
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, stopped, srv.hits.Load(), "no refreshes after Run returned")

	// The last good value is still served after Run stops.
	r, err := feed.Rate(context.Background(), "usdt")
	require.NoError(t, err)
	requireDecimal(t, "1550.75", r.Value)
}

func TestHTTPFeedRunRefreshesImmediately(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, http.StatusOK, `{"usdt":"1550"}`)
	feed, err := rates.NewHTTPFeed(rates.HTTPFeedConfig{
		URL:      srv.URL,
		Client:   srv.Client(),
		Fields:   map[string]string{"usdt": "usdt"},
		Interval: time.Hour,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		feed.Run(ctx)
	}()
	require.Eventually(t, func() bool {
		_, err := feed.Rate(ctx, "usdt")
		return err == nil
	}, 5*time.Second, time.Millisecond)
	cancel()
	<-done
	require.EqualValues(t, 1, srv.hits.Load())
}

func TestHTTPFeedRunReturnsForCancelledContext(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, http.StatusOK, `{"usdt":"1550"}`)
	feed := newFeed(t, srv.Server, srv.URL, map[string]string{"usdt": "usdt"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		feed.Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return for a cancelled context")
	}
}

func TestHTTPFeedConcurrentUse(t *testing.T) {
	t.Parallel()
	srv := newFeedServer(t, http.StatusOK, `{"usdt":"1550","usdc":1549.5}`)
	feed, err := rates.NewHTTPFeed(rates.HTTPFeedConfig{
		URL:      srv.URL,
		Client:   srv.Client(),
		Fields:   map[string]string{"usdt": "usdt", "usdc": "usdc"},
		Interval: time.Millisecond,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	require.NoError(t, feed.Refresh(context.Background()))

	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		feed.Run(ctx)
	}()

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Go(func() {
			tok := []string{"usdt", "usdc"}[i%2]
			for range 200 {
				r, err := feed.Rate(context.Background(), tok)
				if err != nil {
					errs <- err
					return
				}
				if !r.Value.IsPositive() || r.AsOf.IsZero() {
					errs <- errors.New("bad rate " + r.Value.String())
					return
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if err := feed.Refresh(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	cancel()
	<-runDone
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
