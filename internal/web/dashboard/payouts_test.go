package dashboard_test

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit"
	"partnerd/internal/web/webkit/webtest"
)

// operatorPayouts: the back office fills sales and pays partners itself, so
// payout batches are recorded by an operator.
var operatorPayouts = map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"}

// newTx creates a direct-mode transaction of fiat NGN through the partner API.
func newTx(t *testing.T, api *client.ClientWithResponses, ref, fiat string) client.Transaction {
	t.Helper()
	res, err := api.CreateTransactionWithResponse(context.Background(), &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
		client.CreateTransactionRequest{MerchantReference: ref, CryptoCurrency: "usdt", Network: "trc20", FiatAmount: &fiat})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	return res.JSON201.Data
}

// complete takes tx to completed: its deposit confirmed on chain, the sale
// filled and settled by an operator.
func complete(t *testing.T, s *site, ops *oc.ClientWithResponses, tx client.Transaction) {
	t.Helper()
	ctx := context.Background()
	engine := s.Env.App.Lifecycle()
	_, err := engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return engine.DetectDeposit(ctx, unit, tx.Id, lifecycle.DepositInput{ID: "dep_" + uuid.NewString(),
			Hash: strings.ReplaceAll(uuid.NewString()+uuid.NewString(), "-", ""), Confirmations: 1})
	})
	require.NoError(t, err)
	_, err = engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return engine.Confirm(ctx, unit, tx.Id, 20)
	})
	require.NoError(t, err)
	f, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: uuid.NewString()},
		oc.FillRequest{Rate: "1549.10", FiatAmount: tx.Amount, Reference: "LP-" + tx.MerchantReference})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, f.StatusCode(), string(f.Body))
	st, err := ops.SettleOrderWithResponse(ctx, tx.Id, &oc.SettleOrderParams{IdempotencyKey: uuid.NewString()},
		oc.ReferenceRequest{Reference: "SETTLE-" + tx.MerchantReference})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, st.StatusCode(), string(st.Body))
}

// pay records one bank transfer paying ids, as an operator.
func pay(t *testing.T, ops *oc.ClientWithResponses, partner uuid.UUID, ref, total string, ids ...uuid.UUID) oc.Batch {
	t.Helper()
	res, err := ops.CreatePayoutWithResponse(context.Background(), &oc.CreatePayoutParams{IdempotencyKey: uuid.NewString()},
		oc.PayoutRequest{PartnerId: partner, TransactionIds: ids, Reference: ref, FiatAmount: total})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data
}

// download fetches a dashboard URL with the browser's session and returns the
// answer and its body.
func download(t *testing.T, ctx context.Context, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.AddCookie(sessionCookie(t, ctx))
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

// csvRows maps the export's transaction_id column to its amount column.
func csvRows(t *testing.T, body, idCol, amountCol string) map[string]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, recs, "a header row")
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	out := map[string]string{}
	for _, r := range recs[1:] {
		out[r[col[idCol]]] = r[col[amountCol]]
	}
	return out
}

