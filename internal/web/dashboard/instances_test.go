package dashboard_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit/actor"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// twoInstances runs two instances of the service on one database behind a
// round-robin reverse proxy (which, as proxies do, appends its peer to
// X-Forwarded-For) and returns the instances and the proxy's root address.
func twoInstances(t *testing.T, db testdb.Database, settings map[string]string) (a, b *apitest.Env, root string) {
	t.Helper()
	a, b = apitest.Start(t, db, settings), apitest.Start(t, db, settings)
	var next atomic.Int64
	var proxies []*httputil.ReverseProxy
	for _, env := range []*apitest.Env{a, b} {
		u, err := url.Parse(env.Root)
		require.NoError(t, err)
		proxies = append(proxies, httputil.NewSingleHostReverseProxy(u))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxies[next.Add(1)%2].ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return a, b, srv.URL
}

// noRedirects is an HTTP client with a cookie jar that shows redirects as they are.
func noRedirects(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signedOut leaves c's browser as it is when its session has ended: the
// session's cookie gone, the device cookie of its last sign-in kept.
func signedOut(t *testing.T, c *http.Client, base string) {
	t.Helper()
	u, err := url.Parse(base + "/")
	require.NoError(t, err)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	var kept []*http.Cookie
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "dashboard_device" {
			kept = append(kept, ck)
		}
	}
	require.Len(t, kept, 1, "a sign-in leaves a device cookie")
	jar.SetCookies(u, kept)
	c.Jar = jar
}

// postSignIn sends the sign-in form as client from the address forwardedFor
// (empty: no header) and returns the status.
func postSignIn(t *testing.T, c *http.Client, base, email, password, forwardedFor string) int {
	t.Helper()
	res, err := c.Get(base + "/signin")
	require.NoError(t, err)
	_, page, _ := readAnswer(t, res)
	req, err := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(url.Values{"csrf": {csrfOf(t, page)}, "email": {email}, "password": {password}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", forwardedFor)
	}
	res, err = c.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	return res.StatusCode
}

// signedInOn reports whether cookie opens the dashboard on the instance at root.
func signedInOn(t *testing.T, root string, cookie *http.Cookie) bool {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, root+"/dashboard/transactions", nil)
	require.NoError(t, err)
	req.AddCookie(cookie)
	res, err := noRedirects(t).Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// Two instances behind a round-robin proxy are one site: signed in through
// one, every page works through the other; signing out and disabling end the
// session on both; a limit counts the attempts made on both; 40 parallel
// sign-ins on one account check at most its limit.
func TestTwoInstances(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			a, b, root := twoInstances(t, db, nil)
			base := root + "/dashboard"
			partnerID := a.PartnerID(t, a.NewPartner(t))
			u := newUser(t, a, partnerID, partnerusers.Admin)

			br := webtest.Browser(t)
			signIn(t, br, base, u.Email, testPassword)
			for _, page := range []string{"/transactions", "/payouts", "/webhooks", "/keys", "/team", "/account", "", "/transactions"} {
				require.Equal(t, http.StatusOK, open(t, br, base+page), page)
				require.NotEmpty(t, text(t, br, "#nav"), "still signed in on %s", page)
			}
			cookie := sessionCookie(t, br)
			require.True(t, signedInOn(t, a.Root, cookie))
			require.True(t, signedInOn(t, b.Root, cookie))

			// Signing out (through whichever instance) ends it on both.
			require.NoError(t, chromedp.Run(br, chromedp.Click("#signout", chromedp.ByID), chromedp.WaitVisible("#signin", chromedp.ByID)))
			require.False(t, signedInOn(t, a.Root, cookie))
			require.False(t, signedInOn(t, b.Root, cookie))

			// Disabling ends it on both.
			newUser(t, a, partnerID, partnerusers.Admin) // the partner keeps an admin
			signIn(t, br, base, u.Email, testPassword)
			cookie = sessionCookie(t, br)
			require.True(t, signedInOn(t, b.Root, cookie))
			_, err := a.App.PartnerUsers().DisableBy(context.Background(), partnerID, u.ID, actor.CLI)
			require.NoError(t, err)
			require.False(t, signedInOn(t, a.Root, cookie))
			require.False(t, signedInOn(t, b.Root, cookie))

			// 40 parallel sign-ins on one account, the right password among
			// them: at most the account's limit of wrong passwords are checked
			// (a right one hands its attempt back: only failures count), the
			// others refused before any check.
			v := newUser(t, a, partnerID, partnerusers.Finance)
			var wrong, checked, refused atomic.Int32
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					password := "wrong-password-" + strings.Repeat("x", i)
					if i == 39 {
						password = testPassword
					}
					switch status := postSignIn(t, noRedirects(t), base, v.Email, password, ""); status {
					case http.StatusUnauthorized:
						wrong.Add(1)
						checked.Add(1)
					case http.StatusSeeOther:
						checked.Add(1)
					case http.StatusTooManyRequests, http.StatusServiceUnavailable:
						refused.Add(1)
					default:
						assert.Fail(t, "unexpected status", "%d", status)
					}
				}()
			}
			wg.Wait()
			require.LessOrEqual(t, wrong.Load(), int32(5), "never more wrong passwords checked than the limit")
			require.LessOrEqual(t, checked.Load(), int32(6), "the limit, and the right one")
			require.Equal(t, int32(40), checked.Load()+refused.Load())

			// The limit counts both instances' attempts: after the limit's
			// failures (round-robin), even the right password is refused.
			w := newUser(t, a, partnerID, partnerusers.Developer)
			c := noRedirects(t)
			for range 5 {
				require.Equal(t, http.StatusUnauthorized, postSignIn(t, c, base, w.Email, "not-the-password", ""))
			}
			require.Equal(t, http.StatusTooManyRequests, postSignIn(t, c, base, w.Email, testPassword, ""))
		})
	}
}

