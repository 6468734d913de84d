package operatorapi_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/lifecycle"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// uniqueHash is a fresh chain hash (each deposit its own, so a search by hash
// finds exactly one transaction).
func uniqueHash() string {
	return "0x" + strings.ReplaceAll(uuid.NewString()+uuid.NewString(), "-", "")
}

// detect records a deposit with hash h on transaction id; confirmed says whether it
// reaches its confirmations.
func detect(t *testing.T, env *apitest.Env, id uuid.UUID, h string, confirmed bool) {
	t.Helper()
	ctx := context.Background()
	_, err := env.App.Lifecycle().Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return env.App.Lifecycle().DetectDeposit(ctx, unit, id, lifecycle.DepositInput{ID: "dep_" + uuid.NewString(), Hash: h, Confirmations: 1})
	})
	require.NoError(t, err)
	if confirmed {
		_, err = env.App.Lifecycle().Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
			return env.App.Lifecycle().Confirm(ctx, unit, id, 15)
		})
		require.NoError(t, err)
	}
}

// completed brings a new transaction of fiat NGN to completed through the operator API.
func completed(t *testing.T, env *apitest.Env, pc *client.ClientWithResponses, ops *oc.ClientWithResponses, fiat string) client.Transaction {
	t.Helper()
	ctx := context.Background()
	tx := create(t, pc, "DONE-"+uuid.NewString(), fiat)
	allowed(t, ops, tx.Id)
	detect(t, env, tx.Id, uniqueHash(), true)
	allowed(t, ops, tx.Id, oc.OperatorActionFill, oc.OperatorActionFail)
	f, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: key()}, oc.FillRequest{Rate: "1549.10", FiatAmount: fiat, Reference: "LP-" + tx.MerchantReference})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, f.StatusCode(), string(f.Body))
	allowed(t, ops, tx.Id, oc.OperatorActionSettle, oc.OperatorActionFail)
	s, err := ops.SettleOrderWithResponse(ctx, tx.Id, &oc.SettleOrderParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "SETTLE-" + tx.MerchantReference})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, s.StatusCode(), string(s.Body))
	allowed(t, ops, tx.Id, oc.OperatorActionPayout)
	return tx
}

// allowed checks the transaction's allowed_actions are exactly want, and that an
// action not offered is refused without a change (the console shows only these).
func allowed(t *testing.T, ops *oc.ClientWithResponses, id uuid.UUID, want ...oc.OperatorAction) {
	t.Helper()
	ctx := context.Background()
	res, err := ops.GetOperatorTransactionWithResponse(ctx, id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	if want == nil {
		want = []oc.OperatorAction{}
	}
	require.Equal(t, want, res.JSON200.Data.AllowedActions)
	if !slices.Contains(want, oc.OperatorActionSettle) {
		r, err := ops.SettleOrderWithResponse(ctx, id, &oc.SettleOrderParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "NOT-OFFERED"})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, r.StatusCode(), "settle is not offered, so it is refused")
	}
}

func ids(page []oc.OperatorTransaction) []uuid.UUID {
	out := make([]uuid.UUID, len(page))
	for i, tx := range page {
		out[i] = tx.Id
	}
	return out
}

