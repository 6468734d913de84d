package webkit_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/webkit"
)

// clock is a settable time for the lifetimes' edges.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func requestWith(c *http.Cookie) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/site", nil)
	if c != nil {
		r.AddCookie(c)
	}
	return r
}

// A session's cookie is HttpOnly, SameSite=Strict, for the site's path, Secure
// as configured; the session ends after its idle time unused, after its
// absolute time however used, and when ended; EndWhere ends every match.
func TestSessions(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	s := webkit.NewSessions[string](webkit.SessionConfig{Cookie: "site_session", Path: "/site", Secure: true,
		Idle: 30 * time.Minute, Absolute: 2 * time.Hour, Now: clk.Now})

	rec := httptest.NewRecorder()
	ss := s.Create(rec, "ada")
	cookies := rec.Result().Cookies()
	require.Len(t, cookies, 1)
	c := cookies[0]
	require.Equal(t, "site_session", c.Name)
	require.Equal(t, ss.ID, c.Value)
	require.Equal(t, "/site", c.Path)
	require.True(t, c.HttpOnly)
	require.True(t, c.Secure)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	require.Equal(t, 7200, c.MaxAge)
	require.NotEqual(t, ss.ID, ss.CSRF)

	require.Nil(t, s.Get(requestWith(nil)), "no cookie, no session")
	require.Nil(t, s.Get(requestWith(&http.Cookie{Name: "site_session", Value: "forged"})))
	got := s.Get(requestWith(c))
	require.NotNil(t, got)
	require.Equal(t, "ada", got.Data)

	// Used every 29 minutes it lives to its absolute end, not a moment more.
	for range 4 {
		clk.add(29 * time.Minute)
		require.NotNil(t, s.Get(requestWith(c)))
	}
	clk.add(5 * time.Minute) // 2 h 01 min old
	require.Nil(t, s.Get(requestWith(c)), "past its absolute lifetime")

	// Unused for longer than its idle time, it ends.
	rec = httptest.NewRecorder()
	idle := s.Create(rec, "bob")
	clk.add(30*time.Minute + time.Second)
	require.Nil(t, s.Get(requestWith(&http.Cookie{Name: "site_session", Value: idle.ID})))

	// End clears the cookie; EndWhere ends every session of one person.
	rec = httptest.NewRecorder()
	ended := s.Create(rec, "cy")
	rec = httptest.NewRecorder()
	s.End(rec, ended.ID)
	require.Equal(t, -1, rec.Result().Cookies()[0].MaxAge)
	require.Nil(t, s.Get(requestWith(&http.Cookie{Name: "site_session", Value: ended.ID})))
	a1, a2, b := s.Create(httptest.NewRecorder(), "dee"), s.Create(httptest.NewRecorder(), "dee"), s.Create(httptest.NewRecorder(), "eve")
	require.Equal(t, 2, s.EndWhere(func(who string) bool { return who == "dee" }))
	for _, gone := range []string{a1.ID, a2.ID} {
		require.Nil(t, s.Get(requestWith(&http.Cookie{Name: "site_session", Value: gone})))
	}
	require.NotNil(t, s.Get(requestWith(&http.Cookie{Name: "site_session", Value: b.ID})))
}

// A form's CSRF token must be the session's own.
func TestCSRF(t *testing.T) {
	t.Parallel()
	s := webkit.NewSessions[int](webkit.SessionConfig{Cookie: "c", Path: "/", Idle: time.Hour, Absolute: time.Hour})
	ss := s.Create(httptest.NewRecorder(), 1)
	other := s.Create(httptest.NewRecorder(), 2)
	post := func(token string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	}
	require.True(t, ss.ValidCSRF(post(ss.CSRF)))
	require.False(t, ss.ValidCSRF(post("")))
	require.False(t, ss.ValidCSRF(post(other.CSRF)), "another session's token")
	require.False(t, ss.ValidCSRF(post(ss.CSRF[:len(ss.CSRF)-1])))
}

// After Max failures within the window a key is blocked, other keys are not,
// and the block lifts as the failures leave the window.
func TestLimiter(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	l := webkit.NewLimiter(3, 5*time.Minute, clk.Now)
	for range 2 {
		l.Fail("10.0.0.1")
		clk.add(time.Minute)
	}
	require.False(t, l.Blocked("10.0.0.1"))
	l.Fail("10.0.0.1")
	require.True(t, l.Blocked("10.0.0.1"))
	require.False(t, l.Blocked("10.0.0.2"))
	clk.add(3*time.Minute + time.Second) // the first failure is 5 min 1 s old
	require.False(t, l.Blocked("10.0.0.1"))
}

// Every answer carries the CSP and the other security headers; only the static
// prefix may be cached.
func TestHeaders(t *testing.T) {
	t.Parallel()
	h := webkit.Headers(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), "/site/static/")
	for path, cached := range map[string]bool{"/site": false, "/site/static/kit.css": true} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, webkit.CSP, rec.Header().Get("Content-Security-Policy"))
		require.Contains(t, webkit.CSP, "default-src 'none'")
		require.NotContains(t, webkit.CSP, "script-src")
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
		require.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"))
		require.Equal(t, "no-referrer", rec.Header().Get("Referrer-Policy"))
		require.Equal(t, !cached, rec.Header().Get("Cache-Control") == "no-store", path)
	}
	rec := httptest.NewRecorder()
	webkit.Stylesheet(rec, httptest.NewRequest(http.MethodGet, "/site/static/kit.css", nil))
	require.Equal(t, "text/css; charset=utf-8", rec.Header().Get("Content-Type"))
	require.Contains(t, rec.Body.String(), "{")
}
