package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
)

// The staging defaults: usdt at 1550.00 NGN, spread 0.5 %, so the adjusted rate is
// 1550.00 × 0.995 = 1542.25; pairs usdt/bep20 and usdt/trc20 from 1000 to 50,000,000 NGN.

func TestCreateQuote(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()

		cases := []struct {
			name                       string
			req                        client.QuoteRequest
			wantCrypto, wantFiat, want string
		}{
			{"tokens priced exactly", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("100")}, "100.000000", "154225.00", "154225.00"},
			{"fiat from tokens rounds down", client.QuoteRequest{CryptoCurrency: "usdt", Network: "trc20", CryptoAmount: ptr("0.999999")}, "0.999999", "1542.24", "1542.24"},
			{"tokens from fiat round up", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("1000")}, "0.648404", "1000.00", "1000.00"},
			{"fiat with cents", client.QuoteRequest{CryptoCurrency: "usdt", Network: "trc20", FiatAmount: ptr("150000.5")}, "97.260821", "150000.50", "150000.50"},
			{"boundaries are inclusive", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("50000000.00")}, "32420.165343", "50000000.00", "50000000.00"},
		}
		for _, tc := range cases {
			before := time.Now().Add(-time.Second)
			res, err := c.CreateQuoteWithResponse(ctx, nil, tc.req)
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.StatusCode(), "%s: %s", tc.name, res.Body)
			q := res.JSON201.Data
			require.True(t, res.JSON201.Success)
			require.Equal(t, "1550.00", q.BaseRate, tc.name)
			require.Equal(t, "1542.25", q.AdjustedRate, tc.name)
			require.Equal(t, tc.wantCrypto, q.CryptoAmount, tc.name)
			require.Equal(t, tc.wantFiat, q.FiatAmount, tc.name)
			require.Equal(t, tc.want, q.Amount, "%s: amount is the NGN amount", tc.name)
			require.Equal(t, tc.req.CryptoCurrency, q.CryptoCurrency)
			require.Equal(t, tc.req.Network, q.Network)
			require.Equal(t, 120*time.Second, q.ExpiresAt.Sub(q.CreatedAt), tc.name)
			require.True(t, q.CreatedAt.After(before), tc.name)
			require.Equal(t, time.UTC, q.CreatedAt.Location(), "times are UTC")
		}
	})
}

func TestCreateQuoteRejectsBadInput(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		c := env.Client(t, env.NewPartner(t))
		ctx := context.Background()
		cases := []struct {
			name   string
			req    client.QuoteRequest
			status int
			code   client.ErrorCode
			field  string
		}{
			{"neither amount", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20"}, 400, client.ErrorCodeInvalidRequest, ""},
			{"both amounts", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("1"), FiatAmount: ptr("1000")}, 400, client.ErrorCodeInvalidRequest, ""},
			{"too many fiat decimals", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("1000.001")}, 400, client.ErrorCodeInvalidRequest, "/fiat_amount"},
			{"too many token decimals", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("1.0000001")}, 400, client.ErrorCodeInvalidRequest, "/crypto_amount"},
			{"negative", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("-1000")}, 400, client.ErrorCodeInvalidRequest, "/fiat_amount"},
			{"exponent", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("1e5")}, 400, client.ErrorCodeInvalidRequest, "/fiat_amount"},
			{"not a number", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("ten")}, 400, client.ErrorCodeInvalidRequest, "/crypto_amount"},
			{"upper-case token", client.QuoteRequest{CryptoCurrency: "USDT", Network: "bep20", CryptoAmount: ptr("1")}, 400, client.ErrorCodeInvalidRequest, "/crypto_currency"},
			{"unsupported network", client.QuoteRequest{CryptoCurrency: "usdt", Network: "erc20", CryptoAmount: ptr("10")}, 422, client.ErrorCodeUnsupportedPair, "/network"},
			{"unsupported token", client.QuoteRequest{CryptoCurrency: "usdc", Network: "bep20", CryptoAmount: ptr("10")}, 422, client.ErrorCodeUnsupportedPair, "/network"},
			{"below minimum", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("999.99")}, 422, client.ErrorCodeAmountOutOfRange, "/fiat_amount"},
			{"above maximum", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("50000000.01")}, 422, client.ErrorCodeAmountOutOfRange, "/fiat_amount"},
			{"tokens below minimum", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("0.5")}, 422, client.ErrorCodeAmountOutOfRange, "/crypto_amount"},
			{"zero", client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("0")}, 422, client.ErrorCodeAmountOutOfRange, "/crypto_amount"},
		}
		for _, tc := range cases {
			res, err := c.CreateQuoteWithResponse(ctx, nil, tc.req)
			require.NoError(t, err)
			require.Equal(t, tc.status, res.StatusCode(), "%s: %s", tc.name, res.Body)
			e := errorOf(t, res.StatusCode(), res.JSON400, res.JSON422)
			require.Equal(t, tc.code, e.Error.Code, tc.name)
			require.False(t, e.Success)
			require.NotEmpty(t, e.Message)
			require.Equal(t, res.HTTPResponse.Header.Get("X-Request-Id"), e.Error.RequestId)
			if tc.field != "" {
				require.True(t, hasField(e, tc.field), "%s: details name %s: %+v", tc.name, tc.field, e.Error.Details)
			}
		}
	})
}