// A support ticket's reference (any case), deposit address, chain hash or
// transaction id finds the transaction across stages; order=oldest pages the
// queue oldest first.
func TestSearchAndOrder(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		ops := env.OperatorClient(t, env.NewOperator(t))
		var txs []client.Transaction
		hashes := map[uuid.UUID]string{}
		for i := 0; i < 3; i++ {
			tx := create(t, pc, "Ticket-Ref-"+uuid.NewString(), "5000.00")
			hashes[tx.Id] = uniqueHash()
			detect(t, env, tx.Id, hashes[tx.Id], true)
			txs = append(txs, tx)
		}
		waiting := create(t, pc, "Waiting-"+uuid.NewString(), "7000.00") // awaiting deposit: in no stage

		list := func(p oc.ListStageParams) []uuid.UUID {
			t.Helper()
			res, err := ops.ListStageWithResponse(ctx, &p)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			return ids(res.JSON200.Data.Data)
		}
		target := txs[1]
		for name, q := range map[string]string{
			"reference in other case": strings.ToUpper(target.MerchantReference),
			"deposit address":         target.DepositAddress,
			"chain hash, upper case":  "0x" + strings.ToUpper(strings.TrimPrefix(hashes[target.Id], "0x")),
			"transaction id":          target.Id.String(),
		} {
			require.Equal(t, []uuid.UUID{target.Id}, list(oc.ListStageParams{Q: ptr(q)}), name)
			require.Equal(t, []uuid.UUID{target.Id}, list(oc.ListStageParams{Q: ptr(q), Stage: ptr(oc.StageAwaitingFill)}), name+" in its stage")
			require.Empty(t, list(oc.ListStageParams{Q: ptr(q), Stage: ptr(oc.StageAwaitingPayout)}), name+" in another stage")
		}
		require.Empty(t, list(oc.ListStageParams{Q: ptr("no-such-reference")}))
		// Without a stage every transaction is listed, the one awaiting its deposit included.
		require.Equal(t, []uuid.UUID{waiting.Id, txs[2].Id, txs[1].Id, txs[0].Id}, list(oc.ListStageParams{}))

		// Oldest first, paged with the cursor.
		var got []uuid.UUID
		var cur *string
		for {
			res, err := ops.ListStageWithResponse(ctx, &oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill), Order: ptr(oc.Oldest), Limit: ptr(2), Cursor: cur})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			got = append(got, ids(res.JSON200.Data.Data)...)
			if cur = res.JSON200.Data.NextCursor; cur == nil {
				break
			}
		}
		require.Equal(t, []uuid.UUID{txs[0].Id, txs[1].Id, txs[2].Id}, got)
		require.Equal(t, []uuid.UUID{txs[2].Id, txs[1].Id, txs[0].Id}, list(oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill), Order: ptr(oc.Newest)}))

		// A cursor of one order is refused on the other.
		first, err := ops.ListStageWithResponse(ctx, &oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill), Order: ptr(oc.Oldest), Limit: ptr(1)})
		require.NoError(t, err)
		bad, err := ops.ListStageWithResponse(ctx, &oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill), Limit: ptr(1), Cursor: first.JSON200.Data.NextCursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, bad.StatusCode())
		require.Equal(t, oc.ErrorCodeInvalidCursor, bad.JSON400.Error.Code)
	})
}

// A deposit still confirming past CONFIRMING_TOO_LONG_AFTER is listed in
// confirming_too_long; a confirmed one is not.
func TestConfirmingTooLong(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "CONFIRMING_TOO_LONG_AFTER": "1ms"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		ops := env.OperatorClient(t, env.NewOperator(t))
		stuck := create(t, pc, "STUCK-"+uuid.NewString(), "5000.00")
		detect(t, env, stuck.Id, uniqueHash(), false)
		done := create(t, pc, "CONFIRMED-"+uuid.NewString(), "5000.00")
		detect(t, env, done.Id, uniqueHash(), true)
		require.Eventually(t, func() bool {
			return len(stage(t, ops, oc.StageConfirmingTooLong)) > 0
		}, 10*time.Second, 10*time.Millisecond)
		require.Equal(t, []uuid.UUID{stuck.Id}, stage(t, ops, oc.StageConfirmingTooLong))

		res, err := ops.GetOverviewWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		for _, s := range res.JSON200.Data.Stages {
			if s.Stage == oc.StageConfirmingTooLong {
				require.Equal(t, 1, s.Count)
				require.Equal(t, "5000.00", s.FiatAmount)
			}
		}
	})
}

