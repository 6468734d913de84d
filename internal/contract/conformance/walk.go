package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/gen/client"
	"partnerd/gen/operatorclient"
)

// walk is one run's sequence of calls: each transaction it creates is walked
// through a path of the lifecycle, and every operation is called at least once
// where the deployment allows it.
type walk struct {
	cfg     Config
	prefix  string
	p, o    *recorder
	pc      *client.ClientWithResponses
	oc      *operatorclient.ClientWithResponses // nil without an operator key
	started time.Time
	// self is the operator key's operator, when it was found.
	self *operatorclient.Operator
	// holds counts the actions held for a second operator (202), each
	// withdrawn; withdrew is whether a withdrawal checked four eyes' refusals.
	holds    int
	withdrew bool
	// partnerID is the key's partner, learnt from the operator API.
	partnerID *uuid.UUID
	// payoutID is the batch payout the run recorded, when it could.
	payoutID *uuid.UUID
}

// answer is what every generated response has.
type answer interface{ StatusCode() int }

// expect reports whether op answered one of want; anything else (a failed
// request included) is recorded as a problem of op.
func (w *walk) expect(rec *recorder, op string, res answer, err error, want ...int) bool {
	if err != nil {
		rec.problem(op, "request failed: "+err.Error())
		return false
	}
	if !slices.Contains(want, res.StatusCode()) {
		rec.problem(op, fmt.Sprintf("expected status %s, got %d%s", statuses(want), res.StatusCode(), rec.lastError(op)))
		return false
	}
	return true
}

func idemKey() string     { return uuid.NewString() }
func idemKeyPtr() *string { k := idemKey(); return &k }
func ptr[T any](v T) *T   { return &v }

// Operations the check never calls, with why.
var (
	accountsReason = "changes partner or operator accounts and keys; the check changes only its own sandbox transactions"
	neverCalled    = map[string]map[string]string{
		"operator": {
			"createPartner":           accountsReason,
			"createPartnerKey":        accountsReason,
			"rollPartnerKey":          accountsReason,
			"revokePartnerKey":        accountsReason,
			"createOperator":          accountsReason,
			"createOperatorKey":       accountsReason,
			"rollOperatorKey":         accountsReason,
			"revokeOperatorKey":       accountsReason,
			"invitePartnerUser":       accountsReason,
			"resendWebhookBacklog":    "sends the partner's waiting webhook events to its receiver at once, which is an operator's call to make, not a check's",
			"putSettlementAccount":    "changes where a partner's payouts go",
			"resolveUnmatchedDeposit": "needs an unmatched transfer seen on a real chain (the simulator cannot make one), and the check touches no deposit it did not make",
		},
	}
)

func (w *walk) run(ctx context.Context) {
	if w.oc != nil {
		for op, reason := range neverCalled["operator"] {
			w.o.skip(op, reason)
		}
	}
	w.webhookEndpoint(ctx)
	if w.oc != nil {
		w.operatorReads(ctx)
		w.fourEyes(ctx)
		w.operatorRoles(ctx)
	}
	if happy := w.happyPath(ctx); happy != nil {
		w.webhookEvents(ctx, *happy)
		if w.oc != nil {
			w.operatorReadsOf(ctx, *happy)
		}
	}
	w.cancelPath(ctx)
	w.failPath(ctx)
	w.decisionPaths(ctx)
	w.rescan(ctx)
	if w.oc != nil {
		w.shortPaths(ctx)
		w.batchPaths(ctx)
	} else {
		w.expirePath(ctx)
	}
	w.revenue(ctx)
	w.payouts(ctx)
}

