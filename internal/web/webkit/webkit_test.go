package webkit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

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

// eachDatabase runs fn as a parallel subtest over a migrated PostgreSQL schema
// and a migrated SQLite file: the sites' state lives in the database.
func eachDatabase(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	t.Helper()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			fn(t, st)
		})
	}
}

// A session's cookie is HttpOnly, SameSite=Strict, for the site's path, Secure
// as configured; the session ends after its idle time unused, after its
// absolute time however used, and when ended; EndAll ends every session of one
// person. Two Sessions over one database (two instances) see the same sessions,
// and the database holds no cookie's token.
func TestSessions(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		clk := &clock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
		cfg := webkit.SessionConfig{Cookie: "site_session", Path: "/site", Secure: true,
			Idle: 30 * time.Minute, Absolute: 2 * time.Hour, Now: clk.Now}
		s, other := webkit.NewSessions[string](cfg, st), webkit.NewSessions[string](cfg, st)

		rec := httptest.NewRecorder()
		ss, err := s.Create(ctx, rec, "a", "ada")
		require.NoError(t, err)
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
		rows, err := st.SQL().Query("SELECT token_hash, data, csrf FROM web_sessions")
		require.NoError(t, err)
		for rows.Next() {
			var hash, data, csrf string
			require.NoError(t, rows.Scan(&hash, &data, &csrf))
			require.NotContains(t, hash+data+csrf, ss.ID, "the token is not in the database")
		}
		require.NoError(t, rows.Close())

		require.Nil(t, s.Get(requestWith(nil)), "no cookie, no session")
		require.Nil(t, s.Get(requestWith(&http.Cookie{Name: "site_session", Value: "forged"})))
		got := other.Get(requestWith(c))
		require.NotNil(t, got, "another instance serves the session")
		require.Equal(t, "ada", got.Data)
		require.Equal(t, ss.CSRF, got.CSRF)

		// Used every 29 minutes it lives to its absolute end, not a moment more.
		for i := range 4 {
			clk.add(29 * time.Minute)
			require.NotNil(t, []*webkit.Sessions[string]{s, other}[i%2].Get(requestWith(c)))
		}
		clk.add(5 * time.Minute) // 2 h 01 min old
		require.Nil(t, s.Get(requestWith(c)), "past its absolute lifetime")

		// Unused for longer than its idle time, it ends.
		idle, err := s.Create(ctx, httptest.NewRecorder(), "b", "bob")
		require.NoError(t, err)
		clk.add(30*time.Minute + time.Second)
		require.Nil(t, s.Get(requestWith(&http.Cookie{Name: "site_session", Value: idle.ID})))

		// End clears the cookie and ends it on every instance; EndAll ends every
		// session of one person.
		ended, err := s.Create(ctx, httptest.NewRecorder(), "c", "cy")
		require.NoError(t, err)
		rec = httptest.NewRecorder()
		require.NoError(t, other.End(ctx, rec, ended.ID))
		require.Equal(t, -1, rec.Result().Cookies()[0].MaxAge)
		require.Nil(t, s.Get(requestWith(&http.Cookie{Name: "site_session", Value: ended.ID})))
		a1, _ := s.Create(ctx, httptest.NewRecorder(), "d", "dee")
		a2, _ := other.Create(ctx, httptest.NewRecorder(), "d", "dee")
		b, _ := s.Create(ctx, httptest.NewRecorder(), "e", "eve")
		n, err := other.EndAll(ctx, "d")
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		for _, gone := range []string{a1.ID, a2.ID} {
			require.Nil(t, s.Get(requestWith(&http.Cookie{Name: "site_session", Value: gone})))
		}
		require.NotNil(t, s.Get(requestWith(&http.Cookie{Name: "site_session", Value: b.ID})))

		// Another site's cookie name does not find this site's session.
		site2 := webkit.NewSessions[string](webkit.SessionConfig{Cookie: "other_session", Path: "/", Idle: time.Hour, Absolute: time.Hour, Now: clk.Now}, st)
		require.Nil(t, site2.Get(requestWith(&http.Cookie{Name: "other_session", Value: b.ID})))
	})
}