// The payouts pages in Chromium: a finance user sees the batch that paid the
// partner (bank reference, total, date) and its transactions, the revenue share
// of the period, and downloads CSV exports holding exactly the period's records
// with their exact amounts; another partner's payout is 404 and its records
// never appear.
func TestPayoutPages(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			s := signedInWith(t, db, partnerusers.Finance, operatorPayouts)
			ctx, c := s.Browser, context.Background()
			ops := s.Env.OperatorClient(t, s.Env.NewOperator(t))
			first, second := newTx(t, s.API, "PAY-1", "150000.00"), newTx(t, s.API, "PAY-2", "75250.50")
			waiting := newTx(t, s.API, "PAY-3", "20000.00")
			older := newTx(t, s.API, "PAY-OLD", "1000.00")
			complete(t, s, ops, first)
			complete(t, s, ops, second)
			batch := pay(t, ops, s.PartnerID, "NIP-000013261126", "225250.50", first.Id, second.Id)
			// The older transaction was made three days ago.
			threeDaysAgo := time.Now().UTC().AddDate(0, 0, -3)
			_, err := s.Env.Store.SQL().ExecContext(c, "UPDATE transactions SET created_at = $1 WHERE id = $2", threeDaysAgo, older.Id)
			require.NoError(t, err)

			// Another partner's payout and transactions in the same days.
			otherKey := s.Env.NewPartner(t)
			other := &site{Env: s.Env, API: s.Env.Client(t, otherKey), PartnerID: s.Env.PartnerID(t, otherKey)}
			theirTx := newTx(t, other.API, "THEIRS-1", "5000.00")
			complete(t, other, ops, theirTx)
			theirBatch := pay(t, ops, other.PartnerID, "NIP-THEIRS", "5000.00", theirTx.Id)

			// The list: the batch with its reference, total and date.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/payouts"))
			row := "#payout-" + batch.Id.String()
			require.Contains(t, text(t, ctx, row), "NIP-000013261126")
			require.Equal(t, "225,250.50", text(t, ctx, row+" .total"), "grouped in thousands, exact")
			require.NotContains(t, text(t, ctx, "#payouts"), "NIP-THEIRS")
			webtest.Shot(t, ctx, "payouts.png")

			// The batch's page lists the transactions it paid.
			submit(t, ctx, row+" a", "#paid")
			require.Contains(t, text(t, ctx, "#total"), "225,250.50 NGN")
			paid := text(t, ctx, "#paid")
			require.Contains(t, paid, "PAY-1")
			require.Contains(t, paid, "150,000.00")
			require.Contains(t, paid, "PAY-2")
			require.Contains(t, paid, "75,250.50")
			require.NotContains(t, paid, "PAY-3")

			// The statement of the period: the completed transactions' shares.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/payouts/statements"))
			require.Equal(t, "2", text(t, ctx, "#count"))
			rev, err := s.API.ListRevenueWithResponse(c, &client.ListRevenueParams{IncludeSummary: ptr(true)})
			require.NoError(t, err)
			require.Equal(t, webkit.Amount(rev.JSON200.Data.Summary.TotalPartnerShare)+" NGN", text(t, ctx, "#total-share"))

			// Exports: exactly the period's transactions, exact amounts, never another partner's.
			today := time.Now().UTC().Format("2006-01-02")
			res, body := download(t, ctx, s.Base+"/payouts/exports/transactions?from="+today+"&to="+today)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			require.Contains(t, res.Header.Get("Content-Type"), "text/csv")
			require.Contains(t, res.Header.Get("Content-Disposition"), `attachment; filename="transactions_`)
			require.Equal(t, map[string]string{first.Id.String(): "150000.00", second.Id.String(): "75250.50", waiting.Id.String(): "20000.00"},
				csvRows(t, body, "transaction_id", "amount"))
			day := threeDaysAgo.Format("2006-01-02")
			_, body = download(t, ctx, s.Base+"/payouts/exports/transactions?from="+day+"&to="+day)
			require.Equal(t, map[string]string{older.Id.String(): "1000.00"}, csvRows(t, body, "transaction_id", "amount"))
			res, body = download(t, ctx, s.Base+"/payouts/exports/payouts?from="+today+"&to="+today)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			require.Contains(t, res.Header.Get("Content-Disposition"), `filename="payouts_`)
			require.NotContains(t, body, theirTx.Id.String())
			require.NotContains(t, body, "NIP-THEIRS")
			require.Contains(t, body, "NIP-000013261126")
			res, body = download(t, ctx, s.Base+"/payouts/exports/transactions?from=yesterday")
			require.Equal(t, http.StatusBadRequest, res.StatusCode)
			require.Contains(t, body, "not a date")

			// Another partner's payout by URL: the 404 page.
			require.Equal(t, http.StatusNotFound, open(t, ctx, s.Base+"/payouts/"+theirBatch.Id.String()))
			require.Contains(t, text(t, ctx, "#notfound"), "Not found")
			require.Equal(t, http.StatusNotFound, open(t, ctx, s.Base+"/payouts/exports/secrets"))

			// The transactions list, for the README.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/transactions"))
			require.NoError(t, chromedp.Run(ctx, chromedp.WaitVisible("#transactions", chromedp.ByID)))
			webtest.Shot(t, ctx, "transactions.png")

			// A developer does not open the payouts.
			dev := newUser(t, s.Env, s.PartnerID, partnerusers.Developer)
			dctx := webtest.Browser(t)
			signIn(t, dctx, s.Base, dev.Email, testPassword)
			require.Equal(t, http.StatusForbidden, open(t, dctx, s.Base+"/payouts"))
			require.Equal(t, http.StatusForbidden, open(t, dctx, s.Base+"/payouts/exports/transactions"))
		})
	}
}
