package dashboard_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/partnerusers"
	"partnerd/internal/testsupport/testdb"
)

// The transactions list's filters: the network keeps one chain's transactions
// (the API's network filter, so a page is full); the dates are whole
// UTC days; bad filters and cursors are a 400 page saying what is wrong, never a
// 500.
func TestTransactionFilters(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			env := startSite(t, db, nil)
			key := env.NewPartner(t)
			api := env.Client(t, key)
			u := newUser(t, env, env.PartnerID(t, key), partnerusers.Finance)
			a := newAgent(t, env.Root+"/dashboard")
			status, _, _ := a.signIn(u.Email, testPassword)
			require.Equal(t, http.StatusSeeOther, status)

			fiat := "3000.00"
			res, err := api.CreateTransactionWithResponse(context.Background(), &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
				client.CreateTransactionRequest{MerchantReference: "TRON-1", CryptoCurrency: "usdt", Network: "trc20", FiatAmount: &fiat})
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
			for i := range 60 { // more than a page of bep20 after it
				create(t, api, "BSC-"+uuid.NewString()[:8]+"-"+string(rune('a'+i%26)), "1000.00")
			}

			status, page, _ := a.get("/transactions?network=trc20")
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, page, "TRON-1", "found past the first page of the API's list")
			require.NotContains(t, page, "BSC-")
			status, page, _ = a.get("/transactions?network=bep20")
			require.Equal(t, http.StatusOK, status)
			require.NotContains(t, page, "TRON-1")
			require.Equal(t, 50, strings.Count(page, ">BSC-"), "a full page")
			require.Contains(t, page, `id="next"`)

			today := res.JSON201.Data.ExpiresAt.UTC().Format("2006-01-02")
			_, page, _ = a.get("/transactions?" + url.Values{"from": {today}, "to": {today}, "q": {"TRON-1"}}.Encode())
			require.Contains(t, page, "TRON-1")
			_, page, _ = a.get("/transactions?" + url.Values{"to": {"2020-01-01"}, "q": {"TRON-1"}}.Encode())
			require.NotContains(t, page, ">TRON-1<")

			for q, want := range map[string]string{
				"status=bogus":                  "status",
				"network=BEP20":                 "network",
				"from=yesterday":                "The from date is not a date",
				"to=2026-13-01":                 "The to date is not a date",
				"cursor=not-a-cursor":           "cursor",
				"q=" + strings.Repeat("x", 300): "merchant_reference",
			} {
				status, page, _ = a.get("/transactions?" + q)
				require.Equal(t, http.StatusBadRequest, status, q)
				require.Contains(t, html.UnescapeString(page), want, q)
				require.Contains(t, page, `id="error"`, q)
			}
		})
	}
}
