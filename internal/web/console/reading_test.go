package console_test

import (
	"context"
	"regexp"
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

// What an operator reads, in real Chromium on both databases: states and the
// history's reasons in words (no internal code such as order_filled or
// deposit:partial, no "awaiting deposit → awaiting deposit"), names first with
// ids on hover or folded, amounts grouped in thousands to the last decimal; on
// a 390 px phone no cell or amount of the overview, the list, a transaction or
// the batch payout is off-screen; and an action's answer is reached by a
// redirect, so reloading it sends nothing again.
func TestConsoleReadsInWords(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { readsInWordsFlow(t, db) })
	}
}

// internalCode is an identifier as the APIs spell it: a word with an underscore,
// or actor:action.
var internalCode = regexp.MustCompile(`\b[a-z]+_[a-z_]+\b|\b[a-z]+:[a-z]+\b`)

func readsInWordsFlow(t *testing.T, db testdb.Database) {
	env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
	partnerKey := env.NewPartner(t)
	pc := env.Client(t, partnerKey)
	base := env.Root + "/console"

	// Paid in two transfers (10 USDT, then the rest), both confirmed: awaiting its fill.
	tx := create(t, pc, "READ-"+uuid.NewString()[:8], "250000.50")
	rest := decimal.RequireFromString(tx.CryptoAmount).Sub(decimal.NewFromInt(10)).String()
	require.Equal(t, lifecycle.Counted, pay(t, env, tx, "10", 1))
	pay(t, env, tx, rest, 2)
	other := create(t, pc, "READ-"+uuid.NewString()[:8], "1000.00")
	pay(t, env, other, other.CryptoAmount, 3)

	ctx := webtest.Browser(t)
	signIn(t, ctx, base, env.NewOperator(t))
	page := base + "/transactions/" + tx.Id.String()

	var status, history, change, amount, list, partnerTitle string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/transactions?stage=awaiting_fill"),
		chromedp.Text("#results", &list, chromedp.ByID)))
	require.Contains(t, list, "deposit confirming", "states in words")
	require.Contains(t, list, "250,000.50 NGN", "amounts grouped, exact")
	require.Empty(t, internalCode.FindAllString(list, -1), "no internal code in the list")
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(page),
		chromedp.Text("#status", &status, chromedp.ByID),
		chromedp.Text("#history", &history, chromedp.ByID),
		chromedp.Text("#history tbody tr:nth-child(2) .change", &change, chromedp.ByQuery),
		chromedp.Text("#amount", &amount, chromedp.ByID),
		chromedp.AttributeValue("#partner", "title", &partnerTitle, nil, chromedp.ByID)))
	require.Equal(t, "deposit confirming", status)
	require.Equal(t, "still waiting for the deposit", change, "a row that keeps the status says so")
	require.Contains(t, history, "created as waiting for the deposit")
	require.Contains(t, history, "part of the amount received")
	require.Contains(t, history, "waiting for the deposit → deposit confirming")
	require.NotContains(t, history, "→ waiting for the deposit\t", "no move to where it was")
	require.Empty(t, internalCode.FindAllString(history, -1), "no internal code in the history")
	require.Contains(t, amount, "250,000.50 NGN")
	require.Contains(t, partnerTitle, env.PartnerID(t, partnerKey).String(), "the partner's id on hover")
	var main string
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("main", &main, chromedp.ByQuery)))
	require.NotContains(t, main, tx.Id.String(), "ids folded, not beside names")

	// A phone: nothing of the main pages off-screen.
	for _, p := range []string{"", "/transactions?stage=awaiting_fill", "/transactions/" + tx.Id.String(),
		"/payouts/new?partner_id=" + env.PartnerID(t, partnerKey).String(), "/fills/new", "/refund-tasks", "/deposits"} {
		webtest.RequireOnScreen(t, ctx, 390, base+p)
	}
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(page), chromedp.WaitVisible("#history", chromedp.ByID)))
	webtest.Shot(t, ctx, "transaction-narrow.png")

	// An action through its confirmation lands on a page of its own (303 to a
	// GET); reloading it reads the page again and records nothing more.
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(page),
		chromedp.SendKeys("#fill-rate", "1549.10", chromedp.ByID), chromedp.SendKeys("#fill-amount", "250000.50", chromedp.ByID),
		chromedp.SendKeys("#fill-ref", "LP-PRG", chromedp.ByID), chromedp.Click("#fill", chromedp.ByID),
		chromedp.WaitVisible("#confirm", chromedp.ByID)))
	webtest.RequirePostRedirectGet(t, ctx, webtest.Follow("#confirm"), chromedp.WaitVisible("#notice", chromedp.ByID))
	rows := historyRows(t, ctx)
	webtest.RequireReloadReads(t, ctx, chromedp.WaitVisible("#notice", chromedp.ByID))
	require.Equal(t, rows, historyRows(t, ctx), "nothing recorded twice")
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#status", &status, chromedp.ByID)))
	require.Equal(t, "sold, settling", status)

	// A rolled key is shown on the page the form redirects to, once: a reload
	// reads the page without it and rolls nothing.
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/partners/"+env.PartnerID(t, partnerKey).String()),
		chromedp.WaitVisible("button.roll", chromedp.ByQuery)))
	require.True(t, strings.HasPrefix(webtest.RequireShownOnce(t, ctx, "button.roll", "#keys tbody tr", 2), "sk_sandbox_"),
		"the old key and its successor, no third")
}

// historyRows is the current page's status history, row by row.
func historyRows(t *testing.T, ctx context.Context) []string {
	t.Helper()
	var rows []string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('#history tbody tr')).map(r => r.innerText)`, &rows)))
	require.NotEmpty(t, rows)
	for _, r := range rows {
		require.False(t, strings.Contains(r, "0x"), "no address in the history: %q", r)
	}
	return rows
}
