package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
)

// The skeleton in Chromium: without a session the dashboard sends to sign-in; a
// signed-in finance user sees the navigation of their role, the transactions
// page, the 403 page on the team, the 404 page on an unknown path, and signs out.
func TestSkeleton(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			s := signedIn(t, db, partnerusers.Finance)
			r, err := noRedirect.Get(s.Base + "/transactions")
			require.NoError(t, err)
			_ = r.Body.Close()
			require.Equal(t, http.StatusSeeOther, r.StatusCode)
			require.Equal(t, "/dashboard/signin", r.Header.Get("Location"))
			require.Contains(t, r.Header.Get("Content-Security-Policy"), "default-src 'none'")

			ctx := s.Browser
			sessionCookie(t, ctx)
			var links []string
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('#nav a')).map(a => a.textContent)`, &links)))
			require.Equal(t, []string{"Transactions", "Payouts"}, links)
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/transactions"))
			require.Equal(t, http.StatusForbidden, open(t, ctx, s.Base+"/team"))
			require.Contains(t, text(t, ctx, "#forbidden"), "Not for your role")
			require.Equal(t, http.StatusNotFound, open(t, ctx, s.Base+"/nothing-here"))
			require.Contains(t, text(t, ctx, "#notfound"), "Not found")
			require.NoError(t, chromedp.Run(ctx, chromedp.Click("#signout", chromedp.ByID), chromedp.WaitVisible("#signin", chromedp.ByID)))
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/transactions")) // the sign-in page, after the redirect
			require.Contains(t, text(t, ctx, "h1"), "Sign in")
		})
	}
}
