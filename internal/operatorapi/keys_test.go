package operatorapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// Partners are created and listed through the operator API; a partner has several
// keys: one added works beside the first, a rolled one works through its overlap
// and stops when it ends, a revoked one stops at once (on this instance).
func TestPartnerKeys(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, nil)
		ctx := context.Background()
		ops := env.OperatorClient(t, env.NewOperator(t))
		works := func(key string) int {
			t.Helper()
			res, err := env.Client(t, key).ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{})
			require.NoError(t, err)
			return res.StatusCode()
		}

		cr, err := ops.CreatePartnerWithResponse(ctx, &oc.CreatePartnerParams{IdempotencyKey: key()}, oc.NameRequest{Name: "Acme Pay"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, cr.StatusCode(), string(cr.Body))
		p, first := cr.JSON200.Data.Partner, cr.JSON200.Data.Key
		require.Equal(t, oc.Sandbox, p.Environment)
		require.True(t, strings.HasPrefix(first.Key, first.Prefix))
		require.Equal(t, http.StatusOK, works(first.Key))

		list, err := ops.ListPartnersWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, "Acme Pay", list.JSON200.Data[len(list.JSON200.Data)-1].Name)

		add, err := ops.CreatePartnerKeyWithResponse(ctx, p.Id, &oc.CreatePartnerKeyParams{IdempotencyKey: key()}, oc.EmptyRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, add.StatusCode(), string(add.Body))
		second := add.JSON200.Data
		require.Equal(t, http.StatusOK, works(second.Key))
		require.Equal(t, http.StatusOK, works(first.Key))

		keys, err := ops.ListPartnerKeysWithResponse(ctx, p.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, keys.StatusCode(), string(keys.Body))
		require.Len(t, keys.JSON200.Data, 2)
		require.Equal(t, second.Id, keys.JSON200.Data[0].Id, "newest first")
		require.NotNil(t, keys.JSON200.Data[1].LastUsedAt, "the first key was used")
		require.NotContains(t, string(keys.Body), first.Key, "never the secret")

		// Roll with the default overlap: the old key keeps working, now expiring.
		roll, err := ops.RollPartnerKeyWithResponse(ctx, p.Id, first.Id, &oc.RollPartnerKeyParams{IdempotencyKey: key()}, oc.RollRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, roll.StatusCode(), string(roll.Body))
		third := roll.JSON200.Data
		require.Equal(t, http.StatusOK, works(first.Key), "during the overlap")
		require.Equal(t, http.StatusOK, works(third.Key))
		keys, err = ops.ListPartnerKeysWithResponse(ctx, p.Id)
		require.NoError(t, err)
		status := map[string]oc.ApiKeyStatus{}
		for _, k := range keys.JSON200.Data {
			status[k.Id.String()] = k.Status
		}
		require.Equal(t, oc.ApiKeyStatusExpiring, status[first.Id.String()])
		require.WithinDuration(t, time.Now().Add(24*time.Hour), *keys.JSON200.Data[2].ExpiresAt, time.Hour)

		// The overlap ends: rolled again with 0s, the old key stops.
		end, err := ops.RollPartnerKeyWithResponse(ctx, p.Id, first.Id, &oc.RollPartnerKeyParams{IdempotencyKey: key()}, oc.RollRequest{Overlap: ptr("0s")})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, end.StatusCode(), string(end.Body))
		require.Equal(t, http.StatusUnauthorized, works(first.Key), "after the overlap")
		again, err := ops.RollPartnerKeyWithResponse(ctx, p.Id, first.Id, &oc.RollPartnerKeyParams{IdempotencyKey: key()}, oc.RollRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, again.StatusCode(), "an expired key cannot be rolled")

		// A short overlap runs out by itself.
		short, err := ops.RollPartnerKeyWithResponse(ctx, p.Id, third.Id, &oc.RollPartnerKeyParams{IdempotencyKey: key()}, oc.RollRequest{Overlap: ptr("1s")})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, short.StatusCode(), string(short.Body))
		require.Eventually(t, func() bool { return works(third.Key) == http.StatusUnauthorized }, 10*time.Second, 50*time.Millisecond)

		// Revoked: 401 at once.
		rv, err := ops.RevokePartnerKeyWithResponse(ctx, p.Id, second.Id, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rv.StatusCode(), string(rv.Body))
		require.Equal(t, oc.ApiKeyStatusRevoked, rv.JSON200.Data.Status)
		require.Equal(t, http.StatusUnauthorized, works(second.Key))
		require.Equal(t, http.StatusOK, works(short.JSON200.Data.Key), "other keys unaffected")

		nf, err := ops.ListPartnerKeysWithResponse(ctx, second.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, nf.StatusCode())
		bad, err := ops.RollPartnerKeyWithResponse(ctx, p.Id, short.JSON200.Data.Id, &oc.RollPartnerKeyParams{IdempotencyKey: key()}, oc.RollRequest{Overlap: ptr("721h")})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, bad.StatusCode())

		au, err := ops.ListAuditWithResponse(ctx, &oc.ListAuditParams{Action: ptr(oc.AuditAction("key_rolled"))})
		require.NoError(t, err)
		require.Len(t, au.JSON200.Data.Data, 3)
		require.Equal(t, third.Id, *au.JSON200.Data.Data[0].SubjectId)
	})
}

// Operator keys are managed the same way.
func TestOperatorKeys(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, nil)
		ctx := context.Background()
		admin := env.OperatorClient(t, env.NewOperator(t))
		works := func(key string) int {
			t.Helper()
			res, err := env.OperatorClient(t, key).GetOverviewWithResponse(ctx)
			require.NoError(t, err)
			return res.StatusCode()
		}
		cr, err := admin.CreateOperatorWithResponse(ctx, &oc.CreateOperatorParams{IdempotencyKey: key()}, oc.OperatorCreateRequest{Name: "Grace"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, cr.StatusCode(), string(cr.Body))
		o, first := cr.JSON200.Data.Operator, cr.JSON200.Data.Key
		require.True(t, strings.HasPrefix(first.Key, "sk_op_"))
		require.Equal(t, http.StatusOK, works(first.Key))

		roll, err := admin.RollOperatorKeyWithResponse(ctx, o.Id, first.Id, &oc.RollOperatorKeyParams{IdempotencyKey: key()}, oc.RollRequest{Overlap: ptr("0s")})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, roll.StatusCode(), string(roll.Body))
		require.Equal(t, http.StatusUnauthorized, works(first.Key))
		require.Equal(t, http.StatusOK, works(roll.JSON200.Data.Key))

		rv, err := admin.RevokeOperatorKeyWithResponse(ctx, o.Id, roll.JSON200.Data.Id, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rv.StatusCode())
		require.Equal(t, http.StatusUnauthorized, works(roll.JSON200.Data.Key))

		keys, err := admin.ListOperatorKeysWithResponse(ctx, o.Id)
		require.NoError(t, err)
		require.Len(t, keys.JSON200.Data, 2)
		ops, err := admin.ListOperatorsWithResponse(ctx)
		require.NoError(t, err)
		require.Len(t, ops.JSON200.Data, 2)
	})
}
