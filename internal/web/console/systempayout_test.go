package console_test

import (
	"context"
	"encoding/csv"
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

// A payout the sandbox simulator records (no operator) shows in the console like
// any payout: the recorded payouts list it with its partner, SIM- reference and
// total; the transaction's page shows the payout and its history entry as the
// system's, naming no operator; the payouts CSV has its row with the nil UUID as
// its operator.
func TestConsoleShowsASimulatedPayout(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			env := apitest.Start(t, db, nil)
			pc := env.Client(t, env.NewPartner(t))
			tx := create(t, pc, "CONSOLE-SIM-"+uuid.NewString()[:8], "22500.75")
			for _, ev := range []client.SimulateRequestEvent{client.SimulateRequestEventDepositDetected, client.SimulateRequestEventDepositConfirmed,
				client.SimulateRequestEventTransactionCompleted, client.SimulateRequestEventPayoutSettled} {
				res, err := pc.SimulateSandboxEventWithResponse(context.Background(), nil, client.SimulateRequest{Event: ev, TransactionId: tx.Id})
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.StatusCode(), "%s: %s", ev, res.Body)
			}
			list, err := pc.ListPayoutsWithResponse(context.Background(), &client.ListPayoutsParams{})
			require.NoError(t, err)
			require.Len(t, list.JSON200.Data.Data, 1)
			ref := list.JSON200.Data.Data[0].Reference
			require.True(t, strings.HasPrefix(ref, "SIM-"), ref)

			base := env.Root + "/console"
			ctx := webtest.Browser(t)
			var text string
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(base+"/login"),
				chromedp.SetValue("#key", env.NewOperator(t), chromedp.ByID),
				chromedp.Click("#signin", chromedp.ByID),
				chromedp.WaitVisible("#stages", chromedp.ByID),
				chromedp.Navigate(base+"/payouts"),
				chromedp.Text("#payouts", &text, chromedp.ByID),
			))
			require.Contains(t, text, ref)
			require.Contains(t, text, "Test partner")
			require.Contains(t, text, "22,500.75")

			var payout, last string
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(base+"/transactions/"+tx.Id.String()),
				chromedp.WaitVisible("#history", chromedp.ByID),
				chromedp.Text("dl", &payout, chromedp.ByQuery),
				chromedp.Text("#history tbody tr:last-child td.operator", &last, chromedp.ByQuery),
			))
			require.Contains(t, payout, "ref "+ref)
			require.Equal(t, "system", strings.TrimSpace(last), "no operator named")

			res, err := http.DefaultClient.Do(withCookie(t, base+"/payouts.csv", sessionOf(t, ctx)))
			require.NoError(t, err)
			defer func() { _ = res.Body.Close() }()
			require.Equal(t, http.StatusOK, res.StatusCode)
			rows, err := csv.NewReader(res.Body).ReadAll()
			require.NoError(t, err)
			require.Len(t, rows, 2, "the header and the payout")
			col := map[string]int{}
			for i, name := range rows[0] {
				col[name] = i
			}
			require.Equal(t, ref, rows[1][col["reference"]])
			require.Equal(t, uuid.Nil.String(), rows[1][col["operator_id"]])
		})
	}
}
