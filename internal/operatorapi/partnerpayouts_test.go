package operatorapi_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/payouts"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
)

// The payout batches the operators record are the partner's payouts: listed and
// read through the partner API with the transactions each paid and the exact
// total, exported as CSV one row per transaction; another partner sees none of
// them (404, empty list, empty export).
func TestPartnerPayouts(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		keyA := env.NewPartner(t)
		pa, pb := env.Client(t, keyA), env.Client(t, env.NewPartner(t))
		partnerA := env.PartnerID(t, keyA)
		ops := env.OperatorClient(t, env.NewOperator(t))

		first, second := completed(t, env, pa, ops, "5000.00"), completed(t, env, pa, ops, "7500.50")
		alone := completed(t, env, pa, ops, "1000.00")
		pay := func(ref, total string, ids ...uuid.UUID) oc.Batch {
			t.Helper()
			res, err := ops.CreatePayoutWithResponse(ctx, &oc.CreatePayoutParams{IdempotencyKey: key()},
				oc.PayoutRequest{PartnerId: partnerA, TransactionIds: ids, Reference: ref, FiatAmount: total})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			return res.JSON200.Data
		}
		// The balance before any payout: all three owed, to the kobo.
		balance := func(c *client.ClientWithResponses) client.Balance {
			t.Helper()
			res, err := c.GetBalanceWithResponse(ctx)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			return res.JSON200.Data
		}
		before := balance(pa)
		require.Equal(t, client.BalanceLine{Amount: "13500.50", TransactionCount: 3}, before.Owed)
		require.Equal(t, client.BalanceLine{Amount: "0.00", TransactionCount: 0}, before.InPayout)

		older := pay("NIP-OLDER", "1000.00", alone.Id)
		batch := pay("=NIP-000013261123101500000001", "12500.50", second.Id, first.Id)

		// After: nothing owed; what was paid in the period is what GET /payouts lists
		// for its dates.
		after := balance(pa)
		require.Equal(t, client.BalanceLine{Amount: "0.00", TransactionCount: 0}, after.Owed)
		inPeriod, err := pa.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{From: &after.PeriodStart})
		require.NoError(t, err)
		paid, count := decimal.Zero, 0
		for _, p := range inPeriod.JSON200.Data.Data {
			if p.CreatedAt.Before(after.PeriodEnd) {
				paid, count = paid.Add(decimal.RequireFromString(p.Amount)), count+p.TransactionCount
			}
		}
		require.Equal(t, paid.StringFixed(2), after.PaidOut.Amount)
		require.Equal(t, count, after.PaidOut.TransactionCount)
		require.Equal(t, len(inPeriod.JSON200.Data.Data), after.PayoutCount)
		require.Equal(t, after.PeriodStart.AddDate(0, 1, 0), after.PeriodEnd, "a calendar month")
		require.Equal(t, client.BalanceLine{Amount: "0.00", TransactionCount: 0}, balance(pb).Owed, "another partner's balance is its own")

		// The list: newest first, exact totals, paged.
		list, err := pa.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{Limit: ptr(1)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
		page := list.JSON200.Data
		require.Len(t, page.Data, 1)
		require.True(t, page.HasMore)
		got := page.Data[0]
		require.Equal(t, batch.Id, got.Id)
		require.Equal(t, "=NIP-000013261123101500000001", got.Reference)
		require.Equal(t, "12500.50", got.Amount)
		require.Equal(t, 2, got.TransactionCount)
		list, err = pa.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{Limit: ptr(1), Cursor: page.NextCursor})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{older.Id}, []uuid.UUID{list.JSON200.Data.Data[0].Id})
		require.False(t, list.JSON200.Data.HasMore)

		// The window excludes what was paid before it.
		from := got.CreatedAt
		inWindow, err := pa.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{From: &from})
		require.NoError(t, err)
		require.Len(t, inWindow.JSON200.Data.Data, 1)
		require.Equal(t, batch.Id, inWindow.JSON200.Data.Data[0].Id)

		// One payout with its transactions, in the recorded order.
		one, err := pa.GetPayoutWithResponse(ctx, batch.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, one.StatusCode(), string(one.Body))
		d := one.JSON200.Data
		require.Equal(t, "12500.50", d.Amount)
		require.Len(t, d.Transactions, 2)
		require.Equal(t, second.Id, d.Transactions[0].TransactionId)
		require.Equal(t, "7500.50", d.Transactions[0].Amount)
		require.Equal(t, first.MerchantReference, d.Transactions[1].MerchantReference)
		require.Equal(t, first.CryptoAmount, d.Transactions[1].CryptoAmount)

		// The export: one row per transaction paid, exact amounts, formulas neutralised.
		exp, err := pa.ExportPayoutsWithResponse(ctx, &client.ExportPayoutsParams{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, exp.StatusCode(), string(exp.Body))
		require.Contains(t, exp.HTTPResponse.Header.Get("Content-Disposition"), `attachment; filename="payouts_19700101T000000Z_`)
		rows := readCSV(t, exp.Body)
		require.Equal(t, payouts.Columns, rows[0])
		require.Equal(t, [][]string{
			{batch.Id.String(), "'=NIP-000013261123101500000001", "12500.50", got.CreatedAt.UTC().Format(time.RFC3339), second.Id.String(), second.MerchantReference, "bep20", "usdt", second.CryptoAmount, "7500.50"},
			{batch.Id.String(), "'=NIP-000013261123101500000001", "12500.50", got.CreatedAt.UTC().Format(time.RFC3339), first.Id.String(), first.MerchantReference, "bep20", "usdt", first.CryptoAmount, "5000.00"},
			{older.Id.String(), "NIP-OLDER", "1000.00", older.CreatedAt.UTC().Format(time.RFC3339), alone.Id.String(), alone.MerchantReference, "bep20", "usdt", alone.CryptoAmount, "1000.00"},
		}, rows[1:])
		exp, err = pa.ExportPayoutsWithResponse(ctx, &client.ExportPayoutsParams{From: &from})
		require.NoError(t, err)
		require.Len(t, readCSV(t, exp.Body), 3, "the header and the newer payout's two rows")

		// Another partner: nothing of A's.
		nf, err := pb.GetPayoutWithResponse(ctx, batch.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, nf.StatusCode())
		fill, err := pa.GetPayoutWithResponse(ctx, uuid.New())
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, fill.StatusCode())
		none, err := pb.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{})
		require.NoError(t, err)
		require.Empty(t, none.JSON200.Data.Data)
		exp, err = pb.ExportPayoutsWithResponse(ctx, &client.ExportPayoutsParams{})
		require.NoError(t, err)
		require.Equal(t, [][]string{payouts.Columns}, readCSV(t, exp.Body))
	})
}