// The overview counts and totals every stage, reports the chain watcher's
// networks and the refund work, and lists partners whose webhooks fail.
func TestOverview(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		ops := env.OperatorClient(t, env.NewOperator(t))
		want := map[oc.Stage][]client.Transaction{}
		for _, fiat := range []string{"5000.00", "12345.67"} {
			tx := create(t, pc, "FILL-"+uuid.NewString(), fiat)
			detect(t, env, tx.Id, uniqueHash(), true)
			want[oc.StageAwaitingFill] = append(want[oc.StageAwaitingFill], tx)
		}
		want[oc.StageAwaitingPayout] = []client.Transaction{completed(t, env, pc, ops, "20000.00")}
		failed := create(t, pc, "FAIL-"+uuid.NewString(), "3000.00")
		detect(t, env, failed.Id, uniqueHash(), true)
		fr, err := ops.FailTransactionWithResponse(ctx, failed.Id, &oc.FailTransactionParams{IdempotencyKey: key()}, oc.FailRequest{Reason: "LP rejected"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, fr.StatusCode())
		want[oc.StageFailed] = []client.Transaction{failed}

		res, err := ops.GetOverviewWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		o := res.JSON200.Data
		require.Len(t, o.Stages, 5)
		for _, s := range o.Stages {
			var fiat, crypto decimal.Decimal
			for _, tx := range want[s.Stage] {
				fiat = fiat.Add(decimal.RequireFromString(tx.Amount))
				crypto = crypto.Add(decimal.RequireFromString(tx.CryptoAmount))
			}
			require.Equal(t, len(want[s.Stage]), s.Count, s.Stage)
			require.Equal(t, fiat.StringFixed(2), s.FiatAmount, s.Stage)
			require.Equal(t, crypto.StringFixed(6), s.CryptoAmount, s.Stage)
		}
		require.Equal(t, 1, o.OpenRefundTasks, "the failed transaction")
		require.Equal(t, 0, o.OpenUnmatchedDeposits)
		require.Equal(t, oc.RefundWork{Failed: 1}, o.RefundWork)
		networks := map[string]oc.NetworkProgress{}
		for _, n := range o.Networks {
			networks[n.Network] = n
		}
		require.Contains(t, networks, "bep20")
		require.Contains(t, networks, "trc20")
		require.Nil(t, networks["bep20"].Lag, "no head recorded")
		require.Empty(t, o.FailingWebhooks)
	})
}

