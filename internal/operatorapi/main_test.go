package operatorapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/lifecycle"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// onBoth runs fn as parallel subtests against PostgreSQL and SQLite; fn starts the
// service itself (some tests restart it).
func onBoth(t *testing.T, fn func(t *testing.T, db testdb.Database)) {
	t.Helper()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, db)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// productionSettings runs the service as production: live keys, a rate feed, the
// operator adapters by default.
func productionSettings(t *testing.T) map[string]string {
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"usdt":"1550.00"}`))
	}))
	t.Cleanup(feed.Close)
	return map[string]string{
		"APP_ENV":          "production",
		"SCREENING":        "list",
		"RATE_SOURCE":      "http",
		"RATE_FEED_URL":    feed.URL,
		"RATE_FEED_FIELDS": "usdt=usdt",
		"XPUB_BEP20":       apitest.TestXPub,
		"XPUB_TRC20":       apitest.TestXPub,
		"CURSOR_SECRET":    strings.Repeat("s", 32), "SECRETS_KEYS": "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		// Production needs its chain nodes; deposits here come through the lifecycle.
		"CHAIN_RPC_BEP20": "http://127.0.0.1:9",
		"CHAIN_RPC_TRC20": "http://127.0.0.1:9",
		// One pair of eyes: the four-eyes tests (approvals_test.go) take production's
		// default, every action held for a second operator.
		"APPROVALS": "none",
	}
}

// operatorAdapterSettings runs the service with the operator adapters on db:
// production on PostgreSQL; on SQLite, which production refuses, staging with
// LIQUIDITY=operator and PAYOUT=operator (the same code path, sandbox keys).
func operatorAdapterSettings(t *testing.T, db testdb.Database) map[string]string {
	if db.Name == "postgres" {
		return productionSettings(t)
	}
	return map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"}
}

// create makes a direct-mode transaction of fiat NGN on bep20 (retrying while a
// production rate feed is first read).
func create(t *testing.T, c *client.ClientWithResponses, ref, fiat string) client.Transaction {
	t.Helper()
	req := client.CreateTransactionRequest{MerchantReference: ref, CryptoCurrency: "usdt", Network: "bep20", FiatAmount: &fiat}
	var res *client.CreateTransactionResponse
	require.Eventually(t, func() bool {
		var err error
		res, err = c.CreateTransactionWithResponse(context.Background(), &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()}, req)
		require.NoError(t, err)
		return res.StatusCode() != http.StatusServiceUnavailable
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	return res.JSON201.Data
}

// confirmDeposit detects the full deposit of transaction id and confirms it, through
// the lifecycle as the chain watcher does.
func confirmDeposit(t *testing.T, env *apitest.Env, id uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	_, err := env.App.Lifecycle().Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return env.App.Lifecycle().DetectDeposit(ctx, unit, id, depositOf(1))
	})
	require.NoError(t, err)
	_, err = env.App.Lifecycle().Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return env.App.Lifecycle().Confirm(ctx, unit, id, 15)
	})
	require.NoError(t, err)
}

func partnerHistory(t *testing.T, c *client.ClientWithResponses, id uuid.UUID) client.StatusHistory {
	t.Helper()
	return apitest.History(t, c, id)
}

func reasons(h client.StatusHistory) []string { return apitest.Reasons(h) }

func eventTypes(t *testing.T, env *apitest.Env, id uuid.UUID) []string {
	t.Helper()
	return env.EventTypes(t, id)
}

// stage lists one stage and returns the ids on its first page.
func stage(t *testing.T, oc *operatorclient.ClientWithResponses, s operatorclient.Stage) []uuid.UUID {
	t.Helper()
	res, err := oc.ListStageWithResponse(context.Background(), &operatorclient.ListStageParams{Stage: &s, Limit: ptr(100)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	ids := make([]uuid.UUID, len(res.JSON200.Data.Data))
	for i, tx := range res.JSON200.Data.Data {
		ids[i] = tx.Id
	}
	return ids
}

// key sets an Idempotency-Key.
func key() string { return uuid.NewString() }

func depositOf(confirmations int) lifecycle.DepositInput {
	return lifecycle.DepositInput{ID: "dep_" + uuid.NewString(), Hash: "0x" + strings.Repeat("ab", 32), Confirmations: confirmations}
}

// opKeyOf creates an operator and returns its key.
func opKeyOf(t *testing.T, env *apitest.Env) string { return env.NewOperator(t) }
