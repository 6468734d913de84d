package paymentcases_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
)

// shortAndExpired makes a transaction whose payment of paid tokens is still short
// when it expires (created with create).
func (e *env) shortAndExpired(p payer, tx client.Transaction, paid string) client.TransactionDetail {
	e.t.Helper()
	d := p.pay(tx, paid)
	require.Equal(e.t, "partial", *d.DepositStatus, p.name())
	require.False(e.t, *d.ActionRequired, "partial before the deadline: nothing to decide yet")
	require.Equal(e.t, []client.PartnerAction{client.Cancel}, *d.AllowedActions)
	d = e.event(tx, client.SimulateRequestEventTransactionExpired)
	require.Equal(e.t, client.TransactionStatusExpired, d.Status)
	require.Equal(e.t, "underpaid", *d.DepositStatus)
	return d
}

func (e *env) accept(id uuid.UUID) *client.AcceptTransactionResponse {
	e.t.Helper()
	res, err := e.c.AcceptTransactionWithResponse(context.Background(), id, &client.AcceptTransactionParams{IdempotencyKey: uuid.NewString()})
	require.NoError(e.t, err)
	return res
}

func (e *env) refund(id uuid.UUID, address *string) *client.RefundTransactionResponse {
	e.t.Helper()
	body := client.RefundRequest{Address: address}
	res, err := e.c.RefundTransactionWithResponse(context.Background(), id, &client.RefundTransactionParams{IdempotencyKey: uuid.NewString()}, body)
	require.NoError(e.t, err)
	return res
}

// A short payment after expiry waits on the partner (action_required, accept or
// refund, on the answer and on the transaction.expired event); the partner accepts
// it at a fresh rate and the transaction completes at the new amount, with the
// history, revenue and events the back office's accept gives.
func TestPartnerAcceptsAShortPayment(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		ctx := context.Background()
		tx := e.create("31000")
		require.False(t, tx.ActionRequired)
		require.Equal(t, []client.PartnerAction{client.Cancel}, tx.AllowedActions)
		paid := dec(tx.CryptoAmount).Sub(dec("5"))
		d := e.shortAndExpired(p, tx, paid.String())
		require.True(t, *d.ActionRequired)
		require.Equal(t, []client.PartnerAction{client.Accept, client.Refund}, *d.AllowedActions)

		list, err := e.c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{MerchantReference: &tx.MerchantReference})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
		require.Len(t, list.JSON200.Data.Data, 1)
		require.True(t, list.JSON200.Data.Data[0].ActionRequired, "the list says so too")

		expired := e.api.Event(t, tx.Id, "transaction.expired")
		require.Equal(t, true, expired["action_required"], "the event that expired it tells the partner")
		require.Equal(t, []any{"accept", "refund"}, expired["allowed_actions"])

		// The fresh rate is what a quote of the received amount gives now.
		crypto := paid.StringFixed(6)
		q, err := e.c.CreateQuoteWithResponse(ctx, &client.CreateQuoteParams{}, client.QuoteRequest{CryptoCurrency: "usdt", Network: network, CryptoAmount: &crypto})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, q.StatusCode(), string(q.Body))

		res := e.accept(tx.Id)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		got := res.JSON200.Data
		require.Equal(t, client.TransactionStatusDepositConfirming, got.Status)
		require.Equal(t, paid.StringFixed(6), got.CryptoAmount)
		require.Equal(t, q.JSON201.Data.AdjustedRate, got.Rate)
		want := paid.Mul(dec(q.JSON201.Data.AdjustedRate)).RoundFloor(2).StringFixed(2)
		require.Equal(t, want, got.Amount)
		require.False(t, *got.ActionRequired)
		require.Empty(t, *got.AllowedActions)
		m := e.meta(tx.Id, "deposit:accepted")
		require.Equal(t, "partner", m["by"])
		require.NotEmpty(t, m["quote_id"])
		require.Equal(t, tx.Amount, m["old_amount"])
		require.Equal(t, want, m["new_amount"])
		require.Equal(t, tx.Rate, m["old_rate"])
		require.Empty(t, e.tasks(operatorclient.Short, tx.Id), "accepting closes the short task")

		again := e.accept(tx.Id)
		require.Equal(t, http.StatusConflict, again.StatusCode(), string(again.Body))
		op, err := e.ops.AcceptShortPaymentWithResponse(ctx, tx.Id, &operatorclient.AcceptShortPaymentParams{IdempotencyKey: uuid.NewString()},
			operatorclient.AcceptRequest{Reason: "too late"})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, op.StatusCode(), "the partner decided first: %s", op.Body)

		d = p.confirm(tx, client.TransactionStatusOrderFilled)
		require.Equal(t, want, d.Amount)
		d = e.event(tx, client.SimulateRequestEventTransactionCompleted)
		require.Equal(t, client.TransactionStatusCompleted, d.Status)
		rev, err := e.c.ListRevenueWithResponse(ctx, &client.ListRevenueParams{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rev.StatusCode(), string(rev.Body))
		found := false
		for _, r := range rev.JSON200.Data.Data {
			if r.TransactionId == tx.Id {
				found = true
				require.Equal(t, want, r.Amount, "the revenue row is at the new amount")
			}
		}
		require.True(t, found, "the revenue row is written")
		require.Equal(t, story{
			Reasons: []string{"transaction:created", "deposit:partial", "system:expired", "deposit:accepted", "deposit:confirmed", "order:filled", "order:settled"},
			Events:  []string{"transaction.created", "deposit.detected", "transaction.expired", "deposit.confirmed", "transaction.completed"},
		}, e.story(tx.Id), p.name())
		return tx.Id
	})
}

