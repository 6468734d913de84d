package dashboard_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
)

// fromAddress is an HTTP client with a cookie jar whose connections come from
// the loopback address local (not the proxies' own 127.0.0.1), so the proxy in
// front of the instances sees a client that is no trusted proxy.
func fromAddress(t *testing.T, local string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{Jar: jar, Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// guess sends one sign-in with password and the headers a client wrote.
func guess(t *testing.T, c *http.Client, base, email, password string, headers map[string]string) int {
	t.Helper()
	res, err := c.Get(base + "/signin")
	require.NoError(t, err)
	_, page, _ := readAnswer(t, res)
	req, err := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(url.Values{"csrf": {csrfOf(t, page)}, "email": {email}, "password": {password}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err = c.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	return res.StatusCode
}

// Behind a trusted proxy that appends X-Forwarded-For (Go's reverse proxy, as
// nginx's $proxy_add_x_forwarded_for does), what a client writes itself is never
// its address: a rotating Forwarded header (passed through untouched), or rotating
// values it puts before the proxy's own in X-Forwarded-For, get no more guesses
// than the account's limit. The limit is the account's across addresses, so a
// new browser elsewhere is refused too, while the owner's own browser (its
// device cookie) signs in during the flood.
func TestForgedForwardingHeaders(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		for _, forged := range []string{"Forwarded", "X-Forwarded-For"} {
			t.Run(db.Name+"/"+forged, func(t *testing.T) {
				t.Parallel()
				// The proxy reaches the instances from 127.0.0.1; the client comes
				// from 127.0.0.2, which is no proxy.
				a, _, root := twoInstances(t, db, map[string]string{"TRUSTED_PROXIES": "127.0.0.1"})
				base := root + "/dashboard"
				u := newUser(t, a, a.PartnerID(t, a.NewPartner(t)), partnerusers.Admin)
				// The owner signed in from its browser before.
				owner := fromAddress(t, "127.0.0.3")
				require.Equal(t, http.StatusSeeOther, guess(t, owner, base, u.Email, testPassword, nil))
				signedOut(t, owner, base)
				stranger := fromAddress(t, "127.0.0.2")
				checked := 0
				for i := range 12 {
					value := fmt.Sprintf("203.0.113.%d", i+1)
					if forged == "Forwarded" {
						value = "for=" + value
					}
					switch status := guess(t, stranger, base, u.Email, "guess", map[string]string{forged: value}); status {
					case http.StatusUnauthorized:
						checked++
					case http.StatusTooManyRequests:
					default:
						t.Fatalf("guess %d: status %d", i, status)
					}
				}
				require.Equal(t, 5, checked, "no more guesses checked than the limit, whatever the client wrote")
				// A new browser at another address shares the account's budget:
				// refused, even with the right password.
				require.Equal(t, http.StatusTooManyRequests, guess(t, fromAddress(t, "127.0.0.4"), base, u.Email, testPassword, nil))
				// The owner's own browser is not locked out by the stranger.
				require.Equal(t, http.StatusSeeOther, guess(t, owner, base, u.Email, testPassword, nil))
			})
		}
	}
}
