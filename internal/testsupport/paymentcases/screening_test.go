package paymentcases_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// listSender imports a list naming the chain's sender, as partnerd screening import does.
func (e *env) listSender(source string) int {
	e.t.Helper()
	return e.api.ListAddress(e.t, source, e.sender)
}

// review posts an operator's decision.
func (e *env) review(id uuid.UUID, decision operatorclient.ReviewRequestDecision) *operatorclient.ReviewTransactionResponse {
	e.t.Helper()
	res, err := e.ops.ReviewTransactionWithResponse(context.Background(), id, &operatorclient.ReviewTransactionParams{IdempotencyKey: uuid.NewString()},
		operatorclient.ReviewRequest{Decision: decision, Note: "checked by the compliance desk"})
	require.NoError(e.t, err)
	return res
}

// queue returns the review queue's entry for id, nil when it is not queued.
func (e *env) queued(id uuid.UUID) *operatorclient.ScreeningReview {
	e.t.Helper()
	res, err := e.ops.ListScreeningReviewsWithResponse(context.Background(), &operatorclient.ListScreeningReviewsParams{})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	for _, r := range res.JSON200.Data {
		if r.TransactionId == id {
			return &r
		}
	}
	return nil
}

// silent checks that nothing the partner reads of id names the cause.
func (e *env) silent(id uuid.UUID) {
	e.t.Helper()
	res, err := e.c.GetTransactionWithResponse(context.Background(), id)
	require.NoError(e.t, err)
	hist, err := e.c.GetTransactionStatusHistoryWithResponse(context.Background(), id)
	require.NoError(e.t, err)
	events, err := e.c.ListWebhookEventsWithResponse(context.Background(), &client.ListWebhookEventsParams{})
	require.NoError(e.t, err)
	for _, body := range []string{string(res.Body), string(hist.Body), string(events.Body)} {
		lower := strings.ToLower(body)
		for _, word := range []string{"sanction", "screen", "ofac", "listed", "blocked", "compliance"} {
			require.NotContains(e.t, lower, word, "the partner is never told why")
		}
	}
}

// A deposit from a listed sender is held, even with the automatic liquidity
// adapter: its deposit confirms but nothing fills; the partner sees under_review
// and nothing of why; the operator's queue shows the evidence; release fills it.
func TestListedSenderHeldThenReleased(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := start(t, db, nil)
			e.listSender("OFAC SDN")
			tx := e.create("31000")
			d := onChain{e}.pay(tx, tx.CryptoAmount)
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status)
			require.True(t, *d.UnderReview)
			for range required + 2 {
				e.chain.Backend.Commit()
			}
			require.Eventually(t, func() bool { d = e.get(tx.Id); return *d.DepositStatus == "confirmed" }, 30*time.Second, 20*time.Millisecond)
			time.Sleep(300 * time.Millisecond) // a fill would follow at once: none does
			d = e.get(tx.Id)
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status, "held: not filled")
			require.True(t, *d.UnderReview)

			q := e.queued(tx.Id)
			require.NotNil(t, q, "in the review queue")
			require.Equal(t, operatorclient.ScreeningReviewScreeningHeld, q.Screening)
			require.Equal(t, []string{e.sender}, q.Senders)
			require.Len(t, q.Results, 1)
			require.Equal(t, operatorclient.ScreeningResultVerdictHit, q.Results[0].Verdict)
			require.Equal(t, "list", q.Results[0].Findings[0].Screener)
			require.Equal(t, "OFAC SDN", q.Results[0].Findings[0].Source)
			require.Contains(t, *q.Results[0].Findings[0].Version, "published 2026-11-01")

			fill, err := e.ops.FillOrderWithResponse(context.Background(), tx.Id, &operatorclient.FillOrderParams{IdempotencyKey: uuid.NewString()},
				operatorclient.FillRequest{Rate: "1500.00", FiatAmount: "1000.00", Reference: "fill-1"})
			require.NoError(t, err)
			require.Equal(t, http.StatusConflict, fill.StatusCode(), "an operator cannot sell held funds: %s", fill.Body)
			e.silent(tx.Id)

			res := e.review(tx.Id, operatorclient.Release)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			d = e.waitFor(tx.Id, client.TransactionStatusOrderFilled)
			require.False(t, *d.UnderReview)
			require.Nil(t, e.queued(tx.Id), "out of the queue")
			require.Equal(t, http.StatusConflict, e.review(tx.Id, operatorclient.Release).StatusCode(), "decided once")
			e.silent(tx.Id)
		})
	}
}

