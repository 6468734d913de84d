package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
)

// operatorReads calls the operator API's reads that need no transaction of the run.
func (w *walk) operatorReads(ctx context.Context) {
	five := ptr(5)
	stage, err := w.oc.ListStageWithResponse(ctx, &operatorclient.ListStageParams{Limit: five, Order: ptr(operatorclient.ListStageParamsOrder("oldest"))})
	w.expect(w.o, "listStage", stage, err, 200)
	unmatched, err := w.oc.ListUnmatchedDepositsWithResponse(ctx, &operatorclient.ListUnmatchedDepositsParams{Limit: five})
	w.expect(w.o, "listUnmatchedDeposits", unmatched, err, 200)
	tasks, err := w.oc.ListRefundTasksWithResponse(ctx, &operatorclient.ListRefundTasksParams{Limit: five})
	w.expect(w.o, "listRefundTasks", tasks, err, 200)
	overview, err := w.oc.GetOverviewWithResponse(ctx)
	w.expect(w.o, "getOverview", overview, err, 200)
	audit, err := w.oc.ListAuditWithResponse(ctx, &operatorclient.ListAuditParams{Limit: five})
	w.expect(w.o, "listAudit", audit, err, 200)
	payouts, err := w.oc.ListPayoutsWithResponse(ctx, &operatorclient.ListPayoutsParams{Limit: five})
	w.expect(w.o, "listPayouts", payouts, err, 200)
	fills, err := w.oc.ListFillsWithResponse(ctx, &operatorclient.ListFillsParams{Limit: five})
	w.expect(w.o, "listFills", fills, err, 200)
	partners, err := w.oc.ListPartnersWithResponse(ctx)
	w.expect(w.o, "listPartners", partners, err, 200)
	reviews, err := w.oc.ListScreeningReviewsWithResponse(ctx, &operatorclient.ListScreeningReviewsParams{})
	w.expect(w.o, "listScreeningReviews", reviews, err, 200)
	lists, err := w.oc.ListScreeningListsWithResponse(ctx)
	w.expect(w.o, "listScreeningLists", lists, err, 200)
	blocked, err := w.oc.BlockedPropertyReportWithResponse(ctx)
	w.expect(w.o, "blockedPropertyReport", blocked, err, 200)
	// A deployment without the transfer provider's key answers 503.
	banks, err := w.oc.ListBanksWithResponse(ctx)
	w.expect(w.o, "listBanks", banks, err, 200, 503)
	// GET /operators and GET /operators/{id}/keys were read to find the key's
	// operator (findSelf).
}

// operatorReadsOf calls the operator API's reads about the run's transaction tx
// (walked to completed and paid out).
func (w *walk) operatorReadsOf(ctx context.Context, tx uuid.UUID) {
	q := tx.String()
	stage, err := w.oc.ListStageWithResponse(ctx, &operatorclient.ListStageParams{Q: &q})
	if w.expect(w.o, "listStage", stage, err, 200) && (len(stage.JSON200.Data.Data) != 1 || stage.JSON200.Data.Data[0].Id != tx) {
		w.o.problem("listStage", "q=<transaction id> did not find exactly the run's transaction")
	}
	audit, err := w.oc.ListAuditWithResponse(ctx, &operatorclient.ListAuditParams{TransactionId: &tx})
	w.expect(w.o, "listAudit", audit, err, 200)
	// The run's transaction was never held: a decision on it is refused (or,
	// without the compliance role, any decision is).
	review, err := w.oc.ReviewTransactionWithResponse(ctx, tx, &operatorclient.ReviewTransactionParams{IdempotencyKey: idemKey()},
		operatorclient.ReviewRequest{Decision: operatorclient.Release, Note: "conformance check " + w.prefix})
	if role := w.lacks("reviewTransaction"); role != "" {
		w.expectRoleRefused("reviewTransaction", review, err, role)
	} else if ok, _ := w.expectActionError(ctx, "reviewTransaction", review, err, 409, "invalid_state_transition"); ok {
		w.o.note("reviewTransaction", "checked refused (409): the run's transaction is not under review")
	}
	if d := w.operatorTx(ctx, tx); d != nil {
		keys, err := w.oc.ListPartnerKeysWithResponse(ctx, d.PartnerId)
		w.expect(w.o, "listPartnerKeys", keys, err, 200)
		users, err := w.oc.ListPartnerUsersWithResponse(ctx, d.PartnerId)
		w.expect(w.o, "listPartnerUsers", users, err, 200)
		payouts, err := w.oc.ListPayoutsWithResponse(ctx, &operatorclient.ListPayoutsParams{PartnerId: &d.PartnerId})
		w.expect(w.o, "listPayouts", payouts, err, 200)
		// The partner may have no settlement account (404).
		account, err := w.oc.GetSettlementAccountWithResponse(ctx, d.PartnerId)
		w.expect(w.o, "getSettlementAccount", account, err, 200, 404)
	}
}