// A refund goes to the address given on create: the request is recorded on the
// transaction and on the short task the operators execute, the back office can no
// longer accept it, and the operators' refund completes it.
func TestPartnerRefundsToItsRefundAddress(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		ctx := context.Background()
		to := "0x" + strings.Repeat("ab", 20)
		fiat := "31000"
		res, err := e.c.CreateTransactionWithResponse(ctx, &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
			client.CreateTransactionRequest{MerchantReference: "REFUND-" + uuid.NewString(), CryptoCurrency: "usdt", Network: network, FiatAmount: &fiat, RefundAddress: &to})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
		tx := res.JSON201.Data
		require.NotNil(t, tx.RefundAddress)
		require.True(t, strings.EqualFold(to, *tx.RefundAddress), "stored in the network's form: %s", *tx.RefundAddress)

		bad := "T" + strings.Repeat("x", 33)
		wrong, err := e.c.CreateTransactionWithResponse(ctx, &client.CreateTransactionParams{IdempotencyKey: uuid.NewString()},
			client.CreateTransactionRequest{MerchantReference: "REFUND-" + uuid.NewString(), CryptoCurrency: "usdt", Network: network, FiatAmount: &fiat, RefundAddress: &bad})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, wrong.StatusCode(), string(wrong.Body))
		require.Contains(t, string(wrong.Body), "/refund_address")

		early := e.refund(tx.Id, nil)
		require.Equal(t, http.StatusConflict, early.StatusCode(), "nothing to refund yet: %s", early.Body)

		e.shortAndExpired(p, tx, "2")
		r := e.refund(tx.Id, nil)
		require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
		got := r.JSON200.Data
		require.Equal(t, client.TransactionStatusExpired, got.Status)
		require.NotNil(t, got.RefundRequestedAt)
		require.False(t, *got.ActionRequired)
		require.Empty(t, *got.AllowedActions)
		require.False(t, *got.UnderReview)
		require.Equal(t, *tx.RefundAddress, e.meta(tx.Id, "refund:requested")["refund_address"])

		late := e.simulate(client.SimulateRequest{Event: client.SimulateRequestEventDepositDetected, TransactionId: tx.Id, Amount: ptr("3")})
		require.Equal(t, http.StatusConflict, late.StatusCode(), "after a refund request the transaction takes no late transfer: %s", late.Body)

		short := e.tasks(operatorclient.Short, tx.Id)
		require.Len(t, short, 1)
		require.NotNil(t, short[0].RefundTo, "the operators see where it goes")
		require.Equal(t, *tx.RefundAddress, *short[0].RefundTo)
		acc, err := e.ops.AcceptShortPaymentWithResponse(ctx, tx.Id, &operatorclient.AcceptShortPaymentParams{IdempotencyKey: uuid.NewString()},
			operatorclient.AcceptRequest{Reason: "the merchant agreed"})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, acc.StatusCode(), "the partner asked for a refund first: %s", acc.Body)
		require.Equal(t, http.StatusConflict, e.accept(tx.Id).StatusCode(), "nor can the partner change its mind")

		hash := operatorclient.ChainHash("0x" + strings.Repeat("ef", 32))
		done := e.resolveTask(short[0].Id, operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionRefunded, TxHash: &hash})
		require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
		require.Equal(t, client.TransactionStatusRefunded, e.get(tx.Id).Status)
		return tx.Id
	})
}