// webhookEndpoint reads the partner's endpoint; with IncludeWebhooks it puts it
// back as found, and with RotateWebhookSecret it rotates the secret.
func (w *walk) webhookEndpoint(ctx context.Context) {
	res, err := w.pc.GetWebhookEndpointWithResponse(ctx)
	if !w.expect(w.p, "getWebhookEndpoint", res, err, 200, 404) {
		w.p.skip("putWebhookEndpoint", "the endpoint could not be read, so it could not be restored")
		w.p.skip("rotateWebhookSecret", "the endpoint could not be read")
		w.p.skip("sendTestWebhookEvent", "the endpoint could not be read")
		return
	}
	if !w.cfg.IncludeWebhooks {
		w.p.skip("putWebhookEndpoint", "changes the partner's webhook endpoint: pass --include-webhooks (it puts the endpoint back as found)")
		w.p.skip("sendTestWebhookEvent", "sends a test event to the partner's receiver: pass --include-webhooks")
	}
	if !w.cfg.RotateWebhookSecret {
		w.p.skip("rotateWebhookSecret", "rotates the partner's signing secret, which cannot be undone: pass --rotate-webhook-secret")
	}
	if res.StatusCode() == 404 {
		reason := "the partner has no webhook endpoint, and registering one could not be undone (the API has no delete)"
		if w.cfg.IncludeWebhooks {
			w.p.skip("putWebhookEndpoint", reason)
			w.p.skip("sendTestWebhookEvent", reason)
		}
		if w.cfg.RotateWebhookSecret {
			w.p.skip("rotateWebhookSecret", reason)
		}
		return
	}
	found := res.JSON200.Data
	if w.cfg.IncludeWebhooks {
		put, err := w.pc.PutWebhookEndpointWithResponse(ctx, &client.PutWebhookEndpointParams{IdempotencyKey: idemKeyPtr()},
			client.WebhookEndpointRequest{Url: found.Url, Enabled: found.Enabled})
		if w.expect(w.p, "putWebhookEndpoint", put, err, 200) &&
			(put.JSON200.Data.Url != found.Url || put.JSON200.Data.Enabled != found.Enabled ||
				!slices.Equal(put.JSON200.Data.EnabledEvents, found.EnabledEvents)) {
			w.p.problem("putWebhookEndpoint", "the endpoint answered is not the one put back")
		}
	}
	if w.cfg.IncludeWebhooks {
		w.sendTestEvent(ctx)
	}
	if w.cfg.RotateWebhookSecret {
		rot, err := w.pc.RotateWebhookSecretWithResponse(ctx, &client.RotateWebhookSecretParams{IdempotencyKey: idemKeyPtr()})
		if w.expect(w.p, "rotateWebhookSecret", rot, err, 200) {
			if rot.JSON200.Data.SigningSecret == nil {
				w.p.problem("rotateWebhookSecret", "no signing_secret in the answer")
			} else if w.cfg.OnNewSecret != nil {
				w.cfg.OnNewSecret(*rot.JSON200.Data.SigningSecret)
			}
		}
	}
}

// sendTestEvent emits a test event (which a receiver acknowledges and ignores)
// and reads it back from the event log.
func (w *walk) sendTestEvent(ctx context.Context) {
	sent, err := w.pc.SendTestWebhookEventWithResponse(ctx, &client.SendTestWebhookEventParams{IdempotencyKey: idemKey()})
	if !w.expect(w.p, "sendTestWebhookEvent", sent, err, 202) {
		return
	}
	if !sent.JSON202.Data.Test || sent.JSON202.Data.AggregateId != uuid.Nil {
		w.p.problem("sendTestWebhookEvent", "the event answered is not marked as a test of no transaction")
	}
	got, err := w.pc.GetWebhookEventWithResponse(ctx, sent.JSON202.Data.EventId)
	if w.expect(w.p, "getWebhookEvent", got, err, 200) && !got.JSON200.Data.Test {
		w.p.problem("getWebhookEvent", "the test event is not marked as a test in the event log")
	}
}

// create creates a transaction of the run (its merchant reference starts with
// the run's prefix) and retries once with the same key, which must replay it.
func (w *walk) create(ctx context.Context, name string, req client.CreateTransactionRequest) *client.Transaction {
	req.MerchantReference = w.prefix + name
	params := &client.CreateTransactionParams{IdempotencyKey: idemKey()}
	res, err := w.pc.CreateTransactionWithResponse(ctx, params, req)
	if !w.expect(w.p, "createTransaction", res, err, 201) {
		return nil
	}
	replay, err := w.pc.CreateTransactionWithResponse(ctx, params, req)
	if w.expect(w.p, "createTransaction", replay, err, 201) && replay.JSON201.Data.Id != res.JSON201.Data.Id {
		w.p.problem("createTransaction", "a retry with the same Idempotency-Key created another transaction")
	}
	return &res.JSON201.Data
}

// simulate sends a simulator event for tx and returns the transaction after it.
func (w *walk) simulate(ctx context.Context, tx uuid.UUID, event client.SimulateRequestEvent, amount string) *client.TransactionDetail {
	req := client.SimulateRequest{Event: event, TransactionId: tx}
	if amount != "" {
		req.Amount = &amount
	}
	res, err := w.pc.SimulateSandboxEventWithResponse(ctx, &client.SimulateSandboxEventParams{IdempotencyKey: idemKeyPtr()}, req)
	if !w.expect(w.p, "simulateSandboxEvent", res, err, 200) {
		return nil
	}
	return &res.JSON200.Data
}

