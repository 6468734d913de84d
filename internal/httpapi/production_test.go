package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/partners"
	"partnerd/internal/testsupport/apitest"
)

func productionSettings(t *testing.T) map[string]string {
	return map[string]string{
		"APP_ENV":          "production",
		"SCREENING":        "list",
		"RATE_SOURCE":      "http",
		"RATE_FEED_URL":    newFeed(t, http.StatusOK, `{"usdt":"1550.00"}`),
		"RATE_FEED_FIELDS": "usdt=usdt",
		"XPUB_BEP20":       apitest.TestXPub,
		"XPUB_TRC20":       apitest.TestXPub,
		"CURSOR_SECRET":    strings.Repeat("s", 32), "SECRETS_KEYS": "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		// No node answers there: the watchers retry quietly; the API is unaffected.
		"CHAIN_RPC_BEP20": "http://127.0.0.1:9",
		"CHAIN_RPC_TRC20": "http://127.0.0.1:9",
	}
}

// onProduction runs fn against the service in production, which runs on PostgreSQL
// only (it refuses the embedded database).
func onProduction(t *testing.T, fn func(t *testing.T, env *apitest.Env)) {
	t.Helper()
	fn(t, apitest.Start(t, testdbPostgres(t), productionSettings(t)))
}

func TestProductionMode(t *testing.T) {
	t.Parallel()
	onProduction(t, func(t *testing.T, env *apitest.Env) {
		live := env.NewPartner(t)
		require.True(t, strings.HasPrefix(live, "sk_live_"))
		ctx := context.Background()

		// A sandbox key is refused in production.
		res, err := env.Client(t, env.NewPartnerIn(t, partners.Sandbox)).CreateQuoteWithResponse(ctx, nil,
			client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("10")})
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode())

		// The simulator does not exist: 404 with or without a key, whatever the body.
		for _, key := range []string{live, ""} {
			sim, err := env.Client(t, key).SimulateSandboxEventWithResponse(ctx, nil,
				client.SimulateRequest{Event: evDetected, TransactionId: uuid.New()})
			require.NoError(t, err)
			require.Equal(t, http.StatusNotFound, sim.StatusCode())
			require.Equal(t, client.ErrorCodeNotFound, sim.JSON404.Error.Code)
		}

		// The live key works once the feed has been read.
		c := env.Client(t, live)
		require.Eventually(t, func() bool {
			q, err := c.CreateQuoteWithResponse(ctx, nil, client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("10")})
			require.NoError(t, err)
			return q.StatusCode() == http.StatusCreated
		}, 10*time.Second, 20*time.Millisecond)
	})
}