// A refund to an address a sanctions list names is never sent: the transaction is
// held for review, and the operators cannot send it back until the review ends.
func TestRefundToANamedAddressIsHeld(t *testing.T) {
	t.Parallel()
	twins(t, map[string]string{"SCREENING": "list"}, func(t *testing.T, e *env, p payer) uuid.UUID {
		listed := "0x" + strings.Repeat("5c", 20)
		e.api.ListAddress(t, "Test SDN list", listed)
		tx := e.create("31000")
		e.shortAndExpired(p, tx, "2")

		noAddress := e.refund(tx.Id, nil)
		require.Equal(t, http.StatusBadRequest, noAddress.StatusCode(), string(noAddress.Body))
		require.Contains(t, string(noAddress.Body), "/address")

		r := e.refund(tx.Id, &listed)
		require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
		require.True(t, *r.JSON200.Data.UnderReview, "held for review")
		require.Empty(t, *r.JSON200.Data.AllowedActions)

		short := e.tasks(operatorclient.Short, tx.Id)
		require.Len(t, short, 1)
		hash := operatorclient.ChainHash("0x" + strings.Repeat("ef", 32))
		held := e.resolveTask(short[0].Id, operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionRefunded, TxHash: &hash})
		require.Equal(t, http.StatusConflict, held.StatusCode(), "never sent to a named address: %s", held.Body)
		require.Equal(t, client.TransactionStatusExpired, e.get(tx.Id).Status)
		return tx.Id
	})
}

// The partner and the back office deciding at once: one wins (200), the other is
// told 409, and the transaction is decided once.
func TestPartnerAndOperatorDecideAtOnce(t *testing.T) {
	t.Parallel()
	twins(t, nil, func(t *testing.T, e *env, p payer) uuid.UUID {
		tx := e.create("31000")
		e.shortAndExpired(p, tx, "2")
		var wg sync.WaitGroup
		var partner, operator int
		wg.Add(2)
		go func() {
			defer wg.Done()
			res, err := e.c.AcceptTransactionWithResponse(context.Background(), tx.Id, &client.AcceptTransactionParams{IdempotencyKey: uuid.NewString()})
			if err == nil {
				partner = res.StatusCode()
			}
		}()
		go func() {
			defer wg.Done()
			res, err := e.ops.AcceptShortPaymentWithResponse(context.Background(), tx.Id,
				&operatorclient.AcceptShortPaymentParams{IdempotencyKey: uuid.NewString()}, operatorclient.AcceptRequest{Reason: "at once"})
			if err == nil {
				operator = res.StatusCode()
			}
		}()
		wg.Wait()
		require.ElementsMatch(t, []int{http.StatusOK, http.StatusConflict}, []int{partner, operator})
		accepted := 0
		for _, h := range e.story(tx.Id).Reasons {
			if h == "deposit:accepted" {
				accepted++
			}
		}
		require.Equal(t, 1, accepted, "decided once")
		// Both twins end the same way whoever won: the deposit confirms.
		p.confirm(tx, client.TransactionStatusOrderFilled)
		return tx.Id
	})
}