// searchBy lists transactions with one search filter (named filter), which
// must find exactly tx.
func (w *walk) searchBy(ctx context.Context, tx uuid.UUID, filter string, p client.ListTransactionsParams) {
	p.Limit = ptr(5)
	list, err := w.pc.ListTransactionsWithResponse(ctx, &p)
	if w.expect(w.p, "listTransactions", list, err, 200) &&
		(len(list.JSON200.Data.Data) != 1 || list.JSON200.Data.Data[0].Id != tx) {
		w.p.problem("listTransactions", "the "+filter+" filter did not list exactly the run's transaction")
	}
}

// get reads tx through the partner API.
func (w *walk) get(ctx context.Context, tx uuid.UUID) *client.TransactionDetail {
	res, err := w.pc.GetTransactionWithResponse(ctx, tx)
	if !w.expect(w.p, "getTransaction", res, err, 200) {
		return nil
	}
	return &res.JSON200.Data
}

// happyPath prices and creates a transaction from a quote, reads it every way,
// pays and confirms it with the simulator, and takes it to completed and paid
// out: by the operator actions given an operator key, else by the simulator.
func (w *walk) happyPath(ctx context.Context) *uuid.UUID {
	q, err := w.pc.CreateQuoteWithResponse(ctx, &client.CreateQuoteParams{IdempotencyKey: idemKeyPtr()},
		client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("12.5")})
	if !w.expect(w.p, "createQuote", q, err, 201) {
		return nil
	}
	tx := w.create(ctx, "completed", client.CreateTransactionRequest{CryptoCurrency: "usdt", Network: "bep20", QuoteId: &q.JSON201.Data.QuoteId})
	if tx == nil {
		return nil
	}
	ref := tx.MerchantReference
	byRef, err := w.pc.GetTransactionByReferenceWithResponse(ctx, strings.ToLower(ref))
	if w.expect(w.p, "getTransactionByReference", byRef, err, 200) && byRef.JSON200.Data.Id != tx.Id {
		w.p.problem("getTransactionByReference", "answered another transaction than the one with that reference")
	}
	list, err := w.pc.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{MerchantReference: &ref, Limit: ptr(5)})
	if w.expect(w.p, "listTransactions", list, err, 200) &&
		(len(list.JSON200.Data.Data) != 1 || list.JSON200.Data.Data[0].Id != tx.Id) {
		w.p.problem("listTransactions", "the merchant_reference filter did not list exactly the run's transaction")
	}
	list, err = w.pc.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{Limit: ptr(3), From: &w.started})
	w.expect(w.p, "listTransactions", list, err, 200)
	w.searchBy(ctx, tx.Id, "deposit_address", client.ListTransactionsParams{DepositAddress: ptr(strings.ToLower(tx.DepositAddress))})

	detected := w.simulate(ctx, tx.Id, "deposit.detected", "")
	if detected == nil {
		return &tx.Id
	}
	if detected.DepositTxHash != nil {
		w.searchBy(ctx, tx.Id, "tx_hash", client.ListTransactionsParams{TxHash: detected.DepositTxHash})
	}
	after := w.simulate(ctx, tx.Id, "deposit.confirmed", "")
	if after == nil {
		return &tx.Id
	}
	want := client.TransactionStatus("completed")
	switch {
	case w.oc != nil:
		if held := w.operatorWalk(ctx, tx.Id); held {
			// An action was held for a second operator (and withdrawn): the
			// transaction stays where the hold found it.
			want = ""
		}
	case after.Status == "order_filled":
		if after = w.simulate(ctx, tx.Id, "transaction.completed", ""); after != nil && after.Status == "completed" {
			w.simulate(ctx, tx.Id, "payout.settled", "")
		}
	default:
		// The deployment's back office fills sales itself (LIQUIDITY=operator):
		// without an operator key the walk ends at the confirmed deposit.
		want = after.Status
		w.p.note("simulateSandboxEvent", "the deployment waits for its back office to fill a confirmed deposit: without --operator-key the walk stops there")
	}
	hist, err := w.pc.GetTransactionStatusHistoryWithResponse(ctx, tx.Id)
	if w.expect(w.p, "getTransactionStatusHistory", hist, err, 200) && len(hist.JSON200.Data.History) < 3 {
		w.p.problem("getTransactionStatusHistory", fmt.Sprintf("%d history entries after creation, deposit and confirmation", len(hist.JSON200.Data.History)))
	}
	if final := w.get(ctx, tx.Id); final != nil && want != "" && final.Status != want {
		w.p.problem("getTransaction", fmt.Sprintf("the walked transaction is %s, not %s", final.Status, want))
	}
	return &tx.Id
}

