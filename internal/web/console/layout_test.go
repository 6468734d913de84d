package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// The layout holds at 1280 px and on a 390 px phone screen: on every page the
// body never scrolls sideways and no table is cut off (wide tables scroll inside
// their own box). The
// transaction is paid 10 + the rest through the simulator and shows two deposit
// rows, as the partner API lists them.
func TestConsoleLayoutHolds(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { layoutFlow(t, db) })
	}
}

func layoutFlow(t *testing.T, db testdb.Database) {
	env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
	pc := env.Client(t, env.NewPartner(t))
	opKey := env.NewOperator(t)
	base := env.Root + "/console"
	bg := context.Background()

	tx := create(t, pc, "SPLIT-"+strings.Repeat("LONGREFERENCE", 3)+uuid.NewString()[:8], "50000.00")
	for _, amount := range []*string{ptr("10"), nil} {
		res, err := pc.SimulateSandboxEventWithResponse(bg, &client.SimulateSandboxEventParams{},
			client.SimulateRequest{Event: client.SimulateRequestEventDepositDetected, TransactionId: tx.Id, Amount: amount})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	}
	pay(t, env, create(t, pc, "DUST-"+uuid.NewString()[:8], "2000.00"), "0.25", 1)

	ctx := webtest.Browser(t)
	signIn(t, ctx, base, opKey)
	var rows int
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/transactions/"+tx.Id.String()), chromedp.WaitVisible("#deposits", chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll('#deposits tbody tr').length`, &rows)))
	require.Equal(t, 2, rows, "a 10 and a rest: two transfers")

	partnerID := env.PartnerID(t, env.NewPartner(t))
	pages := []string{"", "/transactions?stage=awaiting_fill", "/transactions/" + tx.Id.String(), "/refund-tasks", "/audit",
		"/fills/new", "/operators", "/payouts/new", "/payouts/new?partner_id=" + partnerID.String(), "/payouts", "/deposits",
		"/screening", "/approvals", "/partners", "/partners/" + partnerID.String()}
	for _, width := range []int64{1280, 390} {
		require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(width, 844)))
		for _, p := range pages {
			var widths []int
			require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+p), chromedp.WaitReady("main", chromedp.ByQuery),
				chromedp.Evaluate(`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`, &widths)))
			var wide []string
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('body *')).filter(e =>
				e.getBoundingClientRect().right > document.documentElement.clientWidth + 1).map(e => e.tagName + '#' + e.id + '.' + e.className)`, &wide)))
			require.LessOrEqual(t, widths[0], widths[1], "%d px, %s: the page scrolls sideways (%v)", width, base+p, wide)
			require.Equal(t, int(width), widths[1], "the viewport is %d px", width)
			// No table is cut off: each fits the screen or scrolls in a box of its own.
			var clipped []string
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('table')).filter(t => {
				if (t.getBoundingClientRect().right <= document.documentElement.clientWidth + 1) return false;
				for (let e = t.parentElement; e; e = e.parentElement) {
					if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) return false;
				}
				return true;
			}).map(t => t.id || t.className)`, &clipped)))
			require.Empty(t, clipped, "%d px, %s: tables cut off", width, base+p)
		}
	}
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base)))
	webtest.Shot(t, ctx, "overview-narrow.png")
}