// The transactions export holds exactly the period's transactions of the
// partner, newest first, with the amounts the API answers.
func TestExportTransactions(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, nil)
		ctx := context.Background()
		keyA := env.NewPartner(t)
		pa, pb := env.Client(t, keyA), env.Client(t, env.NewPartner(t))
		var made []client.TransactionDetail
		for _, fiat := range []string{"1000.00", "2500.25", "3999.99", "150000.00"} {
			tx := create(t, pa, "+EXP-"+uuid.NewString(), fiat)
			d, err := pa.GetTransactionWithResponse(ctx, tx.Id)
			require.NoError(t, err)
			made = append(made, d.JSON200.Data)
		}
		create(t, pb, "EXP-B-"+uuid.NewString(), "1000.00")

		// The middle two, both ends inclusive.
		from, to := made[1].CreatedAt, made[2].CreatedAt
		exp, err := pa.ExportTransactionsWithResponse(ctx, &client.ExportTransactionsParams{From: &from, To: &to})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, exp.StatusCode(), string(exp.Body))
		require.Equal(t, `attachment; filename="transactions_`+from.UTC().Format("20060102T150405Z")+"_"+to.UTC().Format("20060102T150405Z")+`.csv"`,
			exp.HTTPResponse.Header.Get("Content-Disposition"))
		rows := readCSV(t, exp.Body)
		require.Equal(t, transactions.ExportColumns, rows[0])
		require.Len(t, rows, 3, "%v", rows)
		for i, d := range []client.TransactionDetail{made[2], made[1]} {
			require.Equal(t, []string{d.Id.String(), "'" + d.MerchantReference, "", "", "awaiting_deposit", "bep20", "usdt",
				d.CryptoAmount, d.Amount, d.Rate, d.DepositAddress, d.CreatedAt.UTC().Format(time.RFC3339),
				d.UpdatedAt.UTC().Format(time.RFC3339), d.ExpiresAt.UTC().Format(time.RFC3339), ""}, rows[i+1])
		}

		// Everything of A's, and an empty period.
		exp, err = pa.ExportTransactionsWithResponse(ctx, &client.ExportTransactionsParams{})
		require.NoError(t, err)
		require.Len(t, readCSV(t, exp.Body), 5)
		past := made[0].CreatedAt.Add(-time.Hour)
		exp, err = pa.ExportTransactionsWithResponse(ctx, &client.ExportTransactionsParams{To: &past})
		require.NoError(t, err)
		require.Equal(t, [][]string{transactions.ExportColumns}, readCSV(t, exp.Body))

		// A malformed period is a 400 in the error body.
		req, err := http.NewRequest(http.MethodGet, env.BaseURL+"/exports/transactions?from=yesterday", nil)
		require.NoError(t, err)
		req.Header.Set("X-API-KEY", keyA)
		bad, err := env.HTTPClient(t).Do(req)
		require.NoError(t, err)
		require.NoError(t, bad.Body.Close())
		require.Equal(t, http.StatusBadRequest, bad.StatusCode)
	})
}

func readCSV(t *testing.T, body []byte) [][]string {
	t.Helper()
	require.True(t, strings.HasSuffix(string(body), "\r\n"), "RFC 4180 line ends")
	rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	require.NoError(t, err)
	return rows
}
