package screening_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/screening"
)

var _ screening.Screener = (*screening.API)(nil)

const apiKey = "test-key-5f2d9c81a7"

// service is a screening service in the shape of Chainalysis' public sanctions
// API, answering each request with the next of its handlers (the last one
// repeats) and recording what it was sent.
type service struct {
	*httptest.Server
	mu       sync.Mutex
	handlers []http.HandlerFunc
	calls    []call
}

type call struct {
	at      time.Time
	key     string
	uri     string
	path    string
	accepts string
}

func newService(t *testing.T, handlers ...http.HandlerFunc) *service {
	t.Helper()
	s := &service{handlers: handlers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		i := min(len(s.calls), len(s.handlers)-1)
		s.calls = append(s.calls, call{at: time.Now(), key: r.Header.Get("X-API-Key"), uri: r.RequestURI, path: r.URL.Path, accepts: r.Header.Get("Accept")})
		h := s.handlers[i]
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *service) Calls() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

// base is the service's base URL, as Chainalysis': {host}/api/v1/address.
func (s *service) base() string { return s.URL + "/api/v1/address" }

func (s *service) host() string {
	u, _ := url.Parse(s.URL)
	return u.Host
}

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// hang answers nothing until the client gives up.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

func limited(retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", retryAfter)
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"message":"Too many requests"}`)
	}
}

const (
	sanctioned = `{"identifications":[{"category":"sanctions","name":"SANCTIONS: OFAC SDN Secondeye Solution 2021-04-15 7f367cc41522ce07553e823bf3be79a889debe1b",` +
		`"description":"Pakistan-based Secondeye Solution (SES) ...","url":"https://home.treasury.gov/news/press-releases/jy0126"},` +
		`{"category":"sanctions","name":"second","description":"","url":""}]}`
	clear = `{"identifications":[]}`
)

func newAPI(t *testing.T, s *service, opts screening.APIOptions) *screening.API {
	t.Helper()
	if opts.Backoff == 0 {
		opts.Backoff = 10 * time.Millisecond
	}
	a, err := screening.NewAPI(s.base(), apiKey, opts)
	require.NoError(t, err)
	return a
}

// TestAPIHitAndClear: an identification is a hit carrying the first one's fields;
// an empty list is clear. The key goes in X-API-Key, the address in the path; the
// finding names the host only and the answer's time.
func TestAPIHitAndClear(t *testing.T) {
	t.Parallel()
	s := newService(t, reply(200, sanctioned), reply(200, clear))
	a := newAPI(t, s, screening.APIOptions{})
	require.Equal(t, "api", a.Kind())
	require.True(t, a.Covers(chain.BEP20))
	require.True(t, a.Covers(chain.TRC20))
	ctx := context.Background()

	before := time.Now().Truncate(time.Second)
	f, err := a.Screen(ctx, chain.BEP20, "0x7F367cC41522cE07553e823bf3be79A889DEbe1B")
	require.NoError(t, err)
	at, err := time.Parse(time.RFC3339, f.Version)
	require.NoError(t, err, "the answer time in RFC 3339")
	require.False(t, at.Before(before))
	require.False(t, at.After(time.Now()))
	f.Version = ""
	require.Equal(t, screening.Finding{
		Screener: "api", Source: s.host(), Hit: true, Category: "sanctions",
		Name:        "SANCTIONS: OFAC SDN Secondeye Solution 2021-04-15 7f367cc41522ce07553e823bf3be79a889debe1b",
		Description: "Pakistan-based Secondeye Solution (SES) ...", URL: "https://home.treasury.gov/news/press-releases/jy0126",
	}, f)

	f, err = a.Screen(ctx, chain.TRC20, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
	require.NoError(t, err)
	require.False(t, f.Hit)
	require.NotEmpty(t, f.Version)
	require.Equal(t, screening.Finding{Screener: "api", Source: s.host(), Version: f.Version}, f)

	calls := s.Calls()
	require.Len(t, calls, 2)
	require.Equal(t, "/api/v1/address/0x7F367cC41522cE07553e823bf3be79A889DEbe1B", calls[0].uri)
	require.Equal(t, "/api/v1/address/TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", calls[1].uri)
	for _, c := range calls {
		require.Equal(t, apiKey, c.key)
		require.Equal(t, "application/json", c.accepts)
	}
}

// TestAPIAddressEscaped: the address is one path segment, escaped; the base's
// trailing slash does not double.
func TestAPIAddressEscaped(t *testing.T) {
	t.Parallel()
	s := newService(t, reply(200, clear))
	a, err := screening.NewAPI(s.base()+"/", apiKey, screening.APIOptions{})
	require.NoError(t, err)
	_, err = a.Screen(context.Background(), chain.BEP20, "0xab/../cd ef?x=1#y")
	require.NoError(t, err)
	c := s.Calls()[0]
	require.Equal(t, "/api/v1/address/0xab%2F..%2Fcd%20ef%3Fx=1%23y", c.uri)
	require.Equal(t, "/api/v1/address/0xab/../cd ef?x=1#y", c.path)
}

// TestAPINoAnswerIsNoClear: an answer without identifications, or not JSON, is an
// error: the combined verdict is unknown, never clear.
func TestAPINoAnswerIsNoClear(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{}`, `{"identifications":null}`, `<html>maintenance</html>`, ``} {
		s := newService(t, reply(200, body))
		a := newAPI(t, s, screening.APIOptions{})
		f, err := a.Screen(context.Background(), chain.BEP20, "0x01")
		require.ErrorContains(t, err, "not a screening answer", body)
		require.False(t, f.Hit)
		require.Equal(t, s.host(), f.Source)
		r := screening.Combined{a}.Screen(context.Background(), chain.BEP20, "0x01", time.Now())
		require.Equal(t, screening.Unknown, r.Verdict, body)
		require.Equal(t, s.host(), r.Findings[0].Source)
	}
}

