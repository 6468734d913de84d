package console_test

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// The sign-in form sent from another origin does nothing: in Chromium, a page
// on another port (the same site for SameSite) posting it with a right operator
// key signs no one in; sent directly, it is refused with a foreign Origin even
// with its token right, and without its page's token; with both it signs in.
func TestSignInFromAnotherOrigin(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			env := apitest.Start(t, db, nil)
			opKey := env.NewOperator(t)
			base := env.Root + "/console"

			page := `<!doctype html><form method="post" action="` + html.EscapeString(base+"/login") + `">` +
				`<input type="hidden" name="key" value="` + html.EscapeString(opKey) + `"><button type="submit" id="go">Go</button></form>`
			br := webtest.Browser(t)
			require.NoError(t, chromedp.Run(br, chromedp.Navigate(base+"/login"), chromedp.WaitVisible("#key", chromedp.ByID)))
			require.NoError(t, chromedp.Run(br, chromedp.Navigate(webtest.OtherOrigin(t, page)), chromedp.WaitVisible("#go", chromedp.ByID)))
			res, err := chromedp.RunResponse(br, chromedp.Click("#go", chromedp.ByID))
			require.NoError(t, err)
			require.Equal(t, int64(http.StatusForbidden), res.Status)
			require.NoError(t, chromedp.Run(br, chromedp.Navigate(base), chromedp.WaitVisible("#key", chromedp.ByID)), "still signed out")

			jar, err := cookiejar.New(nil)
			require.NoError(t, err)
			c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			post := func(origin string, form url.Values) (int, string) {
				t.Helper()
				req, err := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				if origin != "" {
					req.Header.Set("Origin", origin)
				}
				res, err := c.Do(req)
				require.NoError(t, err)
				defer func() { _ = res.Body.Close() }()
				b, err := io.ReadAll(res.Body)
				require.NoError(t, err)
				return res.StatusCode, string(b)
			}
			res2, err := c.Get(base + "/login")
			require.NoError(t, err)
			b, err := io.ReadAll(res2.Body)
			require.NoError(t, err)
			_ = res2.Body.Close()
			token := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(b))
			require.NotNil(t, token, "the sign-in form carries a token")

			status, _ := post("http://127.0.0.1:1", url.Values{"csrf": {token[1]}, "key": {opKey}})
			require.Equal(t, http.StatusForbidden, status, "a foreign Origin")
			status, body := post("", url.Values{"key": {opKey}})
			require.Equal(t, http.StatusForbidden, status, "no token")
			require.Contains(t, body, "not sent from this console")
			other := []byte(token[1])
			other[0] = map[bool]byte{true: 'y', false: 'x'}[other[0] == 'x']
			status, _ = post("", url.Values{"csrf": {string(other)}, "key": {opKey}})
			require.Equal(t, http.StatusForbidden, status, "another token")
			status, _ = post(strings.TrimSuffix(base, "/console"), url.Values{"csrf": {token[1]}, "key": {opKey}})
			require.Equal(t, http.StatusSeeOther, status, "its own origin and token")
		})
	}
}
