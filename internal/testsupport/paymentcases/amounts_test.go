package paymentcases_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/testsupport/testdb"
)

// Amounts larger than the ledger holds are a 400 on both databases, never a 500
// (PostgreSQL's numeric columns) nor a silent 200 (SQLite's).
func TestOversizedAmountsAreRefused(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := start(t, db, nil)
			tx := e.create("31000")
			for _, amount := range []string{"1" + strings.Repeat("0", 25), "1" + strings.Repeat("0", 12)} {
				res := e.simulate(client.SimulateRequest{Event: client.SimulateRequestEventDepositDetected, TransactionId: tx.Id, Amount: ptr(amount)})
				require.Equal(t, http.StatusBadRequest, res.StatusCode(), "%s: %s", amount, res.Body)
				require.Contains(t, string(res.Body), "/amount")
			}
			require.Nil(t, e.get(tx.Id).DepositAmount, "nothing counted")
			res := e.simulate(client.SimulateRequest{Event: client.SimulateRequestEventDepositDetected, TransactionId: tx.Id, Amount: ptr(strings.Repeat("9", 12) + ".5")})
			require.Equal(t, http.StatusOK, res.StatusCode(), "12 integer digits fit: %s", res.Body)

			huge := "1" + strings.Repeat("0", 18) + ".00"
			for _, req := range []operatorclient.FillRequest{
				{Rate: huge, FiatAmount: "1000.00", Reference: "fill-1"},
				{Rate: "1500.00", FiatAmount: huge, Reference: "fill-1"},
			} {
				fill, err := e.ops.FillOrderWithResponse(context.Background(), tx.Id, &operatorclient.FillOrderParams{IdempotencyKey: uuid.NewString()}, req)
				require.NoError(t, err)
				require.Equal(t, http.StatusBadRequest, fill.StatusCode(), string(fill.Body))
			}
		})
	}
}
