package console_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/lifecycle"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// The screening review queue in headless Chromium: two deposits from a listed
// sender are counted held on the overview; the queue shows each with its sender
// and evidence (the list, its published date, the hit); one is blocked and the
// other released, each with a note and through the confirmation step; the
// outcomes are read back through the operator API, the blocked one is in the
// blocked-property report the console downloads, and the queue is then empty.
func TestConsoleScreeningReview(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { screeningReviewFlow(t, db) })
	}
}

func screeningReviewFlow(t *testing.T, db testdb.Database) {
	env := apitest.Start(t, db, map[string]string{"SCREENING": "list", "LIQUIDITY": "operator"})
	pc := env.Client(t, env.NewPartner(t))
	opKey := env.NewOperator(t)
	ops := env.OperatorClient(t, opKey)
	base := env.Root + "/console"
	bg := context.Background()

	sender := "0x" + strings.Repeat("5a", 20)
	env.ListAddress(t, "Test SDN list", sender)
	blocked := create(t, pc, "HELD-"+uuid.NewString()[:8], "3000.00")
	released := create(t, pc, "HELD-"+uuid.NewString()[:8], "4500.00")
	require.Equal(t, lifecycle.Counted, env.Deposit(t, blocked, sender))
	require.Equal(t, lifecycle.Counted, env.Deposit(t, released, sender))

	ctx := webtest.Browser(t)
	var held, page string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.SendKeys("#key", opKey, chromedp.ByID),
		chromedp.Click("#signin", chromedp.ByID),
		chromedp.WaitVisible("#stages", chromedp.ByID),
		chromedp.Text("#screening-work .work-held .count", &held, chromedp.ByQuery),
		chromedp.Navigate(base+"/screening"),
		chromedp.Text("#review-"+blocked.Id.String(), &page, chromedp.ByQuery),
	))
	require.Equal(t, "2", strings.TrimSpace(held))
	for _, want := range []string{sender, "Test SDN list", "published 2026-11-01", "named on a list", blocked.CryptoAmount, "held for review"} {
		require.Contains(t, page, want)
	}

	// Block one: the note is required and carried through the confirmation page.
	decide := func(tx uuid.UUID, decision, note string) string {
		t.Helper()
		form := "#review-" + tx.String() + " form"
		var notice string
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Navigate(base+"/screening"),
			chromedp.SetValue(form+" select.decision", decision, chromedp.ByQuery),
			chromedp.SendKeys(form+" input.note-input", note, chromedp.ByQuery),
			chromedp.Click(form+" button.decide", chromedp.ByQuery),
			chromedp.WaitVisible("#confirm", chromedp.ByID),
			chromedp.Text("#subject", &page, chromedp.ByID),
			webtest.Follow("#confirm"),
			chromedp.Text("#notice", &notice, chromedp.ByID),
		))
		return notice
	}
	notice := decide(blocked.Id, "block", "Sender named on the SDN list; reported")
	require.Contains(t, page, "blocked-property report", "the confirmation says what block does")
	require.Contains(t, notice, "blocked")
	require.Contains(t, notice, "failed")
	notice = decide(released.Id, "release", "Same owner as a cleared wallet: false positive")
	require.Contains(t, page, "false positive")
	require.Contains(t, notice, "released")

	got, err := ops.GetOperatorTransactionWithResponse(bg, blocked.Id)
	require.NoError(t, err)
	require.Equal(t, oc.TransactionStatusFailed, got.JSON200.Data.Status)
	got, err = ops.GetOperatorTransactionWithResponse(bg, released.Id)
	require.NoError(t, err)
	require.NotEqual(t, oc.TransactionStatusFailed, got.JSON200.Data.Status)
	audit, err := ops.ListAuditWithResponse(bg, &oc.ListAuditParams{TransactionId: &blocked.Id})
	require.NoError(t, err)
	require.Contains(t, string(audit.Body), "screening_blocked")
	// The block's history row names the operator who decided, as the audit does.
	var who []string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/transactions/"+blocked.Id.String()),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('td.operator')).map(td => td.textContent.trim())`, &who)))
	require.NotEmpty(t, who)
	require.NotEqual(t, "system", who[len(who)-1], "the block is the operator's, not the system's: %v", who)

	var empty string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+"/screening"), chromedp.Text("#empty", &empty, chromedp.ByID)))
	require.Contains(t, empty, "No transaction waits on a review")

	res, err := http.DefaultClient.Do(withCookie(t, base+"/screening/blocked.csv", sessionOf(t, ctx)))
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, res.Header.Get("Content-Type"), "text/csv")
	csv, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Contains(t, string(csv), blocked.Id.String())
	require.NotContains(t, string(csv), released.Id.String())
}
