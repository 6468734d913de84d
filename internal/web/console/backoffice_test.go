package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/lifecycle"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// The rest of the back office in Chromium: refund tasks filtered by partner and
// network, select-all on the batch fill page (no script: a link that renders the
// page ticked), and the operator keys page (add, roll and revoke, each confirmed;
// the new key works on the operator API until revoked).
func TestConsoleFiltersSelectAllAndOperatorKeys(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { filtersFlow(t, db) })
	}
}

func filtersFlow(t *testing.T, db testdb.Database) {
	env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
	aKey, bKey := env.NewPartner(t), env.NewPartner(t)
	a, b := env.Client(t, aKey), env.Client(t, bKey)
	opKey := env.NewOperator(t)
	base := env.Root + "/console"
	bg := context.Background()

	// Dust for each partner (bep20), one unmatched transfer on trc20 (no partner).
	ta := create(t, a, "A-"+uuid.NewString()[:8], "2000.00")
	tb := create(t, b, "B-"+uuid.NewString()[:8], "2000.00")
	pay(t, env, ta, "0.25", 1)
	pay(t, env, ta, "0.5", 2)
	pay(t, env, tb, "0.75", 3)
	_, err := env.App.Unmatched().Record(bg, env.Store, lifecycle.RefundTask{Network: "trc20", TxHash: strings.Repeat("ab", 32), ToAddress: "TNobody",
		FromAddress: "TSomeone", Amount: decimal.RequireFromString("12"), RawAmount: "12000000", BlockNumber: 7})
	require.NoError(t, err)

	// Three confirmed transactions awaiting their fill.
	for i := range 3 {
		tx := create(t, a, "FILL-"+uuid.NewString()[:8], "1000.00")
		confirmed(t, env, tx.Id, "0x"+strings.Repeat(string("123"[i]), 64))
	}

	ctx := webtest.Browser(t)
	signIn(t, ctx, base, opKey)
	aID := env.PartnerID(t, aKey)
	require.Equal(t, 4, rowsAt(t, ctx, base+"/refund-tasks"), "every open task")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SetValue("#filter-partner", aID.String(), chromedp.ByID),
		chromedp.Click("#filter-submit", chromedp.ByID),
		chromedp.WaitReady("#filter-partner option[selected]", chromedp.ByQuery)))
	var partners []string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#tasks td.partner')).map(td => td.textContent.trim())`, &partners)))
	require.Len(t, partners, 2, "partner A's two dust transfers")
	for _, p := range partners {
		require.Contains(t, p, "Test partner")
	}
	var selected string
	require.NoError(t, chromedp.Run(ctx, chromedp.Value("#filter-partner", &selected, chromedp.ByID)))
	require.Equal(t, aID.String(), selected, "the form shows its filter")
	// The kind tabs keep the partner filter.
	var href string
	require.NoError(t, chromedp.Run(ctx, chromedp.AttributeValue(`#kinds a:nth-child(5)`, "href", &href, nil, chromedp.ByQuery)))
	require.Contains(t, href, "partner_id="+aID.String())
	require.Contains(t, href, "kind=dust")
	require.Equal(t, 1, rowsAt(t, ctx, base+"/refund-tasks?network=trc20"))
	require.Equal(t, 3, rowsAt(t, ctx, base+"/refund-tasks?network=bep20&kind=dust"))
	require.Equal(t, 0, rowsAt(t, ctx, base+"/refund-tasks?network=trc20&partner_id="+aID.String()))

	// Select all on the batch fill page, then confirm: all three.
	var ticked int
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/fills/new"), chromedp.WaitVisible("#batch", chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll('input.tick:checked').length`, &ticked)))
	require.Zero(t, ticked)
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#select-all", chromedp.ByID), chromedp.WaitVisible("#batch", chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll('input.tick:checked').length`, &ticked)))
	require.Equal(t, 3, ticked)
	var heading string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys("#batch-rate", "1,549.10", chromedp.ByID),
		chromedp.SendKeys("#batch-ref", "LP-ALL", chromedp.ByID),
		chromedp.Click("#batch-submit", chromedp.ByID),
		chromedp.WaitVisible("#confirm", chromedp.ByID),
		chromedp.Text("h1", &heading, chromedp.ByQuery)))
	require.Contains(t, heading, "fill 3 transactions")
	require.NoError(t, chromedp.Run(ctx, webtest.Follow("#confirm"), chromedp.WaitVisible("#notice", chromedp.ByID)))

	// The transactions list and the recorded fills as CSV: the list's rows, exact amounts.
	require.Equal(t, 3, rowsAt(t, ctx, base+"/transactions?stage=awaiting_settlement"))
	var ids []string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('table.list tbody tr')).map(tr => tr.dataset.id)`, &ids)))
	rows := csvOf(t, ctx, env.Root)
	require.Equal(t, ids, column(t, rows, "id"))
	var sum decimal.Decimal
	for _, a := range column(t, rows, "crypto_amount") {
		sum = sum.Add(decimal.RequireFromString(a))
	}
	require.Equal(t, []string{"1000.00", "1000.00", "1000.00"}, column(t, rows, "fiat_amount"))
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/fills/new"), chromedp.WaitVisible("#csv", chromedp.ByID)))
	fills := csvOf(t, ctx, env.Root)
	require.Len(t, fills, 2, "one fill")
	require.Equal(t, []string{"3"}, column(t, fills, "transactions"))
	require.Equal(t, []string{"LP-ALL"}, column(t, fills, "reference"))
	require.Equal(t, []string{"1549.10"}, column(t, fills, "rate"))
	require.Equal(t, []string{sum.StringFixed(6)}, column(t, fills, "crypto_amount"))

	// Operator keys: add one (confirmed), it works; roll it, then revoke the new one.
	ops := env.OperatorClient(t, opKey)
	me, err := ops.ListOperatorsWithResponse(bg)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, me.StatusCode(), string(me.Body))
	opID := me.JSON200.Data[0].Id
	var secret string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/operators"),
		chromedp.Click("a.keys", chromedp.ByQuery), chromedp.WaitVisible("#keys", chromedp.ByID),
		chromedp.Click("#add-key", chromedp.ByID), chromedp.WaitVisible("#confirm", chromedp.ByID),
		chromedp.Text("h1", &heading, chromedp.ByQuery)))
	require.Contains(t, heading, "Add an API key")
	require.NoError(t, chromedp.Run(ctx, webtest.Follow("#confirm"), chromedp.Text("#secret", &secret, chromedp.ByID)))
	added := strings.TrimSpace(secret)
	require.True(t, strings.HasPrefix(added, "sk_op_"))
	webtest.Shot(t, ctx, "operator-keys.png")
	require.Equal(t, http.StatusOK, overviewStatus(t, env, added))

	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/operators/"+opID.String()),
		chromedp.Click(`#keys tr.key-active:first-child button.roll`, chromedp.ByQuery), chromedp.WaitVisible("#confirm", chromedp.ByID),
		webtest.Follow("#confirm"), chromedp.Text("#secret", &secret, chromedp.ByID)))
	rolled := strings.TrimSpace(secret)
	require.NotEqual(t, added, rolled)
	require.Equal(t, http.StatusOK, overviewStatus(t, env, rolled))
	require.Equal(t, http.StatusOK, overviewStatus(t, env, added), "the rolled key works through its overlap")

	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/operators/"+opID.String()),
		chromedp.Click(`#keys tr.key-active:first-child button.revoke`, chromedp.ByQuery), chromedp.WaitVisible("#confirm", chromedp.ByID),
		chromedp.Click("#cancel", chromedp.ByID), chromedp.WaitVisible("#keys", chromedp.ByID)))
	require.Equal(t, http.StatusOK, overviewStatus(t, env, rolled), "cancelled: still working")
	var notice string
	// The page loaded afresh: a click on the page the cancel was leaving could
	// land on a node of the old document.
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/operators/"+opID.String()),
		chromedp.Click(`#keys tr.key-active:first-child button.revoke`, chromedp.ByQuery), chromedp.WaitVisible("#confirm", chromedp.ByID),
		webtest.Follow("#confirm"), chromedp.Text("#notice", &notice, chromedp.ByID)))
	require.Contains(t, notice, "revoked")
	require.Equal(t, http.StatusUnauthorized, overviewStatus(t, env, rolled))
	require.Equal(t, http.StatusOK, overviewStatus(t, env, opKey), "the signed-in key is untouched")
}

// overviewStatus is the operator API's answer to key.
func overviewStatus(t *testing.T, env *apitest.Env, key string) int {
	t.Helper()
	res, err := env.OperatorClient(t, key).GetOverviewWithResponse(context.Background())
	require.NoError(t, err)
	return res.StatusCode()
}
