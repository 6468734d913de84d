package dashboard_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
)

// A transaction the sandbox simulator pays out is on the payouts page as a payout
// of one, like a production payout: its SIM- reference, one transaction, its exact
// total; its page lists the transaction, and the day's payouts export has its row.
func TestSimulatedPayoutOnThePayoutsPage(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			s := signedInWith(t, db, partnerusers.Finance, nil)
			ctx, c := s.Browser, context.Background()
			tx := newTx(t, s.API, "SIMULATED-1", "48250.25")
			for _, ev := range []client.SimulateRequestEvent{client.SimulateRequestEventDepositDetected, client.SimulateRequestEventDepositConfirmed,
				client.SimulateRequestEventTransactionCompleted, client.SimulateRequestEventPayoutSettled} {
				res, err := s.API.SimulateSandboxEventWithResponse(c, nil, client.SimulateRequest{Event: ev, TransactionId: tx.Id})
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.StatusCode(), "%s: %s", ev, res.Body)
			}
			list, err := s.API.ListPayoutsWithResponse(c, &client.ListPayoutsParams{})
			require.NoError(t, err)
			require.Len(t, list.JSON200.Data.Data, 1, "the payout of one")
			id := list.JSON200.Data.Data[0].Id
			ref := "SIM-" + id.String()[:8]

			// The list: the payout with its reference, one transaction and its total.
			require.Equal(t, http.StatusOK, open(t, ctx, s.Base+"/payouts"))
			row := "#payout-" + id.String()
			require.Contains(t, text(t, ctx, row), ref)
			require.Equal(t, "1", text(t, ctx, row+" td.num"), "one transaction")
			require.Equal(t, "48,250.25", text(t, ctx, row+" .total"))

			// Its page lists the transaction it paid.
			submit(t, ctx, row+" a", "#paid")
			require.Contains(t, text(t, ctx, "#total"), "48,250.25 NGN")
			paid := text(t, ctx, "#paid")
			require.Contains(t, paid, "SIMULATED-1")
			require.Contains(t, paid, "48,250.25")

			// The day's payouts export: its row, under its payout.
			today := time.Now().UTC().Format("2006-01-02")
			exp, body := download(t, ctx, s.Base+"/payouts/exports/payouts?from="+today+"&to="+today)
			require.Equal(t, http.StatusOK, exp.StatusCode, body)
			require.Equal(t, map[string]string{tx.Id.String(): "48250.25"}, csvRows(t, body, "transaction_id", "amount"))
			require.Equal(t, map[string]string{tx.Id.String(): id.String()}, csvRows(t, body, "transaction_id", "payout_id"))
			require.Equal(t, map[string]string{tx.Id.String(): ref}, csvRows(t, body, "transaction_id", "reference"))
		})
	}
}
