package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/partners"
	"partnerd/internal/testsupport/apitest"
)

// errorOf returns the one non-nil error body among the typed ones, failing when the
// status has none.
func errorOf(t *testing.T, status int, bodies ...*client.Error) *client.Error {
	t.Helper()
	for _, b := range bodies {
		if b != nil {
			return b
		}
	}
	t.Fatalf("status %d has no typed error body", status)
	return nil
}

func hasField(e *client.Error, field string) bool {
	for _, d := range e.Error.Details {
		if d.Field == field {
			return true
		}
	}
	return false
}

func newFeed(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// rawError decodes an error body of a raw response.
func rawError(t *testing.T, res *http.Response) client.Error {
	t.Helper()
	defer res.Body.Close()
	var e client.Error
	require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
	return e
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		ctx := context.Background()
		req := client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("10")}
		for name, key := range map[string]string{
			"missing":               "",
			"unknown":               "sk_sandbox_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
			"malformed":             "hello",
			"other environment key": env.NewPartnerIn(t, partners.Production),
		} {
			res, err := env.Client(t, key).CreateQuoteWithResponse(ctx, nil, req)
			require.NoError(t, err)
			require.Equal(t, http.StatusUnauthorized, res.StatusCode(), name)
			require.Equal(t, client.ErrorCodeUnauthorized, res.JSON401.Error.Code, name)
			require.NotContains(t, string(res.Body), "sk_", "%s: no key material in error bodies", name)
		}
		// Authentication comes before validation: a bad body without a key is 401.
		res, err := env.Client(t, "").CreateQuoteWithResponse(ctx, nil, client.QuoteRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode())
	})
}

func TestTransportErrors(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		hc := env.HTTPClient(t)
		do := func(method, path, contentType, body string) *http.Response {
			req, err := http.NewRequest(method, env.BaseURL+path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("X-API-KEY", key)
			if contentType != "" {
				req.Header.Set("Content-Type", contentType)
			}
			res, err := hc.Do(req)
			require.NoError(t, err)
			return res
		}
		cases := []struct {
			name, method, path, contentType, body string
			status                                int
			code                                  client.ErrorCode
		}{
			{"malformed JSON", "POST", "/quotes", "application/json", `{"crypto_currency":`, 400, client.ErrorCodeInvalidRequest},
			{"JSON array", "POST", "/quotes", "application/json", `[]`, 400, client.ErrorCodeInvalidRequest},
			{"empty body", "POST", "/quotes", "application/json", ``, 400, client.ErrorCodeInvalidRequest},
			{"unknown property", "POST", "/quotes", "application/json", `{"crypto_currency":"usdt","network":"bep20","crypto_amount":"1","rate":"2000"}`, 400, client.ErrorCodeInvalidRequest},
			{"amount as a JSON number", "POST", "/quotes", "application/json", `{"crypto_currency":"usdt","network":"bep20","crypto_amount":10}`, 400, client.ErrorCodeInvalidRequest},
			{"form body", "POST", "/quotes", "application/x-www-form-urlencoded", `a=1`, 415, client.ErrorCodeUnsupportedMediaType},
			{"no content type", "POST", "/quotes", "", `{"crypto_currency":"usdt"}`, 415, client.ErrorCodeUnsupportedMediaType},
			{"too large", "POST", "/quotes", "application/json", `{"x":"` + strings.Repeat("a", 70<<10) + `"}`, 413, client.ErrorCodePayloadTooLarge},
			{"unknown route", "GET", "/nope", "", ``, 404, client.ErrorCodeNotFound},
			{"unknown route outside the API", "GET", "/../../nope", "", ``, 404, client.ErrorCodeNotFound},
			{"wrong method", "DELETE", "/quotes", "", ``, 405, client.ErrorCodeMethodNotAllowed},
			{"malformed id", "GET", "/transactions/not-a-uuid", "", ``, 400, client.ErrorCodeInvalidRequest},
			{"limit out of range", "GET", "/transactions?limit=101", "", ``, 400, client.ErrorCodeInvalidRequest},
			{"limit not a number", "GET", "/transactions?limit=ten", "", ``, 400, client.ErrorCodeInvalidRequest},
			{"unknown status filter", "GET", "/transactions?status=lost", "", ``, 400, client.ErrorCodeInvalidRequest},
			{"missing idempotency key", "POST", "/transactions/" + uuid.NewString() + "/cancel", "", ``, 400, client.ErrorCodeIdempotencyKeyMissing},
		}
		for _, tc := range cases {
			res := do(tc.method, tc.path, tc.contentType, tc.body)
			require.Equal(t, tc.status, res.StatusCode, tc.name)
			require.Equal(t, "application/json", strings.Split(res.Header.Get("Content-Type"), ";")[0], tc.name)
			e := rawError(t, res)
			require.Equal(t, tc.code, e.Error.Code, tc.name)
			require.Equal(t, res.Header.Get("X-Request-Id"), e.Error.RequestId, tc.name)
		}
	})
}

func TestHealth(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		for _, path := range []string{"/healthz", "/readyz"} {
			res, err := http.Get(env.Root + path)
			require.NoError(t, err)
			var body struct {
				Status  string   `json:"status"`
				Reasons []string `json:"reasons"`
			}
			require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
			_ = res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode, path)
			if path == "/readyz" {
				// The test service watches no chain: ready for traffic, and loud about it.
				require.Equal(t, "degraded", body.Status)
				require.Equal(t, []string{
					"bep20: deposit watcher is off: CHAIN_RPC_BEP20 is unset: deposits arrive only through the sandbox simulator",
					"trc20: deposit watcher is off: CHAIN_RPC_TRC20 is unset: deposits arrive only through the sandbox simulator",
				}, body.Reasons)
			}
		}
	})
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		res, err := env.Client(t, env.NewPartner(t)).CreateQuoteWithResponse(context.Background(), nil,
			client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("10")})
		require.NoError(t, err)
		h := res.HTTPResponse.Header
		require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
		require.Equal(t, "DENY", h.Get("X-Frame-Options"))
		require.Equal(t, "no-store", h.Get("Cache-Control"))
		require.Empty(t, h.Get("Strict-Transport-Security"), "staging serves plain HTTP locally")
	})
}
