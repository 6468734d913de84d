package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// Expiry runs on its own: no request drives it. The deposit window is shortened by
// configuration and the leader sweeps every 200 ms.
var fastExpiry = map[string]string{"DEPOSIT_WINDOW": "1s", "JOB_POLL_INTERVAL": "100ms", "EXPIRY_SWEEP_INTERVAL": "200ms"}

func waitForStatus(t *testing.T, c *client.ClientWithResponses, tx client.Transaction, want client.TransactionStatus) {
	t.Helper()
	require.Eventually(t, func() bool {
		res, err := c.GetTransactionWithResponse(context.Background(), tx.Id)
		require.NoError(t, err)
		return res.JSON200 != nil && res.JSON200.Data.Status == want
	}, 20*time.Second, 100*time.Millisecond, "transaction %s never became %s", tx.Id, want)
}

func TestExpiryWithoutRequests(t *testing.T) {
	t.Parallel()
	onBoth(t, fastExpiry, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		expiring := create(t, c, direct("EXP-1", "bep20", "2000"))
		paid := create(t, c, direct("EXP-2", "bep20", "2000"))
		mustSimulate(t, c, paid.Id, evDetected) // a deposit before the deadline

		waitForStatus(t, c, expiring, client.TransactionStatusExpired)
		require.Equal(t, []string{"transaction:created", "system:expired"}, reasons(history(t, c, expiring.Id)))
		require.Equal(t, []string{"transaction.created", "transaction.expired"}, eventTypes(t, env, expiring.Id))

		// The paid one is left alone by the sweep.
		time.Sleep(1500 * time.Millisecond)
		require.Equal(t, client.TransactionStatusDepositConfirming, history(t, c, paid.Id).Status)
	})
}

func TestSweepExpiresExactlyOnce(t *testing.T) {
	t.Parallel()
	// Sweeps every 200 ms find the transaction due again and again until it is
	// expired; it still expires exactly once.
	onBoth(t, map[string]string{"DEPOSIT_WINDOW": "1s", "JOB_POLL_INTERVAL": "100ms", "EXPIRY_SWEEP_INTERVAL": "200ms"},
		func(t *testing.T, env *apitest.Env) {
			c := env.Client(t, env.NewPartner(t))
			tx := create(t, c, direct("SWEEP-1", "trc20", "2000"))
			waitForStatus(t, c, tx, client.TransactionStatusExpired)
			time.Sleep(time.Second)
			require.Equal(t, []string{"transaction:created", "system:expired"}, reasons(history(t, c, tx.Id)))
		})
}

func TestExpiryExactlyOnceWithTwoInstances(t *testing.T) {
	t.Parallel()
	db := testdb.Database{Name: "postgres", URL: testdb.PostgresSchema(t)}
	settings := map[string]string{"DEPOSIT_WINDOW": "1s", "JOB_POLL_INTERVAL": "100ms", "EXPIRY_SWEEP_INTERVAL": "300ms"}
	a := apitest.Start(t, db, settings)
	b := apitest.Start(t, db, settings)
	key := a.NewPartner(t)
	ca, cb := a.Client(t, key), b.Client(t, key)
	var txs []client.Transaction
	for i := range 10 {
		c := ca
		if i%2 == 1 {
			c = cb
		}
		txs = append(txs, create(t, c, direct("TWO-"+time.Now().Format("150405.000000")+string(rune('a'+i)), "bep20", "2000")))
	}
	for _, tx := range txs {
		waitForStatus(t, ca, tx, client.TransactionStatusExpired)
	}
	time.Sleep(time.Second)
	for _, tx := range txs {
		require.Equal(t, []string{"transaction:created", "system:expired"}, reasons(history(t, cb, tx.Id)))
		require.Equal(t, []string{"transaction.created", "transaction.expired"}, eventTypes(t, a, tx.Id))
	}
	res, err := ca.ListTransactionsWithResponse(context.Background(), &client.ListTransactionsParams{Status: &[]client.TransactionStatus{client.TransactionStatusExpired}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode())
	require.Len(t, res.JSON200.Data.Data, len(txs))
}
