package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
)

// The dashboard's layout holds at 1280 px and on a 390 px phone screen: on every
// page the body never scrolls sideways and no table is cut off (wide tables
// scroll inside their own box).
func TestDashboardLayoutHolds(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			s := signedIn(t, db, partnerusers.Admin)
			tx := create(t, s.API, "LAYOUT-"+uuid.NewString(), "50000.00")
			paid(t, s.API, tx, "0x"+uuid.NewString()[:8]+"00000000000000000000000000000000000000000000000000000000")
			newUser(t, s.Env, s.PartnerID, partnerusers.Finance)
			pages := []string{"/transactions", "/transactions/" + tx.Id.String(), "/team", "/activity", "/account",
				"/webhooks", "/keys", "/payouts", "/payouts/statements", "/enroll"}
			for _, width := range []int64{1280, 390} {
				require.NoError(t, chromedp.Run(s.Browser, chromedp.EmulateViewport(width, 844)))
				for _, p := range pages {
					require.Equal(t, http.StatusOK, open(t, s.Browser, s.Base+p), p)
					var widths []int
					require.NoError(t, chromedp.Run(s.Browser, chromedp.WaitReady("main", chromedp.ByQuery),
						chromedp.Evaluate(`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`, &widths)))
					require.LessOrEqual(t, widths[0], widths[1], "%d px, %s: the page scrolls sideways", width, p)
					require.Equal(t, int(width), widths[1])
					// No table is cut off: each fits the screen or scrolls in a box of its own.
					var clipped []string
					require.NoError(t, chromedp.Run(s.Browser, chromedp.Evaluate(`Array.from(document.querySelectorAll('table')).filter(t => {
						if (t.getBoundingClientRect().right <= document.documentElement.clientWidth + 1) return false;
						for (let e = t.parentElement; e; e = e.parentElement) {
							if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) return false;
						}
						return true;
					}).map(t => t.id || t.className)`, &clipped)))
					require.Empty(t, clipped, "%d px, %s: tables cut off", width, p)
				}
			}
		})
	}
}