// TestAPITimeoutRetried: an attempt that hangs past the timeout is abandoned and
// the request sent again; a later answer counts, and with every attempt hanging
// the screening fails after the attempts.
func TestAPITimeoutRetried(t *testing.T) {
	t.Parallel()
	opts := screening.APIOptions{Timeout: 150 * time.Millisecond, Attempts: 3}
	t.Run("answers later", func(t *testing.T) {
		t.Parallel()
		s := newService(t, hang, reply(200, clear))
		f, err := newAPI(t, s, opts).Screen(context.Background(), chain.BEP20, "0x01")
		require.NoError(t, err)
		require.False(t, f.Hit)
		require.Len(t, s.Calls(), 2)
	})
	t.Run("keeps hanging", func(t *testing.T) {
		t.Parallel()
		s := newService(t, hang)
		start := time.Now()
		_, err := newAPI(t, s, opts).Screen(context.Background(), chain.BEP20, "0x01")
		require.ErrorContains(t, err, "no answer within 150ms")
		require.ErrorContains(t, err, "3 attempts")
		require.Len(t, s.Calls(), 3)
		require.Less(t, time.Since(start), 2*time.Second, "each attempt bounded")
	})
	t.Run("the caller's deadline", func(t *testing.T) {
		t.Parallel()
		s := newService(t, hang)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := newAPI(t, s, screening.APIOptions{Timeout: time.Minute}).Screen(ctx, chain.BEP20, "0x01")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, s.Calls(), 1, "not retried past the caller's deadline")
	})
}

// TestAPIServerErrorsRetried: 5xx and a refused connection are tried again.
func TestAPIServerErrorsRetried(t *testing.T) {
	t.Parallel()
	s := newService(t, reply(502, "bad gateway"), reply(503, "{}"), reply(200, sanctioned))
	f, err := newAPI(t, s, screening.APIOptions{}).Screen(context.Background(), chain.BEP20, "0x01")
	require.NoError(t, err)
	require.True(t, f.Hit)
	require.Len(t, s.Calls(), 3)

	s = newService(t, reply(500, "internal error"))
	_, err = newAPI(t, s, screening.APIOptions{Attempts: 2}).Screen(context.Background(), chain.BEP20, "0x01")
	require.ErrorContains(t, err, "HTTP 500: internal error (2 attempts)")
	require.Len(t, s.Calls(), 2)

	down := newService(t, reply(200, clear))
	a := newAPI(t, down, screening.APIOptions{})
	down.Close()
	_, err = a.Screen(context.Background(), chain.BEP20, "0x01")
	require.ErrorContains(t, err, "connection refused")
	require.ErrorContains(t, err, "3 attempts")
}

