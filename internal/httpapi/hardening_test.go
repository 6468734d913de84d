package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
)

// do sends a raw request through the contract-checking client and returns the
// status and the decoded error body (zero for a success).
func do(t *testing.T, env *apitest.Env, key, method, path string, body []byte, header ...string) (int, client.Error) {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, env.BaseURL+path, r)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("X-API-KEY", key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range header {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	res, err := env.HTTPClient(t).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var e client.Error
	if res.StatusCode >= 400 {
		require.NoError(t, json.Unmarshal(b, &e), string(b))
	}
	return res.StatusCode, e
}

// TestTextRule: NUL, control characters, format controls (U+202E) and invalid UTF-8 in any string a partner
// sends are 400 invalid_request naming the field, on both databases alike (before,
// PostgreSQL failed with 500 and SQLite stored them), and nothing is stored.
func TestTextRule(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		createBody := func(field, raw string) []byte {
			b := `{"merchant_reference":"TEXT-1","crypto_currency":"usdt","network":"bep20","fiat_amount":"2000"}`
			if field == "merchant_reference" {
				return []byte(strings.Replace(b, `"TEXT-1"`, raw, 1))
			}
			return []byte(strings.Replace(b, `}`, `,"`+field+`":`+raw+`}`, 1))
		}
		idem := "Idempotency-Key: text-rule"
		for _, tc := range []struct {
			name, method, path string
			body               []byte
			header             []string
			field              string
		}{
			{"reference with NUL", "GET", "/transactions/reference/a%00b", nil, nil, "merchant_reference"},
			{"reference of invalid UTF-8", "GET", "/transactions/reference/%ff%fe", nil, nil, "merchant_reference"},
			{"terminal_id filter NUL", "GET", "/transactions?terminal_id=%00", nil, nil, "terminal_id"},
			{"merchant_id filter NUL", "GET", "/transactions?merchant_id=a%00", nil, nil, "merchant_id"},
			{"merchant_reference filter NUL", "GET", "/transactions?merchant_reference=%00", nil, nil, "merchant_reference"},
			{"merchant_reference filter invalid UTF-8", "GET", "/transactions?merchant_reference=%ff", nil, nil, "merchant_reference"},
			{"merchant_id NUL", "POST", "/transactions", createBody("merchant_id", `"a\u0000"`), []string{idem}, "/merchant_id"},
			{"terminal_id NUL", "POST", "/transactions", createBody("terminal_id", `"\u0000"`), []string{idem}, "/terminal_id"},
			{"seller_phone NUL", "POST", "/transactions", createBody("seller_phone", `"+234\u0000"`), []string{idem}, "/seller_phone"},
			{"merchant_reference raw invalid UTF-8", "POST", "/transactions", createBody("merchant_reference", "\"bb\xff\xfe\""), []string{idem}, "/merchant_reference"},
			{"merchant_reference C1 control", "POST", "/transactions", createBody("merchant_reference", `"bb\u0085"`), []string{idem}, "/merchant_reference"},
			{"merchant_reference lone surrogate", "POST", "/transactions", createBody("merchant_reference", `"bb\ud800"`), []string{idem}, "/merchant_reference"},
			{"Idempotency-Key invalid UTF-8", "POST", "/transactions", createBody("merchant_id", `"M"`), []string{"Idempotency-Key: k\xff"}, "Idempotency-Key"},
			{"merchant_reference right-to-left override", "POST", "/transactions", createBody("merchant_reference", `"bb\u202e00.000051"`), []string{idem}, "/merchant_reference"},
			{"merchant_id isolate", "POST", "/transactions", createBody("merchant_id", `"M\u2066"`), []string{idem}, "/merchant_id"},
			{"reference path override", "GET", "/transactions/reference/a%E2%80%AEb", nil, nil, "merchant_reference"},
			{"deposit_id NUL", "POST", "/sandbox/simulate", []byte(`{"event":"deposit.detected","transaction_id":"0b7e7f5c-3c1e-4f65-a3a8-4f3f5b8c9d10","deposit_id":"d\u0000"}`), nil, "/deposit_id"},
		} {
			status, e := do(t, env, key, tc.method, tc.path, tc.body, tc.header...)
			require.Equal(t, http.StatusBadRequest, status, tc.name)
			require.Equal(t, client.ErrorCodeInvalidRequest, e.Error.Code, tc.name)
			require.NotEmpty(t, e.Error.Details, tc.name)
			require.Equal(t, tc.field, e.Error.Details[0].Field, tc.name)
			if strings.Contains(tc.name, "override") || strings.Contains(tc.name, "isolate") {
				// The error control characters always got: a format control is one to a reader.
				require.Contains(t, e.Error.Details[0].Message, "must not contain control characters (found U+20", tc.name)
			}
		}
		c := env.Client(t, key)
		list, err := c.ListTransactionsWithResponse(context.Background(), &client.ListTransactionsParams{})
		require.NoError(t, err)
		require.Empty(t, list.JSON200.Data.Data, "nothing was stored")

		// Text that keeps the rule passes, whatever its script.
		tx := create(t, c, direct("École 42 — ΣΊΣΥΦΟΣ ✓", "bep20", "2000"))
		status, _ := do(t, env, key, "GET", "/transactions/reference/%C3%A9cole%2042%20%E2%80%94%20%CF%83%CE%AF%CF%83%CF%85%CF%86%CE%BF%CF%82%20%E2%9C%93", nil)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "École 42 — ΣΊΣΥΦΟΣ ✓", tx.MerchantReference)
	})
}

