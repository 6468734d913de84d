package console_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// browser is an HTTP client with a cookie jar that follows no redirects.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// login sends the console's sign-in form with key as c from the client address
// from (a trusted proxy's X-Forwarded-For) and returns the status.
func login(t *testing.T, c *http.Client, base, key, from string) int {
	t.Helper()
	res, err := c.Get(base + "/login")
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	_ = res.Body.Close()
	token := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(b))
	require.NotNil(t, token, "the sign-in form carries a token")
	req, err := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(url.Values{"csrf": {token[1]}, "key": {key}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", from)
	res, err = c.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	return res.StatusCode
}

// Guesses at one operator's key (its visible prefix, with anything after it)
// from ever new addresses share one budget: no more than the limit are
// checked, a new browser is then refused even with the right key, and the
// operator's own browser (the device cookie of its last sign-in, its session
// since ended) signs in all the same.
func TestGuessesAtAKeyShareOneBudget(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			env := apitest.Start(t, db, map[string]string{"TRUSTED_PROXIES": "127.0.0.0/8"})
			base := env.Root + "/console"
			key := env.NewOperator(t)

			own := browser(t)
			require.Equal(t, http.StatusSeeOther, login(t, own, base, key, "198.51.100.7"))
			u, err := url.Parse(base + "/")
			require.NoError(t, err)
			var device []*http.Cookie
			for _, ck := range own.Jar.Cookies(u) {
				if ck.Name == "console_device" {
					device = append(device, ck)
				}
			}
			require.Len(t, device, 1, "a sign-in leaves a device cookie")
			own = browser(t) // the session ended; the device cookie stays
			own.Jar.SetCookies(u, device)

			checked := 0
			for i := range 12 {
				guess := key[:14] + fmt.Sprintf("%0*d", len(key)-14, i)
				switch status := login(t, browser(t), base, guess, fmt.Sprintf("203.0.113.%d", i+1)); status {
				case http.StatusUnauthorized:
					checked++
				case http.StatusTooManyRequests:
				default:
					t.Fatalf("guess %d: status %d", i, status)
				}
			}
			require.Equal(t, 5, checked, "no more guesses at the key checked than its limit, from any number of addresses")
			require.Equal(t, http.StatusTooManyRequests, login(t, browser(t), base, key, "192.0.2.9"), "a new browser shares the key's budget")
			require.Equal(t, http.StatusSeeOther, login(t, own, base, key, "198.51.100.7"), "the operator's own browser has its own")
		})
	}
}