// A form's CSRF token must be the session's own.
func TestCSRF(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := webkit.NewSessions[int](webkit.SessionConfig{Cookie: "c", Path: "/", Idle: time.Hour, Absolute: time.Hour}, st)
		ss, err := s.Create(ctx, httptest.NewRecorder(), "1", 1)
		require.NoError(t, err)
		other, err := s.Create(ctx, httptest.NewRecorder(), "2", 2)
		require.NoError(t, err)
		post := func(token string) *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}
		require.True(t, ss.ValidCSRF(post(ss.CSRF)))
		require.False(t, ss.ValidCSRF(post("")))
		require.False(t, ss.ValidCSRF(post(other.CSRF)), "another session's token")
		require.False(t, ss.ValidCSRF(post(ss.CSRF[:len(ss.CSRF)-1])))
	})
}

// Attempts are reserved before the check: of 40 parallel tries on one key at
// most Max pass, on two limiters over one database (two instances); a success
// hands its attempt back; other keys are not touched; a full window refuses
// until it ends, and with back-off the next window after a full one is longer.
func TestLimiter(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		clk := &clock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
		a, b := webkit.NewLimiter(st, clk.Now), webkit.NewLimiter(st, clk.Now)
		limit := webkit.Limit{Max: 5, Window: 5 * time.Minute, Backoff: true}
		key := webkit.Key{Name: "test:" + t.Name(), Limit: limit}

		var passed atomic.Int32
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, wait, err := []*webkit.Limiter{a, b}[i%2].Reserve(ctx, key)
				assert.NoError(t, err)
				if res != nil {
					passed.Add(1)
				} else {
					assert.Positive(t, wait)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, int32(5), passed.Load(), "exactly the limit passed")

		// A success hands its attempt back.
		other := webkit.Key{Name: "test:other:" + t.Name(), Limit: limit}
		for range 10 {
			res, _, err := b.Reserve(ctx, other)
			require.NoError(t, err)
			require.NotNil(t, res)
			res.Release(ctx)
		}
		// Reserve takes every key or none.
		res, _, err := a.Reserve(ctx, other, key)
		require.NoError(t, err)
		require.Nil(t, res)
		res, _, err = a.Reserve(ctx, other)
		require.NoError(t, err)
		require.NotNil(t, res, "the refused pair took nothing of the free key")

		// The window ends, the next is twice as long (it ended full).
		clk.add(5*time.Minute + time.Second)
		for range 5 {
			res, _, err := a.Reserve(ctx, key)
			require.NoError(t, err)
			require.NotNil(t, res)
		}
		res, wait, err := a.Reserve(ctx, key)
		require.NoError(t, err)
		require.Nil(t, res)
		require.Equal(t, 10*time.Minute, wait, "backed off: twice the window")
	})
}

// A sent form acts once whatever instance sees it again; its record is per
// scope, refuses keys longer than MaxFormKey and never holds more than FormsKept.
func TestForms(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a, b := webkit.NewForms(st, nil), webkit.NewForms(st, nil)
		first, err := a.First(ctx, "p1", "k1")
		require.NoError(t, err)
		require.True(t, first)
		first, err = b.First(ctx, "p1", "k1")
		require.NoError(t, err)
		require.False(t, first, "the second sending, on another instance")
		first, err = b.First(ctx, "p2", "k1")
		require.NoError(t, err)
		require.True(t, first, "another partner's record is its own")
		first, err = a.First(ctx, "p1", strings.Repeat("k", 60<<10))
		require.NoError(t, err)
		require.False(t, first, "a 60 KB key is refused")
		for i := range webkit.FormsKept + 20 {
			_, err := a.First(ctx, "p3", fmt.Sprintf("key-%04d", i))
			require.NoError(t, err)
		}
		n, err := st.FormCount(ctx, "p3")
		require.NoError(t, err)
		require.Equal(t, int64(webkit.FormsKept), n)
	})
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