// TestClearerErrors: the friction a new user met is gone.
func TestClearerErrors(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		detail := func(method, path string, body []byte) (int, client.ErrorDetail) {
			status, e := do(t, env, key, method, path, body)
			require.NotEmpty(t, e.Error.Details, "%s %s", method, path)
			return status, e.Error.Details[0]
		}
		status, d := detail("POST", "/quotes", []byte(`{"crypto_currensy":"usdt","crypto_currency":"usdt","network":"bep20","crypto_amount":"1"}`))
		require.Equal(t, http.StatusBadRequest, status)
		require.Equal(t, "/crypto_currensy", d.Field, "a misspelled field is named")

		_, d = detail("POST", "/quotes", []byte(`{"crypto_currency":"USDT","network":"bep20","crypto_amount":"1"}`))
		require.Equal(t, "/crypto_currency", d.Field)
		require.Contains(t, d.Message, "lower case")
		require.NotContains(t, d.Message, "^[")

		_, d = detail("GET", "/transactions?limit=1&limit=2", nil)
		require.Equal(t, "limit", d.Field)
		_, d = detail("GET", "/transactions?from=2026-02-30T00:00:00Z", nil)
		require.Equal(t, "from", d.Field)
		require.Contains(t, d.Message, "RFC 3339")
		_, d = detail("GET", "/revenue?include_summary=maybe", nil)
		require.Equal(t, "include_summary", d.Field)

		// Each 401 says what is wrong with the key sent, never whether a key exists.
		messages := map[string]string{}
		for name, k := range map[string]string{
			"missing": "", "malformed": "hello", "other environment": "sk_live_" + strings.Repeat("A", 43),
			"not recognised": "sk_sandbox_" + strings.Repeat("A", 43), "operator key": "sk_op_" + strings.Repeat("A", 43),
		} {
			status, e := do(t, env, k, "GET", "/transactions", nil)
			require.Equal(t, http.StatusUnauthorized, status, name)
			require.Equal(t, client.ErrorCodeUnauthorized, e.Error.Code)
			messages[name] = e.Message
		}
		require.Contains(t, messages["missing"], "missing")
		require.Contains(t, messages["malformed"], "does not hold an API key")
		require.Contains(t, messages["other environment"], "other environment")
		require.Contains(t, messages["not recognised"], "not recognised")
		require.Contains(t, messages["operator key"], "operator API", "an operator key is told which API it belongs to")
		// A live key that exists is refused in staging with the same message as one
		// that does not.
		live := env.NewPartnerIn(t, "production")
		_, e := do(t, env, live, "GET", "/transactions", nil)
		require.Equal(t, messages["other environment"], e.Message)
	})
}

