package operatorapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/partners"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// In production a confirmed deposit waits for the back office: fill, settle and
// payout through the operator API, with exactly the partner's statuses, history
// reasons and webhook events, and a restart between steps.
func TestProductionPathToCompleted(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		settings := operatorAdapterSettings(t, db)
		env := apitest.Start(t, db, settings)
		ctx := context.Background()
		partnerKey := env.NewPartner(t)
		pc := env.Client(t, partnerKey)
		opKey := env.NewOperator(t)
		ops := env.OperatorClient(t, opKey)
		opID := operatorID(t, env, opKey)

		tx := create(t, pc, "PROD-"+uuid.NewString(), "154225.00")
		confirmDeposit(t, env, tx.Id)

		// The transaction waits: deposit_confirming with its deposit confirmed.
		got, err := pc.GetTransactionWithResponse(ctx, tx.Id)
		require.NoError(t, err)
		require.Equal(t, client.TransactionStatusDepositConfirming, got.JSON200.Data.Status)
		require.Equal(t, "confirmed", *got.JSON200.Data.DepositStatus)
		require.NotNil(t, got.JSON200.Data.ConfirmedAt)
		require.Contains(t, stage(t, ops, oc.StageAwaitingFill), tx.Id)
		require.NotContains(t, stage(t, ops, oc.StageAwaitingSettlement), tx.Id)

		fill, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: key()},
			oc.FillRequest{Rate: "1549.10", FiatAmount: "154910.00", Reference: "LP-1"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, fill.StatusCode(), string(fill.Body))
		require.Equal(t, oc.TransactionStatusOrderFilled, fill.JSON200.Data.Status)
		require.Equal(t, "154225.00", fill.JSON200.Data.Amount, "the partner's amount does not change")
		require.Equal(t, "1542.25", fill.JSON200.Data.Rate)
		f := fill.JSON200.Data.Fill
		require.NotNil(t, f, "the executed sale is the back office's record")
		require.Equal(t, "1549.10", f.Rate)
		require.Equal(t, "154910.00", f.FiatAmount)
		require.Equal(t, "LP-1", f.Reference)
		require.Equal(t, opID, f.OperatorId.String())
		require.Contains(t, stage(t, ops, oc.StageAwaitingSettlement), tx.Id)
		require.NotContains(t, stage(t, ops, oc.StageAwaitingFill), tx.Id)

		// A restart between steps loses nothing: the next step is in the database.
		env.Stop()
		env = apitest.Start(t, db, settings)
		pc = env.Client(t, partnerKey)
		ops = env.OperatorClient(t, opKey)

		settle, err := ops.SettleOrderWithResponse(ctx, tx.Id, &oc.SettleOrderParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "LP-SETTLE-1"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, settle.StatusCode(), string(settle.Body))
		require.Equal(t, oc.TransactionStatusCompleted, settle.JSON200.Data.Status)
		require.NotNil(t, settle.JSON200.Data.Fill, "the fill survives the restart")
		require.Nil(t, settle.JSON200.Data.PayoutSettledAt)
		require.Contains(t, stage(t, ops, oc.StageAwaitingPayout), tx.Id)

		payout, err := ops.SettlePayoutWithResponse(ctx, tx.Id, &oc.SettlePayoutParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "NIP-1"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, payout.StatusCode(), string(payout.Body))
		require.NotNil(t, payout.JSON200.Data.PayoutSettledAt)
		require.NotContains(t, stage(t, ops, oc.StageAwaitingPayout), tx.Id)

		h := partnerHistory(t, pc, tx.Id)
		require.Equal(t, client.TransactionStatusCompleted, h.Status)
		require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled", "order:settled", "payout:settled"}, reasons(h))
		for i, ref := range map[int]string{3: "LP-1", 4: "LP-SETTLE-1", 5: "NIP-1"} {
			require.Equal(t, opID, (*h.History[i].Metadata)["operator_id"], "audited: %s", h.History[i].Reason)
			require.Equal(t, ref, (*h.History[i].Metadata)["reference"])
		}
		require.Equal(t, map[string]any{"operator_id": opID, "reference": "LP-1"}, *h.History[3].Metadata,
			"the partner sees who and which reference, not the executed sale")
		require.Equal(t, []string{"transaction.created", "deposit.detected", "deposit.confirmed", "transaction.completed", "payout.settled"}, eventTypes(t, env, tx.Id))

		rev, err := pc.ListRevenueWithResponse(ctx, &client.ListRevenueParams{})
		require.NoError(t, err)
		require.Len(t, rev.JSON200.Data.Data, 1)
		require.Equal(t, "154225.00", rev.JSON200.Data.Data[0].Amount)
	})
}

// operatorID returns the id of the operator owning key.
func operatorID(t *testing.T, env *apitest.Env, key string) string {
	t.Helper()
	o, err := env.Store.OperatorByKeyHash(context.Background(), partners.HashKey(key))
	require.NoError(t, err)
	return o.ID.String()
}

// Operator keys are rate-limited like partner keys, each on its own budget.
func TestOperatorRateLimit(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"RATE_LIMIT_READS": "2/1m"})
		ctx := context.Background()
		busy := env.OperatorClient(t, env.NewOperator(t))
		for range 2 {
			res, err := busy.ListUnmatchedDepositsWithResponse(ctx, &operatorclient.ListUnmatchedDepositsParams{})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			require.NotEmpty(t, res.HTTPResponse.Header.Get("RateLimit"))
		}
		res, err := busy.ListUnmatchedDepositsWithResponse(ctx, &operatorclient.ListUnmatchedDepositsParams{})
		require.NoError(t, err)
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode(), string(res.Body))
		require.Equal(t, operatorclient.ErrorCodeRateLimited, res.JSON429.Error.Code)
		require.NotEmpty(t, res.HTTPResponse.Header.Get("Retry-After"))

		other := env.OperatorClient(t, env.NewOperator(t))
		res, err = other.ListUnmatchedDepositsWithResponse(ctx, &operatorclient.ListUnmatchedDepositsParams{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), "another operator has its own budget")
	})
}