func TestRatesUnavailable(t *testing.T) {
	t.Parallel()
	// A feed that never answers well: the service keeps running and quotes fail
	// with 503 rates_unavailable rather than a made-up price.
	feed := newFeed(t, http.StatusInternalServerError, `{}`)
	onBoth(t, map[string]string{"RATE_SOURCE": "http", "RATE_FEED_URL": feed, "RATE_FEED_FIELDS": "usdt=data.usdt_ngn"},
		func(t *testing.T, env *apitest.Env) {
			c := env.Client(t, env.NewPartner(t))
			res, err := c.CreateQuoteWithResponse(context.Background(), nil,
				client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("10")})
			require.NoError(t, err)
			require.Equal(t, http.StatusServiceUnavailable, res.StatusCode(), string(res.Body))
			require.Equal(t, client.ErrorCodeRatesUnavailable, res.JSON503.Error.Code)
		})
}

func TestRatesFromFeedAndStaleness(t *testing.T) {
	t.Parallel()
	feed := newFeed(t, http.StatusOK, `{"data":{"usdt_ngn":"1600.005"}}`)
	onBoth(t, map[string]string{"RATE_SOURCE": "http", "RATE_FEED_URL": feed, "RATE_FEED_FIELDS": "usdt=data.usdt_ngn", "RATE_FEED_INTERVAL": "1h"},
		func(t *testing.T, env *apitest.Env) {
			c := env.Client(t, env.NewPartner(t))
			var res *client.CreateQuoteResponse
			// The feed is fetched once at start, in the background.
			require.Eventually(t, func() bool {
				var err error
				res, err = c.CreateQuoteWithResponse(context.Background(), nil,
					client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("10")})
				require.NoError(t, err)
				return res.StatusCode() == http.StatusCreated
			}, 10*time.Second, 20*time.Millisecond)
			// 1600.005 rounds half-up to 1600.01; × 0.995 = 1592.00995 → 1592.00.
			require.Equal(t, "1600.01", res.JSON201.Data.BaseRate)
			require.Equal(t, "1592.00", res.JSON201.Data.AdjustedRate)
			require.Equal(t, "15920.00", res.JSON201.Data.FiatAmount)
		})
}

// TestReplayDuringARatesOutage: the use case prices before its unit of work
// begins, so a retry during a rates outage fails there; it still gets the answer
// stored for its key, not the outage's 503.
func TestReplayDuringARatesOutage(t *testing.T) {
	t.Parallel()
	feed := newFeed(t, http.StatusOK, `{"data":{"usdt_ngn":"1600"}}`)
	onBoth(t, map[string]string{"RATE_SOURCE": "http", "RATE_FEED_URL": feed, "RATE_FEED_FIELDS": "usdt=data.usdt_ngn",
		"RATE_FEED_INTERVAL": "1h", "RATE_MAX_AGE": "2s"},
		func(t *testing.T, env *apitest.Env) {
			c := env.Client(t, env.NewPartner(t))
			ctx := context.Background()
			k := uuid.NewString()
			var first *client.CreateTransactionResponse
			require.Eventually(t, func() bool {
				var err error
				first, err = c.CreateTransactionWithResponse(ctx, params(), direct("OUTAGE-1", "bep20", "5000"), idemKey(k))
				require.NoError(t, err)
				return first.StatusCode() == http.StatusCreated
			}, 10*time.Second, 20*time.Millisecond)
			// The rate goes stale: new requests are refused…
			require.Eventually(t, func() bool {
				res, err := c.CreateTransactionWithResponse(ctx, params(), direct("OUTAGE-2", "bep20", "5000"), idemKey(uuid.NewString()))
				require.NoError(t, err)
				return res.StatusCode() == http.StatusServiceUnavailable
			}, 10*time.Second, 50*time.Millisecond)
			// …the retry of the one that succeeded replays it.
			again, err := c.CreateTransactionWithResponse(ctx, params(), direct("OUTAGE-1", "bep20", "5000"), idemKey(k))
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, again.StatusCode(), string(again.Body))
			require.Equal(t, "true", again.HTTPResponse.Header.Get("Idempotent-Replayed"))
			require.Equal(t, string(first.Body), string(again.Body))
			// The key with another request is still refused.
			other, err := c.CreateTransactionWithResponse(ctx, params(), direct("OUTAGE-3", "bep20", "5000"), idemKey(k))
			require.NoError(t, err)
			require.Equal(t, http.StatusUnprocessableEntity, other.StatusCode(), string(other.Body))
		})
}