// Block ends the transaction in failed for good: no refund, its address left out
// of the sweep export, listed in the blocked-property report; the partner reads a
// failure and nothing of why.
func TestListedSenderBlocked(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := start(t, db, nil)
			e.listSender("OFAC SDN")
			tx := e.create("31000")
			d := onChain{e}.pay(tx, tx.CryptoAmount)
			require.True(t, *d.UnderReview)

			res := e.review(tx.Id, operatorclient.Block)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			d = e.get(tx.Id)
			require.Equal(t, client.TransactionStatusFailed, d.Status)
			require.Equal(t, "failed", *d.DepositStatus)
			require.False(t, *d.UnderReview)
			require.Equal(t, story{
				Reasons: []string{"transaction:created", "deposit:detected", "review:failed"},
				Events:  []string{"transaction.created", "deposit.detected", "transaction.failed"},
			}, e.story(tx.Id))

			refund, err := e.ops.RefundTransactionWithResponse(ctx, tx.Id, &operatorclient.RefundTransactionParams{IdempotencyKey: uuid.NewString()},
				operatorclient.RefundRequest{TxHash: "0x" + strings.Repeat("ab", 32)})
			require.NoError(t, err)
			require.Equal(t, http.StatusConflict, refund.StatusCode(), "blocked funds are never sent back: %s", refund.Body)
			for range required + 2 {
				e.chain.Backend.Commit()
			}
			e.scanned()
			require.Equal(t, client.TransactionStatusFailed, e.get(tx.Id).Status, "confirmations change nothing")

			var swept []string
			require.NoError(t, e.api.Store.IssuedAddresses(ctx, network, func(a store.IssuedAddress) error {
				swept = append(swept, a.Address)
				return nil
			}))
			require.NotContains(t, swept, tx.DepositAddress, "kept out of the sweep export")

			report, err := e.ops.BlockedPropertyReport(ctx)
			require.NoError(t, err)
			defer report.Body.Close()
			body, err := io.ReadAll(report.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, report.StatusCode)
			require.Contains(t, string(body), tx.Id.String())
			require.Contains(t, string(body), e.sender)
			require.Contains(t, string(body), "checked by the compliance desk")
			e.silent(tx.Id)
		})
	}
}

// A clean sender proceeds as before; a list imported while the transaction waits
// screens its sender again and holds it; a refund to a listed sender is refused.
func TestNewListRescreensAndRefundsAreScreened(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := start(t, db, nil)
			clean := e.create("31000")
			d := onChain{e}.pay(clean, clean.CryptoAmount)
			require.False(t, *d.UnderReview)
			d = onChain{e}.confirm(clean, client.TransactionStatusOrderFilled)
			require.False(t, *d.UnderReview, "a clean deposit proceeds as today")

			waiting := e.create("31000")
			d = onChain{e}.pay(waiting, "5")
			require.Equal(t, "partial", *d.DepositStatus)
			require.False(t, *d.UnderReview)
			short := e.create("31000")
			onChain{e}.pay(short, "4")
			cancel, err := e.c.CancelTransactionWithResponse(ctx, short.Id, &client.CancelTransactionParams{IdempotencyKey: uuid.NewString()})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, cancel.StatusCode(), string(cancel.Body))

			require.GreaterOrEqual(t, e.listSender("OFAC SDN"), 1, "the waiting transaction is queued again")
			require.Eventually(t, func() bool { return *e.get(waiting.Id).UnderReview }, 30*time.Second, 20*time.Millisecond,
				"a new list screens waiting transactions again")
			require.False(t, *e.get(clean.Id).UnderReview, "a filled transaction is not screened again")

			tasks := e.tasks(operatorclient.Short, short.Id)
			require.Len(t, tasks, 1)
			hash := operatorclient.ChainHash("0x" + strings.Repeat("cd", 32))
			res, err := e.ops.ResolveRefundTaskWithResponse(ctx, tasks[0].Id, &operatorclient.ResolveRefundTaskParams{IdempotencyKey: uuid.NewString()},
				operatorclient.ResolveRequest{Action: operatorclient.ResolveRequestActionRefunded, TxHash: &hash})
			require.NoError(t, err)
			require.Equal(t, http.StatusConflict, res.StatusCode(), "no refund to a listed address: %s", res.Body)
			require.Contains(t, string(res.Body), e.sender)
			require.Len(t, e.tasks(operatorclient.Short, short.Id), 1, "still open")
		})
	}
}

// The sandbox simulator respects a screening hold: a held transaction is not
// failed, completed, refunded or paid out by a simulated event (409, nothing
// changes, the partner reads nothing of why); the operator's release moves it.
func TestSimulatorRespectsAHold(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			e := start(t, db, nil)
			e.listSender("OFAC SDN")
			tx := e.create("31000")
			d := onChain{e}.pay(tx, tx.CryptoAmount)
			require.True(t, *d.UnderReview)
			before := e.story(tx.Id)
			for _, ev := range []client.SimulateRequestEvent{client.SimulateRequestEventTransactionFailed, client.SimulateRequestEventTransactionCompleted,
				client.SimulateRequestEventTransactionRefunded, client.SimulateRequestEventPayoutSettled} {
				res := e.simulate(client.SimulateRequest{Event: ev, TransactionId: tx.Id})
				require.Equal(t, http.StatusConflict, res.StatusCode(), "%s: %s", ev, res.Body)
				require.Equal(t, client.ErrorCodeInvalidStateTransition, res.JSON409.Error.Code)
			}
			require.Equal(t, before, e.story(tx.Id), "nothing moved")
			require.True(t, *e.get(tx.Id).UnderReview)
			e.silent(tx.Id)
		})
	}
}