// The case file shows the deposit, fill, settlement and payout with the operator
// and reference of each; the audit log lists every action, and a refused one
// leaves no entry.
func TestCaseFileAndAudit(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		ops := env.OperatorClient(t, env.NewOperator(t))
		other := env.OperatorClient(t, env.NewOperator(t))
		tx := completed(t, env, pc, ops, "5000.00")
		p, err := ops.SettlePayoutWithResponse(ctx, tx.Id, &oc.SettlePayoutParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "NIP-1"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, p.StatusCode())
		again, err := other.SettlePayoutWithResponse(ctx, tx.Id, &oc.SettlePayoutParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "NIP-2"})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, again.StatusCode(), "refused: no audit entry")

		res, err := ops.GetOperatorTransactionWithResponse(ctx, tx.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		d := res.JSON200.Data
		require.Equal(t, oc.TransactionStatusCompleted, d.Status)
		require.Empty(t, d.AllowedActions, "completed and paid out: nothing left to do")
		require.Contains(t, d.PartnerName, "Test partner", "the partner's name beside its id")
		require.Len(t, d.Deposits, 1)
		require.Equal(t, *d.DepositHash, d.Deposits[0].TxHash)
		require.Nil(t, d.Deposits[0].FromAddress, "a deposit without a chain transfer has no known sender")
		require.NotNil(t, d.Fill)
		require.Equal(t, "LP-"+tx.MerchantReference, d.Fill.Reference)
		require.NotNil(t, d.Settlement)
		require.Equal(t, "SETTLE-"+tx.MerchantReference, *d.Settlement.Reference)
		require.NotNil(t, d.Payout)
		require.Equal(t, "NIP-1", *d.Payout.Reference)
		require.NotNil(t, d.Payout.PayoutId, "a single payout is a payout of one")
		require.Equal(t, "5000.00", *d.Payout.PayoutFiatAmount)
		opID := *d.Payout.OperatorId
		require.Equal(t, opID, *d.Settlement.OperatorId)
		var reasons []string
		for _, h := range d.History {
			reasons = append(reasons, h.Reason)
			switch h.Reason {
			case "transaction:created", "deposit:detected", "deposit:confirmed":
				require.Nil(t, h.OperatorId, h.Reason)
				require.Nil(t, h.OperatorName, h.Reason)
			default:
				require.Equal(t, opID, *h.OperatorId, h.Reason)
				require.NotNil(t, h.Reference, h.Reason)
				require.NotNil(t, h.OperatorName, h.Reason)
				require.Contains(t, *h.OperatorName, "Test operator", "the operator's name beside the id")
			}
		}
		require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled", "order:settled", "payout:settled"}, reasons)

		au, err := ops.ListAuditWithResponse(ctx, &oc.ListAuditParams{TransactionId: &tx.Id})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, au.StatusCode(), string(au.Body))
		var actions []oc.AuditAction
		for _, e := range au.JSON200.Data.Data {
			actions = append(actions, e.Action)
			require.Equal(t, opID, e.OperatorId)
			require.Contains(t, e.OperatorName, "Test operator")
			require.Equal(t, d.PartnerId, *e.PartnerId, "the transaction's partner")
			require.Equal(t, d.PartnerName, *e.PartnerName)
			require.Nil(t, e.SubjectName)
		}
		require.Equal(t, []oc.AuditAction{oc.AuditAction("payout"), oc.AuditAction("settle"), oc.AuditAction("fill")}, actions, "newest first, the refusal absent")
		byAction, err := ops.ListAuditWithResponse(ctx, &oc.ListAuditParams{Action: ptr(oc.AuditAction("settle")), Limit: ptr(1)})
		require.NoError(t, err)
		require.Len(t, byAction.JSON200.Data.Data, 1)
		require.Equal(t, "SETTLE-"+tx.MerchantReference, *byAction.JSON200.Data.Data[0].Reference)
		none, err := ops.ListAuditWithResponse(ctx, &oc.ListAuditParams{OperatorId: ptr(uuid.New())})
		require.NoError(t, err)
		require.Empty(t, none.JSON200.Data.Data)

		nf, err := ops.GetOperatorTransactionWithResponse(ctx, uuid.New())
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, nf.StatusCode())
	})
}