// operatorTx reads tx through the operator API.
func (w *walk) operatorTx(ctx context.Context, tx uuid.UUID) *operatorclient.OperatorTransactionDetail {
	res, err := w.oc.GetOperatorTransactionWithResponse(ctx, tx)
	if !w.expect(w.o, "getOperatorTransaction", res, err, 200) {
		return nil
	}
	return &res.JSON200.Data
}

// actionOps maps an operator action to its operation.
var actionOps = map[string]string{
	"fill": "fillOrder", "settle": "settleOrder", "payout": "settlePayout",
	"fail": "failTransaction", "refund": "refundTransaction", "accept": "acceptShortPayment",
}

// action carries out an operator action on the run's transaction tx. The
// transaction's allowed_actions say whether the deployment's state machine allows
// it now: an allowed action must answer 200, any other 409; where the
// deployment's APPROVALS holds it for a second operator, either is 202 (the
// proposal is withdrawn). It reports whether the action was carried out.
func (w *walk) action(ctx context.Context, tx uuid.UUID, name string) bool {
	d := w.operatorTx(ctx, tx)
	if d == nil {
		return false
	}
	want := 409
	if slices.Contains(d.AllowedActions, operatorclient.OperatorAction(name)) {
		want = 200
	}
	key := idemKey()
	ref := w.prefix + name
	var (
		res answer
		err error
	)
	switch name {
	case "fill":
		rate := amountOf(d.Rate)
		fiat := amountOf(d.CryptoAmount).Mul(rate).RoundDown(2).StringFixed(2)
		res, err = w.oc.FillOrderWithResponse(ctx, tx, &operatorclient.FillOrderParams{IdempotencyKey: key},
			operatorclient.FillRequest{Rate: rate.StringFixed(2), FiatAmount: fiat, Reference: ref})
	case "settle":
		res, err = w.oc.SettleOrderWithResponse(ctx, tx, &operatorclient.SettleOrderParams{IdempotencyKey: key}, operatorclient.ReferenceRequest{Reference: ref})
	case "payout":
		res, err = w.oc.SettlePayoutWithResponse(ctx, tx, &operatorclient.SettlePayoutParams{IdempotencyKey: key}, operatorclient.ReferenceRequest{Reference: ref})
	case "fail":
		res, err = w.oc.FailTransactionWithResponse(ctx, tx, &operatorclient.FailTransactionParams{IdempotencyKey: key},
			operatorclient.FailRequest{Reason: "conformance check " + w.prefix})
	case "refund":
		res, err = w.oc.RefundTransactionWithResponse(ctx, tx, &operatorclient.RefundTransactionParams{IdempotencyKey: key},
			operatorclient.RefundRequest{TxHash: chainHash()})
	case "accept":
		res, err = w.oc.AcceptShortPaymentWithResponse(ctx, tx, &operatorclient.AcceptShortPaymentParams{IdempotencyKey: key},
			operatorclient.AcceptRequest{Reason: "conformance check " + w.prefix})
	default:
		panic("unknown action " + name)
	}
	ok, _ := w.expectAction(ctx, actionOps[name], res, err, want)
	if ok && want == 409 {
		w.o.note(actionOps[name], fmt.Sprintf("checked refused (409): the transaction, %s, does not allow %s on this deployment", d.Status, name))
	}
	return ok && want == 200
}

// operatorWalk takes the run's confirmed transaction tx to completed and paid
// out with the operator actions (the fill only where the deployment waits for
// one; else the fill is shown refused). It reports whether an action was held
// for a second operator, which leaves tx where it was.
func (w *walk) operatorWalk(ctx context.Context, tx uuid.UUID) (held bool) {
	before := w.holds
	w.action(ctx, tx, "fill")
	// A settlement held leaves tx unsettled: the payout is then checked as the
	// deployment answers it (refused, or held too).
	if w.action(ctx, tx, "settle") || w.holds > before {
		w.action(ctx, tx, "payout")
	}
	return w.holds > before
}

