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

	oc "partnerd/gen/operatorclient"
	"partnerd/internal/lifecycle"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// The refund tasks and batch fill pages in headless Chromium: a dust transfer's
// task listed (and filtered by kind), a refused resolve's message in words, the
// task resolved refunded with its hash through the confirmation step, and two
// confirmed transactions filled in one liquidity order; the results are read back
// through the operator API.
func TestConsoleRefundTasksAndBatchFill(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { refundsAndFillFlow(t, db) })
	}
}

func refundsAndFillFlow(t *testing.T, db testdb.Database) {
	env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
	pc := env.Client(t, env.NewPartner(t))
	opKey := env.NewOperator(t)
	ops := env.OperatorClient(t, opKey)
	base := env.Root + "/console"
	bg := context.Background()

	// A transfer below MIN_DEPOSIT: a dust refund task.
	dusty := create(t, pc, "DUST-"+uuid.NewString()[:8], "5000.00")
	dustHash := "0x" + strings.Repeat("d1", 32)
	sender := "0x" + strings.Repeat("5e", 20)
	var out lifecycle.Outcome
	_, err := env.App.Lifecycle().Run(bg, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		t, o, err := env.App.Lifecycle().Receive(ctx, unit, dusty.Id, lifecycle.Incoming{ID: "dep_" + uuid.NewString(), Hash: dustHash, From: sender,
			To: dusty.DepositAddress, Amount: decimal.RequireFromString("0.25"), Confirmations: 1})
		out = o
		return t, err
	})
	require.NoError(t, err)
	require.Equal(t, lifecycle.Dust, out)

	// Two confirmed transactions awaiting their fill, and one that stays out.
	var fills []uuid.UUID
	var want decimal.Decimal
	for i, fiat := range []string{"3000.00", "4500.50", "1000.00"} {
		tx := create(t, pc, "FILL-"+uuid.NewString()[:8], fiat)
		confirmed(t, env, tx.Id, "0x"+strings.Repeat(string("efa"[i]), 64))
		fills = append(fills, tx.Id)
		if i < 2 {
			want = want.Add(decimal.RequireFromString(tx.CryptoAmount))
		}
	}

	ctx := webtest.Browser(t)
	var text string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.SendKeys("#key", opKey, chromedp.ByID),
		chromedp.Click("#signin", chromedp.ByID),
		chromedp.WaitVisible("#stages", chromedp.ByID),
		chromedp.Navigate(base+"/refund-tasks?kind=excess"),
		chromedp.Text("#empty", &text, chromedp.ByID),
	))
	require.Contains(t, text, "No open refund task of kind excess")
	row := "#task-" + taskOf(t, ops, dustHash).String()
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/refund-tasks?kind=dust"),
		chromedp.Text(row, &text, chromedp.ByQuery),
	))
	for _, want := range []string{"dust", "0.250000 USDT", "bep20", sender, dustHash} {
		require.Contains(t, text, want)
	}
	webtest.Shot(t, ctx, "refund-tasks.png")

	// Refunded without its hash: the API's refusal in words, the task still open.
	resolve := func(action, hash string) {
		t.Helper()
		acts := []chromedp.Action{chromedp.Navigate(base + "/refund-tasks?kind=dust"),
			chromedp.SetValue(row+` select[name="action"]`, action, chromedp.ByQuery)}
		if hash != "" {
			acts = append(acts, chromedp.SendKeys(row+` input[name="tx_hash"]`, hash, chromedp.ByQuery))
		}
		acts = append(acts, chromedp.Click(row+` button`, chromedp.ByQuery), chromedp.WaitVisible("#confirm", chromedp.ByID),
			webtest.Follow("#confirm"), chromedp.WaitVisible("#kinds", chromedp.ByID))
		require.NoError(t, chromedp.Run(ctx, acts...))
	}
	resolve("refunded", "")
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#problem", &text, chromedp.ByID)))
	require.Contains(t, text, "tx_hash")
	require.NotContains(t, text, "HTTP 4", "the words first; the status folded beneath them")
	require.NoError(t, chromedp.Run(ctx, chromedp.TextContent("#problem details code", &text, chromedp.ByQuery)))
	require.Contains(t, text, "HTTP 4")
	require.Equal(t, oc.UnmatchedDepositStatusOpen, statusOfTask(t, ops, dustHash))

	refund := "0x" + strings.Repeat("7a", 32)
	resolve("refunded", refund)
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#notice", &text, chromedp.ByID)))
	require.Contains(t, text, "resolved: refunded")
	done := task(t, ops, dustHash)
	require.Equal(t, oc.UnmatchedDepositStatusRefunded, done.Status)
	require.Equal(t, refund, *done.ResolutionTxHash)
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/refund-tasks?kind=dust&status=resolved"),
		chromedp.Text(row, &text, chromedp.ByQuery),
	))
	require.Contains(t, text, refund)

	// Batch fill of the first two.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/fills/new"),
		chromedp.WaitVisible("#batch", chromedp.ByID),
	))
	for _, id := range fills[:2] {
		require.NoError(t, chromedp.Run(ctx, chromedp.Click(`input[value="`+id.String()+`"]`, chromedp.ByQuery)))
	}
	webtest.Shot(t, ctx, "batch-fill.png")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys("#batch-rate", "1549.10", chromedp.ByID),
		chromedp.SendKeys("#batch-ref", "LP-BATCH-1", chromedp.ByID),
		webtest.Follow("#batch-submit"),
		chromedp.WaitVisible("#confirm", chromedp.ByID),
		webtest.Follow("#confirm"),
		chromedp.Text("#notice", &text, chromedp.ByID),
	))
	require.Contains(t, text, "Fill recorded: 2 transactions")
	require.Contains(t, text, "LP-BATCH-1")
	list, err := ops.ListFillsWithResponse(bg, &oc.ListFillsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
	require.Len(t, list.JSON200.Data.Data, 1)
	b := list.JSON200.Data.Data[0]
	require.ElementsMatch(t, fills[:2], b.TransactionIds)
	require.Equal(t, "LP-BATCH-1", b.Reference)
	require.Equal(t, "1549.10", *b.Rate)
	require.True(t, want.Equal(decimal.RequireFromString(b.CryptoAmount)), "the batch's USDT is the two transactions': %s", b.CryptoAmount)
	for i, id := range fills {
		got, err := ops.GetOperatorTransactionWithResponse(bg, id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, got.StatusCode(), string(got.Body))
		filled := got.JSON200.Data.Status == oc.TransactionStatusOrderFilled
		require.Equal(t, i < 2, filled, "transaction %d is %s", i, got.JSON200.Data.Status)
	}
}

// task returns the refund task of the transfer with hash (any status).
func task(t *testing.T, ops *oc.ClientWithResponses, hash string) oc.RefundTask {
	t.Helper()
	for _, st := range []oc.ListRefundTasksParamsStatus{oc.ListRefundTasksParamsStatusOpen, oc.ListRefundTasksParamsStatusResolved} {
		res, err := ops.ListRefundTasksWithResponse(context.Background(), &oc.ListRefundTasksParams{Status: &st})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		for _, x := range res.JSON200.Data.Data {
			if x.TxHash == hash {
				return x
			}
		}
	}
	t.Fatalf("no refund task for %s", hash)
	return oc.RefundTask{}
}

// taskOf is the id of the refund task of the transfer with hash.
func taskOf(t *testing.T, ops *oc.ClientWithResponses, hash string) uuid.UUID {
	return task(t, ops, hash).Id
}

// statusOfTask is the status of the refund task of the transfer with hash.
func statusOfTask(t *testing.T, ops *oc.ClientWithResponses, hash string) oc.UnmatchedDepositStatus {
	return task(t, ops, hash).Status
}
