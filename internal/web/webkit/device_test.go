package webkit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/secrets"
	"partnerd/internal/web/webkit"
)

// A device cookie names the browser as the account's for DeviceTTL, and for
// that account only; a cookie of another key, another site, altered or expired
// names nothing, and without keys no browser is trusted.
func TestDeviceCookies(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	keys, err := secrets.Parse("k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	require.NoError(t, err)
	other, err := secrets.Parse("k1:ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=")
	require.NoError(t, err)
	d := webkit.Devices{Cookie: "site_device", Path: "/site", Keys: keys, Now: func() time.Time { return now }}

	rec := httptest.NewRecorder()
	d.Trust(rec, "email:a@example.com")
	cookies := rec.Result().Cookies()
	require.Len(t, cookies, 1)
	c := cookies[0]
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	require.NotContains(t, c.Value, "a@example.com", "sealed, not readable")

	with := func(c *http.Cookie) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/site/signin", nil)
		r.AddCookie(c)
		return r
	}
	nonce := d.Of(with(c), "email:a@example.com")
	require.NotEmpty(t, nonce)
	rec2 := httptest.NewRecorder()
	d.Trust(rec2, "email:a@example.com")
	require.NotEqual(t, nonce, d.Of(with(rec2.Result().Cookies()[0]), "email:a@example.com"), "each sign-in a new device budget")

	require.Empty(t, d.Of(with(c), "email:b@example.com"), "another account")
	require.Empty(t, webkit.Devices{Cookie: "site_device", Keys: other, Now: d.Now}.Of(with(c), "email:a@example.com"), "another key")
	require.Empty(t, webkit.Devices{Cookie: "other_device", Keys: keys, Now: d.Now}.Of(with(&http.Cookie{Name: "other_device", Value: c.Value}), "email:a@example.com"), "another site")
	altered := *c
	altered.Value = c.Value[:len(c.Value)-4] + "AAAA"
	require.Empty(t, d.Of(with(&altered), "email:a@example.com"), "altered")
	later := d
	later.Now = func() time.Time { return now.Add(webkit.DeviceTTL) }
	require.Empty(t, later.Of(with(c), "email:a@example.com"), "expired")
	require.Empty(t, webkit.Devices{Cookie: "site_device", Now: d.Now}.Of(with(c), "email:a@example.com"), "no keys")
	require.Empty(t, d.Of(httptest.NewRequest(http.MethodPost, "/site/signin", nil), "email:a@example.com"), "no cookie")
}