// With TRUSTED_PROXIES naming the proxy, two clients behind it are limited
// separately: one exhausting its address's budget (guessing several accounts)
// does not stop another address; and a browser that signed in to an account
// before keeps its own budget while strangers exhaust the account's. Without
// it, X-Forwarded-For is ignored and every client is the proxy.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		for _, trusted := range []bool{true, false} {
			t.Run(db.Name+"/"+map[bool]string{true: "trusted", false: "untrusted"}[trusted], func(t *testing.T) {
				t.Parallel()
				trustedProxies(t, db, trusted)
			})
		}
	}
}

// trustedProxies runs TestTrustedProxies's case on db.
func trustedProxies(t *testing.T, db testdb.Database, trusted bool) {
	settings := map[string]string{}
	if trusted {
		settings["TRUSTED_PROXIES"] = "127.0.0.0/8"
	}
	a, _, root := twoInstances(t, db, settings)
	base := root + "/dashboard"
	partnerID := a.PartnerID(t, a.NewPartner(t))
	u := newUser(t, a, partnerID, partnerusers.Admin)
	stranger, owner := noRedirects(t), noRedirects(t)
	require.Equal(t, http.StatusSeeOther, postSignIn(t, owner, base, u.Email, testPassword, "198.51.100.4"))
	signedOut(t, owner, base)
	for range 5 {
		require.Equal(t, http.StatusUnauthorized, postSignIn(t, stranger, base, u.Email, "guess", "203.0.113.9"))
	}
	require.Equal(t, http.StatusTooManyRequests, postSignIn(t, stranger, base, u.Email, "guess", "203.0.113.9"))
	require.Equal(t, http.StatusSeeOther, postSignIn(t, owner, base, u.Email, testPassword, "198.51.100.4"),
		"the owner's browser keeps its own budget")

	// The stranger's address exhausts its budget (20) on other accounts: the
	// account above took 5, fifteen others one each.
	for range 15 {
		other := newUser(t, a, partnerID, partnerusers.Developer)
		require.Equal(t, http.StatusUnauthorized, postSignIn(t, stranger, base, other.Email, "guess", "203.0.113.9"))
	}
	v := newUser(t, a, partnerID, partnerusers.Finance)
	require.Equal(t, http.StatusTooManyRequests, postSignIn(t, stranger, base, v.Email, testPassword, "203.0.113.9"),
		"the address's budget is spent")
	want := http.StatusSeeOther
	if !trusted {
		want = http.StatusTooManyRequests
	}
	require.Equal(t, want, postSignIn(t, noRedirects(t), base, v.Email, testPassword, "198.51.100.5"))
}