// cancelPath creates a transaction priced from an NGN amount on Tron and cancels it.
func (w *walk) cancelPath(ctx context.Context) {
	tx := w.create(ctx, "cancelled", client.CreateTransactionRequest{CryptoCurrency: "usdt", Network: "trc20", FiatAmount: ptr("20000")})
	if tx == nil {
		return
	}
	res, err := w.pc.CancelTransactionWithResponse(ctx, tx.Id, &client.CancelTransactionParams{IdempotencyKey: idemKey()})
	if w.expect(w.p, "cancelTransaction", res, err, 200) && res.JSON200.Data.Status != "cancelled" {
		w.p.problem("cancelTransaction", "the transaction is "+string(res.JSON200.Data.Status)+" after cancel")
	}
	// Cancelling again is refused as the state machine says, and must conform too.
	res, err = w.pc.CancelTransactionWithResponse(ctx, tx.Id, &client.CancelTransactionParams{IdempotencyKey: idemKey()})
	w.expect(w.p, "cancelTransaction", res, err, 409)
}

// failPath pays a transaction, fails it and refunds its deposit: by the operator
// actions given an operator key, else by the simulator.
func (w *walk) failPath(ctx context.Context) {
	tx := w.create(ctx, "refunded", client.CreateTransactionRequest{CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("15000")})
	if tx == nil || w.simulate(ctx, tx.Id, "deposit.detected", "") == nil {
		return
	}
	if w.oc != nil {
		if w.action(ctx, tx.Id, "fail") {
			w.action(ctx, tx.Id, "refund")
		}
		return
	}
	if w.simulate(ctx, tx.Id, "transaction.failed", "") != nil {
		w.simulate(ctx, tx.Id, "transaction.refunded", "")
	}
}

// decisionPaths expires two transactions paid short with the simulator: the
// partner accepts one and asks for the other's refund to the address it gave on
// create; deciding again is refused (409).
func (w *walk) decisionPaths(ctx context.Context) {
	short := func(name string, refundTo *string) *uuid.UUID {
		tx := w.create(ctx, name, client.CreateTransactionRequest{CryptoCurrency: "usdt", Network: "bep20", FiatAmount: ptr("15000"), RefundAddress: refundTo})
		if tx == nil || w.simulate(ctx, tx.Id, "deposit.detected", "5") == nil {
			return nil
		}
		after := w.simulate(ctx, tx.Id, "transaction.expired", "")
		if after == nil {
			return nil
		}
		if after.ActionRequired == nil || !*after.ActionRequired {
			w.p.problem("simulateSandboxEvent", "a transaction paid short and expired does not say action_required")
			return nil
		}
		return &tx.Id
	}
	if tx := short("partner-accepted", nil); tx != nil {
		res, err := w.pc.AcceptTransactionWithResponse(ctx, *tx, &client.AcceptTransactionParams{IdempotencyKey: idemKey()})
		if w.expect(w.p, "acceptTransaction", res, err, 200) && res.JSON200.Data.Status != "deposit_confirming" {
			w.p.problem("acceptTransaction", "the accepted transaction is "+string(res.JSON200.Data.Status))
		}
		res, err = w.pc.AcceptTransactionWithResponse(ctx, *tx, &client.AcceptTransactionParams{IdempotencyKey: idemKey()})
		w.expect(w.p, "acceptTransaction", res, err, 409)
	}
	if tx := short("partner-refunded", ptr("0x8576acc5c05d6ce88f4e49bf65bdf0c62f91353c")); tx != nil {
		res, err := w.pc.RefundTransactionWithResponse(ctx, *tx, &client.RefundTransactionParams{IdempotencyKey: idemKey()}, client.RefundRequest{})
		if w.expect(w.p, "refundTransaction", res, err, 200) && res.JSON200.Data.RefundRequestedAt == nil {
			w.p.problem("refundTransaction", "the refund request is not recorded (refund_requested_at null)")
		}
		res, err = w.pc.RefundTransactionWithResponse(ctx, *tx, &client.RefundTransactionParams{IdempotencyKey: idemKey()}, client.RefundRequest{})
		w.expect(w.p, "refundTransaction", res, err, 409)
	}
}

