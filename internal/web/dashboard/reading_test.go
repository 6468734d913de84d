package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/lifecycle"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// What a partner's team reads, in real Chromium on both databases: the status
// history's From and To columns and its reasons in words (never a memory
// address or deposit:partial), amounts grouped in thousands to the last
// decimal; the payouts page's statements link keeps its period; on a 390 px
// phone no cell or amount of the transactions, a transaction, the payouts, a
// payout or the statements is off-screen; and a team change's answer is
// reached by a redirect, so reloading it sends nothing again.
func TestDashboardReadsInWords(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			s := signedInWith(t, db, partnerusers.Admin, operatorPayouts)
			ctx := s.Browser
			ops := s.Env.OperatorClient(t, s.Env.NewOperator(t))
			done := newTx(t, s.API, "READ-"+uuid.NewString()[:8], "250000.50")
			complete(t, s, ops, done)
			batch := pay(t, ops, s.PartnerID, "NIP-READ", done.Amount, done.Id)

			// Paid in part: the history's partial row keeps the status.
			partial := newTx(t, s.API, "PART-"+uuid.NewString()[:8], "5000.00")
			engine := s.Env.App.Lifecycle()
			var outcome lifecycle.Outcome
			_, err := engine.Run(context.Background(), func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
				got, o, err := engine.Receive(ctx, unit, partial.Id, lifecycle.Incoming{ID: "dep_" + uuid.NewString(),
					Hash: "0x" + strings.ReplaceAll(uuid.NewString()+uuid.NewString(), "-", ""), From: "0x" + strings.Repeat("5e", 20),
					To: partial.DepositAddress, Amount: decimal.RequireFromString("1"), Confirmations: 1})
				outcome = o
				return got, err
			})
			require.NoError(t, err)
			require.Equal(t, lifecycle.Counted, outcome, "a part of the amount")

			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/transactions/"+partial.Id.String()))
			var from, to, reasons []string
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Evaluate(`Array.from(document.querySelectorAll('#history tbody .from')).map(c => c.innerText)`, &from),
				chromedp.Evaluate(`Array.from(document.querySelectorAll('#history tbody .to')).map(c => c.innerText)`, &to),
				chromedp.Evaluate(`Array.from(document.querySelectorAll('#history tbody .reason')).map(c => c.innerText)`, &reasons)))
			require.Equal(t, []string{"—", "waiting for the deposit"}, from, "the history shows states")
			require.Equal(t, []string{"waiting for the deposit", "waiting for the deposit"}, to)
			require.Equal(t, []string{"created", "part of the amount received"}, reasons)

			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/transactions/"+done.Id.String()))
			require.Contains(t, text(t, ctx, "#amount"), "250,000.50 NGN", "amounts grouped, exact")
			require.Contains(t, text(t, ctx, "#history"), "USDT sold")
			require.Contains(t, text(t, ctx, "#status"), "completed")
			require.NotContains(t, text(t, ctx, "main"), done.Id.String(), "the id folded, not beside the reference")
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/transactions"))
			require.Contains(t, text(t, ctx, "#transactions"), "250,000.50")
			require.Contains(t, text(t, ctx, "#transactions"), "waiting for the deposit")

			// The statements link keeps the payouts page's period, as a query.
			period := url.Values{"from": {"2020-01-01"}, "to": {"2099-12-31"}}
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/payouts?"+period.Encode()))
			var link, fromDay string
			require.NoError(t, chromedp.Run(ctx, chromedp.AttributeValue("#statements-link", "href", &link, nil, chromedp.ByID)))
			require.Equal(t, "/dashboard/payouts/statements?"+period.Encode(), link)
			require.Equal(t, http.StatusOK, open(t, ctx, s.Env.Root+link))
			require.NoError(t, chromedp.Run(ctx, chromedp.Value("#p-from", &fromDay, chromedp.ByID)))
			require.Equal(t, "2020-01-01", fromDay)
			require.Contains(t, text(t, ctx, "#revenue"), done.MerchantReference)

			// A phone: nothing of the main pages off-screen.
			for _, p := range []string{"/transactions", "/transactions/" + done.Id.String(), "/transactions/" + partial.Id.String(),
				"/payouts?" + period.Encode(), "/payouts/" + batch.Id.String(), "/payouts/statements?" + period.Encode()} {
				webtest.RequireOnScreen(t, ctx, 390, s.Base+p)
			}
			webtest.Shot(t, ctx, "statements-narrow.png")

			// A team change lands on the team page by a redirect; a reload reads
			// it again and changes nothing.
			fin := newUser(t, s.Env, s.PartnerID, partnerusers.Finance)
			row := "#user-" + fin.ID.String()
			require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(s.Base+"/team"),
				chromedp.SetValue(row+` select[name="role"]`, "developer", chromedp.ByQuery)))
			webtest.RequirePostRedirectGet(t, ctx, chromedp.Click(row+" .role-submit", chromedp.ByQuery), chromedp.WaitVisible("#notice", chromedp.ByID))
			require.Contains(t, text(t, ctx, "#notice"), fin.Email+" is now developer.")
			webtest.RequireReloadReads(t, ctx, chromedp.WaitVisible("#notice", chromedp.ByID))

			// A new key too: shown on the page the form redirects to, once; a
			// reload reads the page again without the key and makes none.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/keys"))
			secret := webtest.RequireShownOnce(t, ctx, "#create-key", "#keys tbody tr", 2)
			require.NotContains(t, text(t, ctx, "main"), secret, "the partner's key and the one made, no third; the secret gone")
		})
	}
}
