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
)

// resolveTask resolves refund task id with req and returns the answer.
func (e *env) resolveTask(id uuid.UUID, req operatorclient.ResolveRequest) *operatorclient.ResolveRefundTaskResponse {
	e.t.Helper()
	res, err := e.ops.ResolveRefundTaskWithResponse(context.Background(), id, &operatorclient.ResolveRefundTaskParams{IdempotencyKey: uuid.NewString()}, req)
	require.NoError(e.t, err)
	return res
}

// A short task resolved refunded is the transaction's refund: the expired
// transaction is refunded with it, so accept can no longer credit the returned
// tokens; credited on a short task is refused (accept is the way to credit it).
func TestShortTaskRefundedRefundsTheTransaction(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		ctx := context.Background()
		tx := e.create("31000")
		p.pay(tx, "2")
		e.event(tx, client.SimulateRequestEventTransactionExpired)
		short := e.tasks(operatorclient.Short, tx.Id)
		require.Len(t, short, 1)

		note := "credited by hand"
		res := e.resolveTask(short[0].Id, operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionCredited, Note: &note})
		require.Equal(t, http.StatusConflict, res.StatusCode(), string(res.Body))
		require.Len(t, e.tasks(operatorclient.Short, tx.Id), 1, "a refused credit leaves the task open")

		hash := operatorclient.ChainHash("0x" + strings.Repeat("cd", 32))
		res = e.resolveTask(short[0].Id, operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionRefunded, TxHash: &hash})
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, operatorclient.UnmatchedDepositStatusRefunded, res.JSON200.Data.Status)
		require.Equal(t, hash, *res.JSON200.Data.ResolutionTxHash)
		d := e.get(tx.Id)
		require.Equal(t, client.TransactionStatusRefunded, d.Status)
		require.Equal(t, "refunded", *d.DepositStatus)
		require.Equal(t, string(hash), e.meta(tx.Id, "deposit:refunded")["refund_tx_hash"])

		acc, err := e.ops.AcceptShortPaymentWithResponse(ctx, tx.Id, &operatorclient.AcceptShortPaymentParams{IdempotencyKey: uuid.NewString()},
			operatorclient.AcceptRequest{Reason: "the customer asked"})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, acc.StatusCode(), "the returned tokens cannot be accepted: %s", acc.Body)
		again := e.resolveTask(short[0].Id, operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionRefunded, TxHash: &hash})
		require.Equal(t, http.StatusConflict, again.StatusCode(), string(again.Body))
		return tx.Id
	})
}

// Refunding a failed, overpaid transaction sends everything back: its excess task
// closes with the refund's hash.
func TestRefundClosesTheExcessTask(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		tx := e.create("31000")
		p.pay(tx, dec(tx.CryptoAmount).Add(dec("3")).String())
		p.confirm(tx, client.TransactionStatusOrderFilled)
		require.Len(t, e.tasks(operatorclient.Excess, tx.Id), 1)
		e.event(tx, client.SimulateRequestEventTransactionFailed)
		hash := operatorclient.ChainHash("0x" + strings.Repeat("ef", 32))
		ref, err := e.ops.RefundTransactionWithResponse(context.Background(), tx.Id, &operatorclient.RefundTransactionParams{IdempotencyKey: uuid.NewString()},
			operatorclient.RefundRequest{TxHash: hash})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, ref.StatusCode(), string(ref.Body))
		require.Empty(t, e.tasks(operatorclient.Excess, tx.Id), "the excess went back with the refund")
		res, err := e.ops.ListRefundTasksWithResponse(context.Background(), &operatorclient.ListRefundTasksParams{
			Kind: ptr(operatorclient.Excess), PartnerId: &e.partner, Status: ptr(operatorclient.ListRefundTasksParamsStatusResolved), Limit: ptr(100)})
		require.NoError(t, err)
		found := false
		for _, task := range res.JSON200.Data.Data {
			if *task.TransactionId == tx.Id {
				found = true
				require.Equal(t, operatorclient.UnmatchedDepositStatusRefunded, task.Status)
				require.Equal(t, hash, *task.ResolutionTxHash)
			}
		}
		require.True(t, found)
		return tx.Id
	})
}

// A partner cancels a partially paid transaction: the tokens received become the
// operators' short refund task, which they resolve as refunded.
func TestCancelWithPartialPayment(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		tx := e.create("31000")
		p.pay(tx, "2")
		res, err := e.c.CancelTransactionWithResponse(context.Background(), tx.Id, &client.CancelTransactionParams{IdempotencyKey: uuid.NewString()})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		d := e.get(tx.Id)
		require.Equal(t, client.TransactionStatusCancelled, d.Status)
		require.Equal(t, "2.000000", *d.DepositAmount)
		short := e.tasks(operatorclient.Short, tx.Id)
		require.Len(t, short, 1, "the received tokens are kept for refund")
		require.Equal(t, "2.000000", short[0].Amount)
		require.Equal(t, "2", e.meta(tx.Id, "partner:cancelled")["received"])

		hash := operatorclient.ChainHash("0x" + strings.Repeat("ba", 32))
		r := e.resolveTask(short[0].Id, operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionRefunded, TxHash: &hash})
		require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
		require.Equal(t, operatorclient.UnmatchedDepositStatusRefunded, r.JSON200.Data.Status)
		require.Equal(t, client.TransactionStatusCancelled, e.get(tx.Id).Status)
		return tx.Id
	})
}
