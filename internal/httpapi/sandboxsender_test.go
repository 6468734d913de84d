package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// The simulator's deposit.detected takes the transfer's sender: one on a
// staging screening list puts the transaction under review, as a real deposit
// from it would; another sender does not; an address not of the network's form
// is 400 naming /sender and changes nothing.
func TestSimulatedSenderIsScreened(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			env := apitest.Start(t, db, map[string]string{"SCREENING": "list"})
			c := env.Client(t, env.NewPartner(t))
			ctx := context.Background()
			listed := "0x" + strings.Repeat("5b", 20)
			env.ListAddress(t, "Test SDN list", listed)
			simulate := func(id uuid.UUID, sender string) *client.SimulateSandboxEventResponse {
				t.Helper()
				res, err := c.SimulateSandboxEventWithResponse(ctx, &client.SimulateSandboxEventParams{},
					client.SimulateRequest{Event: client.SimulateRequestEventDepositDetected, TransactionId: id, Sender: &sender})
				require.NoError(t, err)
				return res
			}
			fiat := "3000.00"
			held := create(t, c, client.CreateTransactionRequest{MerchantReference: "SENDER-" + uuid.NewString()[:8], CryptoCurrency: "usdt", Network: "bep20", FiatAmount: &fiat})
			res := simulate(held.Id, "0x12345")
			require.Equal(t, http.StatusBadRequest, res.StatusCode(), "too short: not an address of bep20")
			require.Contains(t, string(res.Body), "/sender")
			got, err := c.GetTransactionWithResponse(ctx, held.Id)
			require.NoError(t, err)
			require.Nil(t, got.JSON200.Data.DepositAmount, "nothing received")

			res = simulate(held.Id, listed)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			require.NotNil(t, res.JSON200.Data.UnderReview)
			require.True(t, *res.JSON200.Data.UnderReview, "a listed sender: under review")

			clear := create(t, c, client.CreateTransactionRequest{MerchantReference: "SENDER-" + uuid.NewString()[:8], CryptoCurrency: "usdt", Network: "bep20", FiatAmount: &fiat})
			res = simulate(clear.Id, "0x"+strings.Repeat("6c", 20))
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			require.NotNil(t, res.JSON200.Data.UnderReview)
			require.False(t, *res.JSON200.Data.UnderReview, "another sender: no review")
		})
	}
}
