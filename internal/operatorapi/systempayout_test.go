package operatorapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/backoffice/payouts"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// requireSystemPayout checks that transaction tx's payout, made by the service (the
// simulator or the automatic step), is a payout of one as the partner and the
// operators read it: GET /payouts lists it with reference SIM- and the first 8 hex
// digits of its id, the transaction's amount and one transaction; GET /payouts/{id}
// reads it with its transaction; the export has its row; the payout.settled event
// names it; the operators list it and read it on the case file, with the nil UUID as
// its operator. It returns the payout.
func requireSystemPayout(t *testing.T, env *apitest.Env, pc *client.ClientWithResponses, ops *oc.ClientWithResponses, partner uuid.UUID, tx client.Transaction) client.Payout {
	t.Helper()
	ctx := context.Background()
	list, err := pc.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
	require.Len(t, list.JSON200.Data.Data, 1, "the payout of one")
	one := list.JSON200.Data.Data[0]
	ref := "SIM-" + one.Id.String()[:8]
	require.Equal(t, ref, one.Reference)
	require.Equal(t, tx.Amount, one.Amount)
	require.Equal(t, 1, one.TransactionCount)

	d, err := pc.GetPayoutWithResponse(ctx, one.Id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, d.StatusCode(), string(d.Body))
	require.Equal(t, ref, d.JSON200.Data.Reference)
	require.Equal(t, tx.Amount, d.JSON200.Data.Amount)
	require.Equal(t, []client.PayoutTransaction{{TransactionId: tx.Id, MerchantReference: tx.MerchantReference, Network: "bep20",
		CryptoCurrency: "usdt", CryptoAmount: tx.CryptoAmount, Amount: tx.Amount}}, d.JSON200.Data.Transactions)

	exp, err := pc.ExportPayoutsWithResponse(ctx, &client.ExportPayoutsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, exp.StatusCode(), string(exp.Body))
	require.Equal(t, [][]string{payouts.Columns,
		{one.Id.String(), ref, tx.Amount, one.CreatedAt.UTC().Format(time.RFC3339), tx.Id.String(), tx.MerchantReference, "bep20", "usdt", tx.CryptoAmount, tx.Amount},
	}, readCSV(t, exp.Body))

	payout := payoutSettled(t, pc, tx.Id)
	require.NotNil(t, payout.PayoutId)
	require.Equal(t, one.Id, *payout.PayoutId)
	require.NotNil(t, payout.Reference)
	require.Equal(t, ref, *payout.Reference)
	require.Equal(t, tx.Amount, payout.Amount)
	require.Equal(t, []string{"transaction.created", "deposit.detected", "deposit.confirmed", "transaction.completed", "payout.settled"},
		eventTypes(t, env, tx.Id), "every stored payload keeps the contract")

	opList, err := ops.ListPayoutsWithResponse(ctx, &oc.ListPayoutsParams{PartnerId: &partner})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, opList.StatusCode(), string(opList.Body))
	require.Len(t, opList.JSON200.Data.Data, 1)
	b := opList.JSON200.Data.Data[0]
	require.Equal(t, one.Id, b.Id)
	require.Equal(t, uuid.Nil, b.OperatorId, "no operator recorded it")
	require.Equal(t, ref, b.Reference)
	require.Equal(t, tx.Amount, b.FiatAmount)
	require.Equal(t, []uuid.UUID{tx.Id}, b.TransactionIds)
	all, err := ops.ListPayoutsWithResponse(ctx, &oc.ListPayoutsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, all.StatusCode(), string(all.Body))

	c, err := ops.GetOperatorTransactionWithResponse(ctx, tx.Id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, c.StatusCode(), string(c.Body))
	p := c.JSON200.Data.Payout
	require.NotNil(t, p)
	require.Equal(t, one.Id, *p.PayoutId)
	require.Equal(t, tx.Amount, *p.PayoutFiatAmount)
	require.Equal(t, ref, *p.Reference)
	require.Nil(t, p.OperatorId, "no operator recorded it")
	last := c.JSON200.Data.History[len(c.JSON200.Data.History)-1]
	require.Equal(t, "payout:settled", last.Reason)
	require.Nil(t, last.OperatorId)
	require.Nil(t, last.OperatorName)
	return one
}

// A transaction the sandbox simulator pays out is a payout of one like an
// operator's single payout, in the partner API and the operator API; the payout
// is recorded once (a second simulated payout is refused and adds none), and
// another partner sees none of it.
func TestSimulatedPayoutIsAPayoutOfOne(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, nil)
		ctx := context.Background()
		keyA := env.NewPartner(t)
		pa, pb := env.Client(t, keyA), env.Client(t, env.NewPartner(t))
		ops := env.OperatorClient(t, env.NewOperator(t))
		tx := create(t, pa, "SIM-PAID-"+uuid.NewString(), "22500.75")
		for _, ev := range []client.SimulateRequestEvent{client.SimulateRequestEventDepositDetected, client.SimulateRequestEventDepositConfirmed,
			client.SimulateRequestEventTransactionCompleted, client.SimulateRequestEventPayoutSettled} {
			simulate(t, pa, tx.Id, ev)
		}
		one := requireSystemPayout(t, env, pa, ops, env.PartnerID(t, keyA), tx)
		h := partnerHistory(t, pa, tx.Id)
		require.Equal(t, one.Reference, (*h.History[len(h.History)-1].Metadata)["reference"], "the history names the payout's reference")

		again, err := pa.SimulateSandboxEventWithResponse(ctx, nil, client.SimulateRequest{Event: client.SimulateRequestEventPayoutSettled, TransactionId: tx.Id})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, again.StatusCode(), string(again.Body))
		list, err := pa.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 1, "one payout")

		nf, err := pb.GetPayoutWithResponse(ctx, one.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, nf.StatusCode())
		none, err := pb.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{})
		require.NoError(t, err)
		require.Empty(t, none.JSON200.Data.Data)
	})
}

// In SETTLEMENT_MODE=auto the payout the service makes by itself is a payout of
// one too.
func TestAutomaticPayoutIsAPayoutOfOne(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"SETTLEMENT_MODE": "auto", "SIMULATED_SETTLEMENT_DELAY": "10ms", "JOB_POLL_INTERVAL": "50ms"})
		keyA := env.NewPartner(t)
		pa := env.Client(t, keyA)
		ops := env.OperatorClient(t, env.NewOperator(t))
		tx := create(t, pa, "AUTO-PAID-"+uuid.NewString(), "3000.00")
		simulate(t, pa, tx.Id, client.SimulateRequestEventDepositDetected)
		simulate(t, pa, tx.Id, client.SimulateRequestEventDepositConfirmed)
		h := waitPaidOut(t, pa, tx.Id)
		last := *h.History[len(h.History)-1].Metadata
		require.Equal(t, "auto", last["by"])
		one := requireSystemPayout(t, env, pa, ops, env.PartnerID(t, keyA), tx)
		require.Equal(t, one.Reference, last["reference"])
	})
}