// TestAPIRetryAfterHonoured: a 429 with Retry-After (seconds, or an HTTP date) is
// waited, then the request answered; a wait past the cap fails at once.
func TestAPIRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	t.Run("seconds", func(t *testing.T) {
		t.Parallel()
		s := newService(t, limited("1"), reply(200, clear))
		f, err := newAPI(t, s, screening.APIOptions{}).Screen(context.Background(), chain.BEP20, "0x01")
		require.NoError(t, err)
		require.False(t, f.Hit)
		calls := s.Calls()
		require.Len(t, calls, 2)
		require.GreaterOrEqual(t, calls[1].at.Sub(calls[0].at), time.Second, "the wait was honoured")
	})
	t.Run("HTTP date", func(t *testing.T) {
		t.Parallel()
		// An HTTP date has whole seconds: two seconds ahead is more than one away.
		s := newService(t, func(w http.ResponseWriter, r *http.Request) {
			limited(time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))(w, r)
		}, reply(200, sanctioned))
		f, err := newAPI(t, s, screening.APIOptions{}).Screen(context.Background(), chain.BEP20, "0x01")
		require.NoError(t, err)
		require.True(t, f.Hit)
		calls := s.Calls()
		require.Len(t, calls, 2)
		require.GreaterOrEqual(t, calls[1].at.Sub(calls[0].at), time.Second)
	})
	t.Run("later requests wait too", func(t *testing.T) {
		t.Parallel()
		s := newService(t, limited("1"), reply(200, clear))
		a := newAPI(t, s, screening.APIOptions{Attempts: 1})
		_, err := a.Screen(context.Background(), chain.BEP20, "0x01")
		require.ErrorContains(t, err, "rate-limited (HTTP 429)")
		_, err = a.Screen(context.Background(), chain.BEP20, "0x02")
		require.NoError(t, err)
		calls := s.Calls()
		require.GreaterOrEqual(t, calls[1].at.Sub(calls[0].at), time.Second, "the next screening waited for the service")
	})
	t.Run("past the cap", func(t *testing.T) {
		t.Parallel()
		s := newService(t, limited("120"), reply(200, clear))
		start := time.Now()
		_, err := newAPI(t, s, screening.APIOptions{}).Screen(context.Background(), chain.BEP20, "0x01")
		require.ErrorContains(t, err, "asked to wait 2m0s, more than 30s")
		require.Len(t, s.Calls(), 1)
		require.Less(t, time.Since(start), time.Second)
	})
	t.Run("past the caller's deadline", func(t *testing.T) {
		t.Parallel()
		s := newService(t, limited("5"), reply(200, clear))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := newAPI(t, s, screening.APIOptions{}).Screen(ctx, chain.BEP20, "0x01")
		require.ErrorContains(t, err, "past the screening's deadline")
		require.Len(t, s.Calls(), 1)
		require.Less(t, time.Since(start), 500*time.Millisecond, "gave up without waiting")
	})
}

// TestAPIKeyRefused: 401 and 403 say the key was refused, at once (no retry), and
// no error text carries the key, even when the service echoes it.
func TestAPIKeyRefused(t *testing.T) {
	t.Parallel()
	for _, status := range []int{401, 403} {
		s := newService(t, reply(status, `{"message":"invalid key `+apiKey+`"}`))
		_, err := newAPI(t, s, screening.APIOptions{}).Screen(context.Background(), chain.BEP20, "0x01")
		require.ErrorContains(t, err, "refused the API key (HTTP "+strconv.Itoa(status)+")")
		require.NotContains(t, err.Error(), apiKey)
		require.Len(t, s.Calls(), 1, "not retried")
	}
	s := newService(t, reply(400, `{"message":"bad request for key `+apiKey+`"}`))
	_, err := newAPI(t, s, screening.APIOptions{}).Screen(context.Background(), chain.BEP20, "0x01")
	require.ErrorContains(t, err, "HTTP 400")
	require.NotContains(t, err.Error(), apiKey)
	require.Len(t, s.Calls(), 1, "a 4xx is not retried")
}

// TestAPIOwnRateLimit: the client spaces its requests to its own limit, and fails
// a screening whose deadline the limit would pass.
func TestAPIOwnRateLimit(t *testing.T) {
	t.Parallel()
	s := newService(t, reply(200, clear))
	// 4 per second: a burst of 1, then 3 a second.
	a := newAPI(t, s, screening.APIOptions{Requests: 4, Per: time.Second})
	start := time.Now()
	for range 4 {
		_, err := a.Screen(context.Background(), chain.BEP20, "0x01")
		require.NoError(t, err)
	}
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "3 requests after the burst at 3 a second")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := a.Screen(ctx, chain.BEP20, "0x01")
	require.ErrorContains(t, err, "rate limit")
	require.Len(t, s.Calls(), 4)
}

// TestNewAPI: the URL must be http(s) and the key set; errors never show the URL's
// path or query (they may carry a key).
func TestNewAPI(t *testing.T) {
	t.Parallel()
	_, err := screening.NewAPI("ftp://example.com/x", apiKey, screening.APIOptions{})
	require.Error(t, err)
	_, err = screening.NewAPI("https://example.com/api?key=secret123", "", screening.APIOptions{})
	require.ErrorContains(t, err, "example.com")
	require.NotContains(t, err.Error(), "secret123")
	_, err = screening.NewAPI("://secret123", apiKey, screening.APIOptions{})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret123")
	a, err := screening.NewAPI("https://public.chainalysis.com/api/v1/address", apiKey, screening.APIOptions{})
	require.NoError(t, err)
	require.Equal(t, "public.chainalysis.com", a.Source())
}