// shortPaths expires two transactions paid short: one is accepted as paid, the
// other's short refund task is resolved as refunded.
func (w *walk) shortPaths(ctx context.Context) {
	short := func(name string) *uuid.UUID {
		tx := w.create(ctx, name, client.CreateTransactionRequest{CryptoCurrency: "usdt", Network: "trc20", FiatAmount: ptr("15000")})
		if tx == nil || w.simulate(ctx, tx.Id, "deposit.detected", "5") == nil {
			return nil
		}
		after := w.simulate(ctx, tx.Id, "transaction.expired", "")
		if after == nil {
			return nil
		}
		if after.Status != "expired" || after.DepositStatus == nil || *after.DepositStatus != "underpaid" {
			w.p.problem("simulateSandboxEvent", fmt.Sprintf("a transaction paid short and expired is %s, deposit %v (expected expired, underpaid)", after.Status, after.DepositStatus))
			return nil
		}
		return &tx.Id
	}
	if tx := short("accepted"); tx != nil {
		w.action(ctx, *tx, "accept")
	}
	tx := short("short-refunded")
	if tx == nil {
		return
	}
	d := w.operatorTx(ctx, *tx)
	if d == nil {
		return
	}
	open := operatorclient.ListRefundTasksParamsStatus("open")
	tasks, err := w.oc.ListRefundTasksWithResponse(ctx, &operatorclient.ListRefundTasksParams{
		Kind: ptr(operatorclient.RefundTaskKind("short")), Status: &open, PartnerId: &d.PartnerId, Limit: ptr(100)})
	if !w.expect(w.o, "listRefundTasks", tasks, err, 200) {
		return
	}
	var task *uuid.UUID
	for _, t := range tasks.JSON200.Data.Data {
		if t.TransactionId != nil && *t.TransactionId == *tx {
			task = &t.Id
		}
	}
	if task == nil {
		w.o.problem("listRefundTasks", "no open short task for the run's transaction that expired paid short")
		return
	}
	hash := chainHash()
	res, err := w.oc.ResolveRefundTaskWithResponse(ctx, *task, &operatorclient.ResolveRefundTaskParams{IdempotencyKey: idemKey()},
		operatorclient.ResolveRequest{Action: "refunded", TxHash: &hash})
	w.expectAction(ctx, "resolveRefundTask", res, err, 200)
}

// batchPaths pays and confirms two transactions, fills them in one batch (where
// the deployment waits for fills; else the batch is shown refused), settles them
// with the simulator and pays them out in one batch.
func (w *walk) batchPaths(ctx context.Context) {
	var ids []uuid.UUID
	var details []*operatorclient.OperatorTransactionDetail
	for _, name := range []string{"batch-1", "batch-2"} {
		tx := w.create(ctx, name, client.CreateTransactionRequest{CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("16000")})
		if tx == nil || w.simulate(ctx, tx.Id, "deposit.detected", "") == nil || w.simulate(ctx, tx.Id, "deposit.confirmed", "") == nil {
			return
		}
		d := w.operatorTx(ctx, tx.Id)
		if d == nil {
			return
		}
		ids, details = append(ids, tx.Id), append(details, d)
	}
	want := 409
	if slices.Contains(details[0].AllowedActions, "fill") && slices.Contains(details[1].AllowedActions, "fill") {
		want = 200
	}
	fill, err := w.oc.CreateFillWithResponse(ctx, &operatorclient.CreateFillParams{IdempotencyKey: idemKey()},
		operatorclient.BatchFillRequest{TransactionIds: ids, Rate: details[0].Rate, Reference: w.prefix + "batch-fill"})
	switch ok, held := w.expectAction(ctx, "createFill", fill, err, want); {
	case held && want == 200:
		w.o.skip("createPayout", "the batch's fill was held for a second operator (the deployment's APPROVALS names fill), so its transactions could not be completed")
		return
	case !ok && !held:
		return
	case ok && want == 409:
		w.o.note("createFill", fmt.Sprintf("checked refused (409): the transactions, %s, await no fill on this deployment (its liquidity adapter fills by itself)", details[0].Status))
	}
	total := decimal.Zero
	for i, id := range ids {
		if after := w.simulate(ctx, id, "transaction.completed", ""); after == nil || after.Status != "completed" {
			w.o.skip("createPayout", "the batch's transactions could not be completed")
			return
		}
		total = total.Add(amountOf(details[i].Amount))
	}
	payout, err := w.oc.CreatePayoutWithResponse(ctx, &operatorclient.CreatePayoutParams{IdempotencyKey: idemKey()},
		operatorclient.PayoutRequest{PartnerId: details[0].PartnerId, TransactionIds: ids, Reference: w.prefix + "batch-payout", FiatAmount: total.StringFixed(2)})
	if ok, _ := w.expectAction(ctx, "createPayout", payout, err, 200); ok {
		w.payoutID = &payout.JSON200.Data.Id
	}
	list, err := w.oc.ListFillsWithResponse(ctx, &operatorclient.ListFillsParams{Limit: ptr(5)})
	w.expect(w.o, "listFills", list, err, 200)
}

// chainHash returns a random chain transaction hash (0x and 64 hex digits), for
// the refunds the run records.
func chainHash() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "0x" + hex.EncodeToString(b)
}