// One bank transfer pays a partner for three transactions: refused whole when the
// amount is not their sum, when one belongs to another partner or is not awaiting
// payout; recorded once with each transaction's payout:settled and event.
func TestBatchPayout(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		keyA := env.NewPartner(t)
		pa, pb := env.Client(t, keyA), env.Client(t, env.NewPartner(t))
		partnerA := env.PartnerID(t, keyA)
		ops := env.OperatorClient(t, env.NewOperator(t))
		var batch []uuid.UUID
		for _, fiat := range []string{"5000.00", "7500.50", "10000.25"} {
			batch = append(batch, completed(t, env, pa, ops, fiat).Id)
		}
		foreign := completed(t, env, pb, ops, "1000.00")
		notYet := create(t, pa, "OPEN-"+uuid.NewString(), "1000.00")

		refuse := func(what string, req oc.PayoutRequest, status int) *oc.CreatePayoutResponse {
			t.Helper()
			before := stage(t, ops, oc.StageAwaitingPayout)
			res, err := ops.CreatePayoutWithResponse(ctx, &oc.CreatePayoutParams{IdempotencyKey: key()}, req)
			require.NoError(t, err)
			require.Equal(t, status, res.StatusCode(), "%s: %s", what, res.Body)
			require.Equal(t, before, stage(t, ops, oc.StageAwaitingPayout), "%s changed nothing", what)
			return res
		}
		require.Len(t, stage(t, ops, oc.StageAwaitingPayout), 4)
		wrong := refuse("wrong amount", oc.PayoutRequest{PartnerId: partnerA, TransactionIds: batch, Reference: "NIP-X", FiatAmount: "22500.00"}, http.StatusConflict)
		require.Equal(t, oc.ErrorCodeInvalidStateTransition, wrong.JSON409.Error.Code)
		require.Equal(t, "/fiat_amount", wrong.JSON409.Error.Details[0].Field)
		require.Contains(t, wrong.JSON409.Message, "22500.75")
		other := refuse("another partner's", oc.PayoutRequest{PartnerId: partnerA, TransactionIds: append(append([]uuid.UUID{}, batch...), foreign.Id), Reference: "NIP-X", FiatAmount: "23500.75"}, http.StatusConflict)
		require.Equal(t, "/transaction_ids/3", other.JSON409.Error.Details[0].Field)
		refuse("not awaiting payout", oc.PayoutRequest{PartnerId: partnerA, TransactionIds: append(append([]uuid.UUID{}, batch...), notYet.Id), Reference: "NIP-X", FiatAmount: "23500.75"}, http.StatusConflict)
		refuse("unknown", oc.PayoutRequest{PartnerId: partnerA, TransactionIds: []uuid.UUID{batch[0], uuid.New()}, Reference: "NIP-X", FiatAmount: "5000.00"}, http.StatusNotFound)

		k := key()
		req := oc.PayoutRequest{PartnerId: partnerA, TransactionIds: batch, Reference: "NIP-000013261123101500000001", FiatAmount: "22500.75"}
		res, err := ops.CreatePayoutWithResponse(ctx, &oc.CreatePayoutParams{IdempotencyKey: k}, req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		b := res.JSON200.Data
		require.Equal(t, oc.BatchKindPayout, b.Kind)
		require.Equal(t, batch, b.TransactionIds)
		require.Equal(t, "22500.75", b.FiatAmount)
		replay, err := ops.CreatePayoutWithResponse(ctx, &oc.CreatePayoutParams{IdempotencyKey: k}, req)
		require.NoError(t, err)
		require.Equal(t, "true", replay.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, []uuid.UUID{foreign.Id}, stage(t, ops, oc.StageAwaitingPayout))

		for _, id := range batch {
			require.Contains(t, reasons(partnerHistory(t, pa, id)), "payout:settled")
			require.Contains(t, eventTypes(t, env, id), "payout.settled")
			d, err := ops.GetOperatorTransactionWithResponse(ctx, id)
			require.NoError(t, err)
			require.Equal(t, b.Id, *d.JSON200.Data.Payout.PayoutId)
			require.Equal(t, "22500.75", *d.JSON200.Data.Payout.PayoutFiatAmount)
			require.Equal(t, req.Reference, *d.JSON200.Data.Payout.Reference)

			// The partner's payout.settled event carries the bank transfer: the batch's
			// id, reference and total.
			payout := payoutSettled(t, pa, id)
			require.Equal(t, b.Id, *payout.PayoutId)
			require.Equal(t, req.Reference, *payout.Reference)
			require.Equal(t, "22500.75", payout.Amount)
		}
		again := refuse("paid already", req, http.StatusConflict)
		require.Contains(t, again.JSON409.Message, "not awaiting payout")

		list, err := ops.ListPayoutsWithResponse(ctx, &oc.ListPayoutsParams{PartnerId: &partnerA})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
		require.Len(t, list.JSON200.Data.Data, 1)
		require.Equal(t, b.Id, list.JSON200.Data.Data[0].Id)
		au, err := ops.ListAuditWithResponse(ctx, &oc.ListAuditParams{Action: ptr(oc.AuditAction("batch_payout"))})
		require.NoError(t, err)
		require.Len(t, au.JSON200.Data.Data, 3, "one entry per transaction")
	})
}