// rescan asks for a chain transaction nobody made: not found (200), or 503 where
// the deployment reads no chain for the network.
func (w *walk) rescan(ctx context.Context) {
	res, err := w.pc.RescanDepositWithResponse(ctx, &client.RescanDepositParams{},
		client.RescanRequest{Network: "bep20", TxHash: chainHash()})
	if w.expect(w.p, "rescanDeposit", res, err, 200, 503) && res.StatusCode() == 200 && res.JSON200.Data.Result != "not_found" {
		w.p.problem("rescanDeposit", "a made-up transaction hash is "+string(res.JSON200.Data.Result)+", not not_found")
	}
}

// expirePath (without an operator key) expires a transaction with the simulator.
func (w *walk) expirePath(ctx context.Context) {
	tx := w.create(ctx, "expired", client.CreateTransactionRequest{CryptoCurrency: "usdt", Network: "trc20", FiatAmount: ptr("15000")})
	if tx == nil {
		return
	}
	if after := w.simulate(ctx, tx.Id, "transaction.expired", ""); after != nil && after.Status != "expired" {
		w.p.problem("simulateSandboxEvent", "transaction.expired left the transaction "+string(after.Status))
	}
}

// webhookEvents lists the events of the run's transaction, reads one and replays it.
func (w *walk) webhookEvents(ctx context.Context, tx uuid.UUID) {
	res, err := w.pc.ListWebhookEventsWithResponse(ctx, &client.ListWebhookEventsParams{TransactionId: &tx})
	if !w.expect(w.p, "listWebhookEvents", res, err, 200) {
		return
	}
	if len(res.JSON200.Data.Data) == 0 {
		w.p.problem("listWebhookEvents", "no event for the run's transaction (transaction.created at least is due)")
		return
	}
	ev := res.JSON200.Data.Data[0].EventId
	got, err := w.pc.GetWebhookEventWithResponse(ctx, ev)
	w.expect(w.p, "getWebhookEvent", got, err, 200)
	replay, err := w.pc.ReplayWebhookEventWithResponse(ctx, ev, &client.ReplayWebhookEventParams{IdempotencyKey: idemKeyPtr()})
	w.expect(w.p, "replayWebhookEvent", replay, err, 202)
}

// revenue reads the partner's revenue since the run started, with the summary.
func (w *walk) revenue(ctx context.Context) {
	res, err := w.pc.ListRevenueWithResponse(ctx, &client.ListRevenueParams{From: &w.started, IncludeSummary: ptr(true), Limit: ptr(5)})
	w.expect(w.p, "listRevenue", res, err, 200)
}

// payouts lists the partner's payouts, reads its balance, and exports its transactions and payouts
// since the run started, and reads the payout the run recorded (without one, an
// unknown id, which must be the declared 404).
func (w *walk) payouts(ctx context.Context) {
	list, err := w.pc.ListPayoutsWithResponse(ctx, &client.ListPayoutsParams{From: &w.started, Limit: ptr(5)})
	w.expect(w.p, "listPayouts", list, err, 200)
	balance, err := w.pc.GetBalanceWithResponse(ctx)
	w.expect(w.p, "getBalance", balance, err, 200)
	if w.payoutID != nil {
		one, err := w.pc.GetPayoutWithResponse(ctx, *w.payoutID)
		w.expect(w.p, "getPayout", one, err, 200)
	} else {
		one, err := w.pc.GetPayoutWithResponse(ctx, uuid.New())
		if w.expect(w.p, "getPayout", one, err, 404) {
			w.p.note("getPayout", "checked with an unknown id (404): the run recorded no payout (it needs --operator-key, on a deployment not holding payouts for a second operator)")
		}
	}
	txs, err := w.pc.ExportTransactionsWithResponse(ctx, &client.ExportTransactionsParams{From: &w.started})
	w.expect(w.p, "exportTransactions", txs, err, 200)
	pays, err := w.pc.ExportPayoutsWithResponse(ctx, &client.ExportPayoutsParams{From: &w.started})
	w.expect(w.p, "exportPayouts", pays, err, 200)
}

// amountOf returns the NGN amount of a decimal string, for sums.
func amountOf(s string) decimal.Decimal {
	d, _ := decimal.NewFromString(s)
	return d
}
