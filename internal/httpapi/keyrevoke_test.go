package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// TestRevokedKeyRefusedByEveryInstance: two instances on one database; a key
// each has authenticated (and cached) is revoked on one, and the other refuses it
// within a second; a key rolled with no overlap stops the same way.
func TestRevokedKeyRefusedByEveryInstance(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := apitest.Start(t, db, nil), apitest.Start(t, db, nil)
			ops := a.OperatorClient(t, a.NewOperator(t))
			status := func(env *apitest.Env, key string) int {
				res, err := env.Client(t, key).ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{})
				require.NoError(t, err)
				return res.StatusCode()
			}
			for _, end := range []string{"revoke", "roll"} {
				key := a.NewPartner(t)
				id := a.PartnerID(t, key)
				require.Equal(t, http.StatusOK, status(a, key))
				require.Equal(t, http.StatusOK, status(b, key), "cached on b")
				switch end {
				case "revoke":
					res, err := ops.RevokePartnerKeyWithResponse(ctx, id, id, &oc.RevokePartnerKeyParams{})
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
				case "roll":
					overlap := "0s"
					res, err := ops.RollPartnerKeyWithResponse(ctx, id, id, &oc.RollPartnerKeyParams{IdempotencyKey: uuid.NewString()}, oc.RollRequest{Overlap: &overlap})
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
				}
				require.Equal(t, http.StatusUnauthorized, status(a, key), "%s: at once where it was done", end)
				require.Eventually(t, func() bool { return status(b, key) == http.StatusUnauthorized }, time.Second, 20*time.Millisecond,
					"%s: refused by the other instance within a second", end)
			}
		})
	}
}