// One liquidity order fills several confirmed deposits at one rate; each fill's NGN
// is its tokens × rate, the batch's their sum; a transaction not awaiting its fill
// refuses the whole batch.
func TestBatchFill(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		ops := env.OperatorClient(t, env.NewOperator(t))
		var txs []client.Transaction
		for _, fiat := range []string{"5000.00", "7777.77"} {
			tx := create(t, pc, "BF-"+uuid.NewString(), fiat)
			detect(t, env, tx.Id, uniqueHash(), true)
			txs = append(txs, tx)
		}
		unconfirmed := create(t, pc, "BF-"+uuid.NewString(), "1000.00")
		detect(t, env, unconfirmed.Id, uniqueHash(), false)

		bad, err := ops.CreateFillWithResponse(ctx, &oc.CreateFillParams{IdempotencyKey: key()},
			oc.BatchFillRequest{TransactionIds: []uuid.UUID{txs[0].Id, unconfirmed.Id}, Rate: "1549.10", Reference: "LP-1"})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, bad.StatusCode(), string(bad.Body))
		require.Equal(t, "/transaction_ids/1", bad.JSON409.Error.Details[0].Field)
		require.ElementsMatch(t, []uuid.UUID{txs[0].Id, txs[1].Id}, stage(t, ops, oc.StageAwaitingFill), "nothing filled")

		res, err := ops.CreateFillWithResponse(ctx, &oc.CreateFillParams{IdempotencyKey: key()},
			oc.BatchFillRequest{TransactionIds: []uuid.UUID{txs[0].Id, txs[1].Id}, Rate: "1549.10", Reference: "LP-ORDER-88123"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		var sum decimal.Decimal
		rate := decimal.RequireFromString("1549.10")
		for _, tx := range txs {
			d, err := ops.GetOperatorTransactionWithResponse(ctx, tx.Id)
			require.NoError(t, err)
			require.Equal(t, oc.TransactionStatusOrderFilled, d.JSON200.Data.Status)
			f := d.JSON200.Data.Fill
			want := decimal.RequireFromString(*d.JSON200.Data.DepositAmount).Mul(rate).Round(2)
			require.Equal(t, want.StringFixed(2), f.FiatAmount)
			require.Equal(t, "LP-ORDER-88123", f.Reference)
			sum = sum.Add(want)
		}
		require.Equal(t, sum.StringFixed(2), res.JSON200.Data.FiatAmount)
		require.Equal(t, "1549.10", *res.JSON200.Data.Rate)
		list, err := ops.ListFillsWithResponse(ctx, &oc.ListFillsParams{})
		require.NoError(t, err)
		require.Len(t, list.JSON200.Data.Data, 1)
		require.ElementsMatch(t, []uuid.UUID{txs[0].Id, txs[1].Id}, stage(t, ops, oc.StageAwaitingSettlement))
	})
}

// A deposit paid in two simulated transfers (10 USDT, then what was still due) is
// two rows in the operator's case file, as in the partner API, not one of the total.
func TestCaseFileListsEachTransfer(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		ops := env.OperatorClient(t, env.NewOperator(t))
		tx := create(t, pc, "SPLIT-"+uuid.NewString(), "50000.00")
		for _, amount := range []*string{ptr("10"), nil} {
			res, err := pc.SimulateSandboxEventWithResponse(ctx, &client.SimulateSandboxEventParams{},
				client.SimulateRequest{Event: client.SimulateRequestEventDepositDetected, TransactionId: tx.Id, Amount: amount})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		}
		partner, err := pc.GetTransactionWithResponse(ctx, tx.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, partner.StatusCode(), string(partner.Body))
		want := partner.JSON200.Data.Deposits
		require.Len(t, want, 2)
		require.Equal(t, "10.000000", want[0].Amount)

		res, err := ops.GetOperatorTransactionWithResponse(ctx, tx.Id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		got := res.JSON200.Data.Deposits
		require.Len(t, got, 2, "one row per transfer")
		for i := range want {
			require.Equal(t, want[i].TxHash, got[i].TxHash)
			require.Equal(t, want[i].Amount, got[i].Amount)
			require.Equal(t, want[i].LogIndex, *got[i].LogIndex)
			state := "pending"
			if want[i].ConfirmedAt != nil {
				state = "confirmed"
			}
			require.Equal(t, state, got[i].State)
			require.NotNil(t, got[i].FromAddress, "the simulator's sender")
			require.Nil(t, got[i].BlockNumber, "no block without a chain transfer")
		}
	})
}
