package operatorapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

func simulate(t *testing.T, c *client.ClientWithResponses, id uuid.UUID, ev client.SimulateRequestEvent) client.TransactionDetail {
	t.Helper()
	res, err := c.SimulateSandboxEventWithResponse(context.Background(), nil, client.SimulateRequest{Event: ev, TransactionId: id})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), "%s: %s", ev, res.Body)
	return res.JSON200.Data
}

// waitPaidOut waits until transaction id is completed with its payout settled.
func waitPaidOut(t *testing.T, c *client.ClientWithResponses, id uuid.UUID) client.StatusHistory {
	t.Helper()
	var h client.StatusHistory
	require.Eventually(t, func() bool {
		h = partnerHistory(t, c, id)
		return len(h.History) == 6
	}, 30*time.Second, 100*time.Millisecond, "settled and paid out by itself")
	return h
}

// In staging with SETTLEMENT_MODE=auto a sandbox integration sees the whole life
// without calling the simulator after the deposit: the fill is followed by the
// settlement and the payout, SIMULATED_SETTLEMENT_DELAY later.
func TestAutoSettlementInStaging(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"SETTLEMENT_MODE": "auto", "SIMULATED_SETTLEMENT_DELAY": "1s", "JOB_POLL_INTERVAL": "50ms"})
		pc := env.Client(t, env.NewPartner(t))
		tx := create(t, pc, "AUTO-"+uuid.NewString(), "3000.00")
		simulate(t, pc, tx.Id, client.SimulateRequestEventDepositDetected)
		filled := simulate(t, pc, tx.Id, client.SimulateRequestEventDepositConfirmed)
		require.Equal(t, client.TransactionStatusOrderFilled, filled.Status, "the simulated liquidity fills at once")

		h := waitPaidOut(t, pc, tx.Id)
		require.Equal(t, client.TransactionStatusCompleted, h.Status)
		require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled", "order:settled", "payout:settled"}, reasons(h))
		require.False(t, h.History[4].ChangedAt.Before(h.History[3].ChangedAt.Add(time.Second)), "settled no earlier than the delay after the fill")
		require.Equal(t, "auto", (*h.History[4].Metadata)["by"])
		require.Equal(t, []string{"transaction.created", "deposit.detected", "deposit.confirmed", "transaction.completed", "payout.settled"}, eventTypes(t, env, tx.Id))

		// The simulator still works and the jobs then find nothing to do.
		tx2 := create(t, pc, "AUTO-"+uuid.NewString(), "3000.00")
		simulate(t, pc, tx2.Id, client.SimulateRequestEventDepositDetected)
		simulate(t, pc, tx2.Id, client.SimulateRequestEventDepositConfirmed)
		simulate(t, pc, tx2.Id, client.SimulateRequestEventTransactionCompleted)
		h2 := waitPaidOut(t, pc, tx2.Id)
		require.Equal(t, "payout:settled", h2.History[5].Reason)
		time.Sleep(1500 * time.Millisecond)
		require.Len(t, partnerHistory(t, pc, tx2.Id).History, 6, "no second settlement")
	})
}

// The automatic steps are River jobs committed with the fill: a restart between the
// fill and the settlement loses nothing.
func TestAutoSettlementSurvivesRestart(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		settings := map[string]string{"SETTLEMENT_MODE": "auto", "SIMULATED_SETTLEMENT_DELAY": "2s", "JOB_POLL_INTERVAL": "50ms"}
		env := apitest.Start(t, db, settings)
		key := env.NewPartner(t)
		pc := env.Client(t, key)
		tx := create(t, pc, "RESTART-"+uuid.NewString(), "3000.00")
		simulate(t, pc, tx.Id, client.SimulateRequestEventDepositDetected)
		simulate(t, pc, tx.Id, client.SimulateRequestEventDepositConfirmed)
		require.Len(t, partnerHistory(t, pc, tx.Id).History, 4, "not settled before the restart")
		env.Stop()

		env = apitest.Start(t, db, settings)
		h := waitPaidOut(t, env.Client(t, key), tx.Id)
		require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled", "order:settled", "payout:settled"}, reasons(h))
	})
}
