package contractcheck

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/httpapi"
)

// The contract check must be able to fail: these exchanges each break it.
func TestValidateCatchesDrift(t *testing.T) {
	t.Parallel()
	c, err := Partner(AsDeclared)
	require.NoError(t, err)

	quote := `{"success":true,"data":{"quote_id":"2f0f6c2e-9d8a-4a53-8f4f-2b2a1f9f0d11","crypto_currency":"usdt","network":"bep20",` +
		`"base_rate":"1550.00","adjusted_rate":%s,"amount":"154225.00","crypto_amount":"100.000000","fiat_amount":"154225.00",` +
		`"created_at":"2026-11-23T10:00:00Z","expires_at":"2026-11-23T10:02:00Z"}}`
	cases := []struct {
		name   string
		status int
		body   string
		reqID  bool
		ok     bool
	}{
		{"valid quote", 201, sprintf(quote, `"1542.25"`), true, true},
		{"rate with one decimal", 201, sprintf(quote, `"1542.3"`), true, false},
		{"rate as a JSON number", 201, sprintf(quote, `1542.25`), true, false},
		{"undeclared status", 200, sprintf(quote, `"1542.25"`), true, false},
		{"no request id", 201, sprintf(quote, `"1542.25"`), false, false},
		{"error body not in our shape", 400, `{"message":"bad"}`, true, false},
		{"unknown error code", 400, `{"success":false,"message":"x","error":{"code":"oops","details":[],"request_id":"r"}}`, true, false},
	}
	for _, tc := range cases {
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1"+httpapi.BasePath+"/quotes", bytes.NewReader([]byte(`{}`)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{"Content-Type": {"application/json"}}}
		if tc.reqID {
			resp.Header.Set("X-Request-Id", "abc")
		}
		op, err := c.Check(req, []byte(`{}`), resp, []byte(tc.body))
		require.Equal(t, "createQuote", op, tc.name)
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.Error(t, err, tc.name)
		}
	}
}

func sprintf(format, arg string) string {
	return string(bytes.Replace([]byte(format), []byte("%s"), []byte(arg), 1))
}