// TestEveryStatusIsDeclared: the answers the contract did not declare are gone:
// OPTIONS is 405 in the envelope, bodies on bodiless POSTs get declared 413/415,
// GET bodies are ignored, and headers over 1 MiB get the HTTP server's own 431
// (documented in the contract's introduction).
func TestEveryStatusIsDeclared(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		register(t, env.Client(t, key), "http://127.0.0.1:9/")
		status, e := do(t, env, key, "OPTIONS", "/transactions", nil)
		require.Equal(t, http.StatusMethodNotAllowed, status)
		require.Equal(t, client.ErrorCodeMethodNotAllowed, e.Error.Code)

		status, e = do(t, env, key, "POST", "/webhooks/endpoint/rotate-secret", []byte("hello"), "Content-Type: text/plain")
		require.Equal(t, http.StatusUnsupportedMediaType, status)
		require.Equal(t, client.ErrorCodeUnsupportedMediaType, e.Error.Code)

		status, e = do(t, env, key, "POST", "/webhooks/events/0b7e7f5c-3c1e-4f65-a3a8-4f3f5b8c9d10/replay", bytes.Repeat([]byte(" "), 200<<10))
		require.Equal(t, http.StatusRequestEntityTooLarge, status)
		require.Equal(t, client.ErrorCodePayloadTooLarge, e.Error.Code)

		status, _ = do(t, env, key, "GET", "/webhooks/endpoint", bytes.Repeat([]byte("x"), 200<<10), "Content-Type: text/plain")
		require.Equal(t, http.StatusOK, status, "a GET's body is ignored")

		req, err := http.NewRequest("GET", env.BaseURL+"/transactions", nil)
		require.NoError(t, err)
		req.Header.Set("X-API-KEY", key)
		req.Header.Set("X-Junk", strings.Repeat("j", 2<<20))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, res.StatusCode)
	})
}

// TestHeadAndAllow: HEAD is answered wherever GET is (the GET's status and
// headers, no body); a method a path does not serve, OPTIONS included, is 405
// with the path's methods in Allow (HEAD beside GET, never OPTIONS); HEAD on a
// path without GET is 405 too.
func TestHeadAndAllow(t *testing.T) {
	t.Parallel()
	onBoth(t, nil, func(t *testing.T, env *apitest.Env) {
		key := env.NewPartner(t)
		send := func(method, path string) *http.Response {
			req, err := http.NewRequest(method, env.BaseURL+path, nil)
			require.NoError(t, err)
			req.Header.Set("X-API-KEY", key)
			res, err := env.HTTPClient(t).Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			_ = res.Body.Close()
			if method == http.MethodHead {
				require.Empty(t, body, "%s %s has no body", method, path)
			}
			return res
		}
		for _, path := range []string{"/transactions", "/revenue", "/payouts", "/webhooks/events"} {
			get, head := send(http.MethodGet, path), send(http.MethodHead, path)
			require.Equal(t, http.StatusOK, get.StatusCode, path)
			require.Equal(t, get.StatusCode, head.StatusCode, path)
			require.Equal(t, get.Header.Get("Content-Type"), head.Header.Get("Content-Type"), path)
			require.NotEmpty(t, head.Header.Get("X-Request-Id"), path)
		}
		require.Equal(t, http.StatusNotFound, send(http.MethodHead, "/transactions/"+uuid.NewString()).StatusCode, "HEAD answers as GET would")
		for _, c := range []struct{ method, path, allow string }{
			{http.MethodOptions, "/transactions", "GET, HEAD, POST"},
			{http.MethodDelete, "/quotes", "POST"},
			{http.MethodHead, "/quotes", "POST"},
			{http.MethodPatch, "/webhooks/endpoint", "GET, HEAD, PUT"},
		} {
			res := send(c.method, c.path)
			require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode, "%s %s", c.method, c.path)
			require.ElementsMatch(t, strings.Split(c.allow, ", "), strings.Split(res.Header.Get("Allow"), ", "), "%s %s", c.method, c.path)
		}
	})
}
