package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/testsupport/apitest"
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

// sessionOf returns the browser's console session cookie, checking its attributes.
func sessionOf(t *testing.T, ctx context.Context) *http.Cookie {
	t.Helper()
	var cookies []*network.Cookie
	require.NoError(t, chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().Do(ctx)
		return err
	})))
	for _, c := range cookies {
		if c.Name == "console_session" {
			require.True(t, c.HTTPOnly)
			require.Equal(t, network.CookieSameSiteStrict, c.SameSite)
			require.Equal(t, "/console", c.Path)
			return &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	t.Fatal("no console_session cookie")
	return nil
}

func withCookie(t *testing.T, u string, c *http.Cookie) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	req.AddCookie(c)
	return req
}
