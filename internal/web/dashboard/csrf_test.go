package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// A sign-in form and a session cookie sent from another origin do nothing: in
// Chromium, a page on another port (the same site for SameSite, so the cookies
// go with it) posting the sign-in form with the attacker's right password signs
// no one in, and posting sign-out leaves the visitor signed in; sent directly,
// a form naming a foreign Origin is refused even with every token right, and a
// sign-in form without its page's token is refused.
func TestFormsFromAnotherOrigin(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			s := signedIn(t, db, partnerusers.Admin)
			mallory := newUser(t, s.Env, s.PartnerID, partnerusers.Finance)
			hostile := func(action string, fields url.Values) string {
				var b strings.Builder
				b.WriteString(`<!doctype html><form method="post" action="` + html.EscapeString(s.Base+action) + `">`)
				for k, v := range fields {
					b.WriteString(`<input type="hidden" name="` + html.EscapeString(k) + `" value="` + html.EscapeString(v[0]) + `">`)
				}
				b.WriteString(`<button type="submit" id="go">Go</button></form>`)
				return webtest.OtherOrigin(t, b.String())
			}

			// Login CSRF in a fresh browser: no session is made.
			fresh := webtest.Browser(t)
			require.Equal(t, http.StatusOK, open(t, fresh, s.Base+"/signin"), "the browser holds a form token")
			res, err := chromedp.RunResponse(fresh, chromedp.Navigate(hostile("/signin", url.Values{"email": {mallory.Email}, "password": {testPassword}})))
			require.NoError(t, err)
			require.Equal(t, int64(http.StatusOK), res.Status)
			res, err = chromedp.RunResponse(fresh, chromedp.Click("#go", chromedp.ByID))
			require.NoError(t, err)
			require.Equal(t, int64(http.StatusForbidden), res.Status)
			require.Equal(t, http.StatusOK, open(t, fresh, s.Base+"/transactions"))
			require.NoError(t, chromedp.Run(fresh, chromedp.WaitVisible("#signin", chromedp.ByID)), "still signed out")

			// The signed-in browser: sign-out from another origin does nothing.
			_, err = chromedp.RunResponse(s.Browser, chromedp.Navigate(hostile("/signout", url.Values{"csrf": {"guessed"}})))
			require.NoError(t, err)
			res, err = chromedp.RunResponse(s.Browser, chromedp.Click("#go", chromedp.ByID))
			require.NoError(t, err)
			require.Equal(t, int64(http.StatusForbidden), res.Status)
			require.Equal(t, http.StatusOK, open(t, s.Browser, s.Base+"/transactions"))
			require.NotEmpty(t, text(t, s.Browser, "#nav"), "still signed in")

			// Directly: every token right, but a foreign Origin.
			a := newAgent(t, s.Base)
			_, page, _ := a.get("/signin")
			form := url.Values{"csrf": {csrfOf(t, page)}, "email": {mallory.Email}, "password": {testPassword}}
			require.Equal(t, http.StatusForbidden, a.postFrom("http://127.0.0.1:1", "/signin", form))
			status, _, _ := a.get("/transactions")
			require.Equal(t, http.StatusSeeOther, status, "not signed in")
			// No Origin (not a browser) but no token: refused too.
			status, page, _ = a.post("/signin", url.Values{"email": {mallory.Email}, "password": {testPassword}})
			require.Equal(t, http.StatusForbidden, status)
			require.Contains(t, page, "not sent from this dashboard")
			// The page's token and no foreign Origin: signed in.
			status, _, loc := a.post("/signin", url.Values{"csrf": {csrfOf(t, page)}, "email": {mallory.Email}, "password": {testPassword}})
			require.Equal(t, http.StatusSeeOther, status)
			require.Equal(t, "/dashboard", loc)
			_, page, _ = a.get("/transactions")
			signout := url.Values{"csrf": {csrfOf(t, page)}}
			require.Equal(t, http.StatusForbidden, a.postFrom("https://partner.example", "/signout", signout))
			status, _, _ = a.get("/transactions")
			require.Equal(t, http.StatusOK, status, "the session lives on")
			require.Equal(t, http.StatusSeeOther, a.postFrom(strings.TrimSuffix(s.Base, "/dashboard"), "/signout", signout), "its own origin")
			status, _, _ = a.get("/transactions")
			require.Equal(t, http.StatusSeeOther, status, "signed out")
		})
	}
}

// postFrom sends a form to path naming origin as the page it came from, and
// returns the status.
func (a *agent) postFrom(origin, path string, form url.Values) int {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.base+path, strings.NewReader(form.Encode()))
	require.NoError(a.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	res, err := a.c.Do(req)
	require.NoError(a.t, err)
	status, _, _ := readAnswer(a.t, res)
	return status
}
