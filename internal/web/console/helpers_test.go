package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/web/webkit/webtest"
)

// completeThroughAPI fills and settles a confirmed transaction through the operator API.
func completeThroughAPI(t *testing.T, ops *oc.ClientWithResponses, tx client.Transaction) {
	t.Helper()
	ctx := context.Background()
	f, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: uuid.NewString()}, oc.FillRequest{Rate: "1549.10", FiatAmount: tx.Amount, Reference: "LP"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, f.StatusCode(), string(f.Body))
	s, err := ops.SettleOrderWithResponse(ctx, tx.Id, &oc.SettleOrderParams{IdempotencyKey: uuid.NewString()}, oc.ReferenceRequest{Reference: "S"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, s.StatusCode(), string(s.Body))
}

// listStatus is the partner API's answer to key.
func listStatus(t *testing.T, env *apitest.Env, key string) int {
	t.Helper()
	res, err := env.Client(t, key).ListTransactionsWithResponse(context.Background(), &client.ListTransactionsParams{})
	require.NoError(t, err)
	return res.StatusCode()
}

// sessionOf returns the browser's console_session cookie, checking its attributes.
func sessionOf(t *testing.T, ctx context.Context) *http.Cookie {
	t.Helper()
	return webtest.SessionCookie(t, ctx, "console_session", "/console")
}

func withCookie(t *testing.T, u string, c *http.Cookie) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	req.AddCookie(c)
	return req
}
