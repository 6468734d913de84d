package operatorapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	oc "partnerd/gen/operatorclient"
	"partnerd/internal/lifecycle"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// Operator keys and partner keys are refused on each other's API.
func TestKeysAreSeparate(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, nil)
		ctx := context.Background()
		partnerKey, opKey := env.NewPartner(t), env.NewOperator(t)
		require.True(t, strings.HasPrefix(opKey, "sk_op_"))

		for name, k := range map[string]string{"partner key": partnerKey, "no key": "", "unknown operator key": "sk_op_" + strings.Repeat("A", 43)} {
			res, err := env.OperatorClient(t, k).ListStageWithResponse(ctx, &oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill)})
			require.NoError(t, err)
			require.Equal(t, http.StatusUnauthorized, res.StatusCode(), name)
			require.Equal(t, oc.ErrorCodeUnauthorized, res.JSON401.Error.Code)
			fill, err := env.OperatorClient(t, k).FillOrderWithResponse(ctx, uuid.New(), &oc.FillOrderParams{IdempotencyKey: key()},
				oc.FillRequest{Rate: "1.00", FiatAmount: "1.00", Reference: "x"})
			require.NoError(t, err)
			require.Equal(t, http.StatusUnauthorized, fill.StatusCode(), name)
		}
		res, err := env.Client(t, opKey).ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{})
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode(), "an operator key on the partner API")

		ok, err := env.OperatorClient(t, opKey).ListStageWithResponse(ctx, &oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, ok.StatusCode())
		require.Equal(t, "no-store", ok.HTTPResponse.Header.Get("Cache-Control"))

		// Unknown routes and methods under the operator base path: 404 and 405 in the error body.
		hc := env.OperatorHTTPClient(t)
		for path, want := range map[string]int{"/nope": http.StatusNotFound, "/transactions/" + uuid.NewString() + "/fill": http.StatusMethodNotAllowed} {
			r, err := hc.Get(env.OperatorURL() + path)
			require.NoError(t, err)
			_ = r.Body.Close()
			require.Equal(t, want, r.StatusCode, path)
		}

		// The operator reference has its own page and contract.
		for path, ct := range map[string]string{"/operator-docs": "text/html", "/operator.yaml": "application/yaml"} {
			r, err := http.Get(env.Root + path)
			require.NoError(t, err)
			_ = r.Body.Close()
			require.Equal(t, http.StatusOK, r.StatusCode, path)
			require.Contains(t, r.Header.Get("Content-Type"), ct)
		}
	})
}

// Actions the state machine does not allow are 409 invalid_state_transition and
// change nothing.
func TestIllegalActionsConflict(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator", "PAYOUT": "operator"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		ops := env.OperatorClient(t, env.NewOperator(t))
		tx := create(t, pc, "ILLEGAL-"+uuid.NewString(), "5000.00")

		conflict := func(what string, res interface{ StatusCode() int }, body []byte, e *oc.Error) {
			t.Helper()
			require.Equal(t, http.StatusConflict, res.StatusCode(), "%s: %s", what, body)
			require.Equal(t, oc.ErrorCodeInvalidStateTransition, e.Error.Code, what)
		}
		tryAll := func(stateName string) {
			t.Helper()
			before := partnerHistory(t, pc, tx.Id)
			f, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: key()}, oc.FillRequest{Rate: "1500.00", FiatAmount: "5000.00", Reference: "r"})
			require.NoError(t, err)
			if stateName != "confirmed" {
				conflict(stateName+" fill", f, f.Body, f.JSON409)
			}
			s, err := ops.SettleOrderWithResponse(ctx, tx.Id, &oc.SettleOrderParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "r"})
			require.NoError(t, err)
			if stateName != "confirmed" {
				conflict(stateName+" settle", s, s.Body, s.JSON409)
			}
			p, err := ops.SettlePayoutWithResponse(ctx, tx.Id, &oc.SettlePayoutParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "r"})
			require.NoError(t, err)
			conflict(stateName+" payout", p, p.Body, p.JSON409)
			r, err := ops.RefundTransactionWithResponse(ctx, tx.Id, &oc.RefundTransactionParams{IdempotencyKey: key()}, oc.RefundRequest{TxHash: "0x" + strings.Repeat("ab", 32)})
			require.NoError(t, err)
			conflict(stateName+" refund", r, r.Body, r.JSON409)
			if stateName == "awaiting_deposit" || stateName == "confirming" {
				require.Equal(t, before, partnerHistory(t, pc, tx.Id), "nothing changed")
			}
		}
		tryAll("awaiting_deposit")
		fl, err := ops.FailTransactionWithResponse(ctx, tx.Id, &oc.FailTransactionParams{IdempotencyKey: key()}, oc.FailRequest{Reason: "x"})
		require.NoError(t, err)
		conflict("awaiting_deposit fail", fl, fl.Body, fl.JSON409)

		// A deposit that is not yet confirmed cannot be filled.
		_, err = env.App.Lifecycle().Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
			return env.App.Lifecycle().DetectDeposit(ctx, unit, tx.Id, depositOf(1))
		})
		require.NoError(t, err)
		tryAll("confirming")

		// Unknown transaction: 404.
		nf, err := ops.SettleOrderWithResponse(ctx, uuid.New(), &oc.SettleOrderParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "r"})
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, nf.StatusCode())

		// A second payout is refused.
		_, err = env.App.Lifecycle().Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
			return env.App.Lifecycle().Confirm(ctx, unit, tx.Id, 15)
		})
		require.NoError(t, err)
		for _, step := range []func() int{
			func() int {
				r, _ := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: key()}, oc.FillRequest{Rate: "1500.00", FiatAmount: "5000.00", Reference: "r"})
				return r.StatusCode()
			},
			func() int {
				r, _ := ops.SettleOrderWithResponse(ctx, tx.Id, &oc.SettleOrderParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "r"})
				return r.StatusCode()
			},
			func() int {
				r, _ := ops.SettlePayoutWithResponse(ctx, tx.Id, &oc.SettlePayoutParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "r"})
				return r.StatusCode()
			},
		} {
			require.Equal(t, http.StatusOK, step())
		}
		p, err := ops.SettlePayoutWithResponse(ctx, tx.Id, &oc.SettlePayoutParams{IdempotencyKey: key()}, oc.ReferenceRequest{Reference: "again"})
		require.NoError(t, err)
		conflict("second payout", p, p.Body, p.JSON409)
		fl, err = ops.FailTransactionWithResponse(ctx, tx.Id, &oc.FailTransactionParams{IdempotencyKey: key()}, oc.FailRequest{Reason: "x"})
		require.NoError(t, err)
		conflict("completed fail", fl, fl.Body, fl.JSON409)
		require.Len(t, partnerHistory(t, pc, tx.Id).History, 6)
	})
}

// Every POST needs an Idempotency-Key; a retry replays, another request with the
// same key is 422, and an executed 409 is replayed too.
func TestIdempotentRetries(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		ops := env.OperatorClient(t, env.NewOperator(t))
		tx := create(t, pc, "IDEM-"+uuid.NewString(), "5000.00")
		confirmDeposit(t, env, tx.Id)

		k := key()
		body := oc.FillRequest{Rate: "1500.00", FiatAmount: "5000.00", Reference: "LP-9"}
		first, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: k}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, first.StatusCode(), string(first.Body))
		again, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: k}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, again.StatusCode())
		require.Equal(t, "true", again.HTTPResponse.Header.Get("Idempotent-Replayed"))
		require.Equal(t, first.Body, again.Body, "byte for byte")
		require.Len(t, partnerHistory(t, pc, tx.Id).History, 4, "filled once")

		body.Reference = "LP-10"
		other, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: k}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusUnprocessableEntity, other.StatusCode())
		require.Equal(t, oc.ErrorCodeIdempotencyKeyReused, other.JSON422.Error.Code)

		// An executed refusal is stored and replayed.
		k2 := key()
		c1, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: k2}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, c1.StatusCode())
		c2, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: k2}, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, c2.StatusCode())
		require.Equal(t, "true", c2.HTTPResponse.Header.Get("Idempotent-Replayed"))

		// Missing key: 400 idempotency_key_missing, nothing executed.
		req, err := http.NewRequest(http.MethodPost, env.OperatorURL()+"/transactions/"+tx.Id.String()+"/settle", strings.NewReader(`{"reference":"x"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-KEY", opKeyOf(t, env))
		r, err := env.OperatorHTTPClient(t).Do(req)
		require.NoError(t, err)
		_ = r.Body.Close()
		require.Equal(t, http.StatusBadRequest, r.StatusCode)

		// Keys are per operator: another operator's same key executes afresh.
		ops2 := env.OperatorClient(t, env.NewOperator(t))
		s, err := ops2.SettleOrderWithResponse(ctx, tx.Id, &oc.SettleOrderParams{IdempotencyKey: k}, oc.ReferenceRequest{Reference: "S"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, s.StatusCode(), string(s.Body))
	})
}

// An operator fails a confirmed deposit whose sale failed, then refunds it.
func TestFailAndRefund(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		opKey := env.NewOperator(t)
		ops := env.OperatorClient(t, opKey)
		tx := create(t, pc, "FAIL-"+uuid.NewString(), "5000.00")
		confirmDeposit(t, env, tx.Id)

		f, err := ops.FailTransactionWithResponse(ctx, tx.Id, &oc.FailTransactionParams{IdempotencyKey: key()}, oc.FailRequest{Reason: "LP rejected"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, f.StatusCode(), string(f.Body))
		require.Equal(t, oc.TransactionStatusFailed, f.JSON200.Data.Status)
		require.Equal(t, "confirmed", *f.JSON200.Data.DepositStatus, "the tokens are still here")
		require.Contains(t, stage(t, ops, oc.StageFailed), tx.Id)

		hash := "0x" + strings.Repeat("cd", 32)
		r, err := ops.RefundTransactionWithResponse(ctx, tx.Id, &oc.RefundTransactionParams{IdempotencyKey: key()}, oc.RefundRequest{TxHash: hash})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
		require.Equal(t, oc.TransactionStatusRefunded, r.JSON200.Data.Status)
		require.Equal(t, "refunded", *r.JSON200.Data.DepositStatus)
		require.NotContains(t, stage(t, ops, oc.StageFailed), tx.Id)

		h := partnerHistory(t, pc, tx.Id)
		require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:failed", "deposit:refunded"}, reasons(h))
		opID := operatorID(t, env, opKey)
		require.Equal(t, opID, (*h.History[3].Metadata)["operator_id"])
		require.Equal(t, "LP rejected", (*h.History[3].Metadata)["reason"])
		require.Equal(t, opID, (*h.History[4].Metadata)["operator_id"])
		require.Equal(t, hash, (*h.History[4].Metadata)["reference"])
		require.Equal(t, []string{"transaction.created", "deposit.detected", "deposit.confirmed", "transaction.failed", "transaction.refunded"}, eventTypes(t, env, tx.Id))

		// An unconfirmed deposit fails as a deposit failure.
		tx2 := create(t, pc, "FAIL-"+uuid.NewString(), "5000.00")
		_, err = env.App.Lifecycle().Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
			return env.App.Lifecycle().DetectDeposit(ctx, unit, tx2.Id, depositOf(1))
		})
		require.NoError(t, err)
		f2, err := ops.FailTransactionWithResponse(ctx, tx2.Id, &oc.FailTransactionParams{IdempotencyKey: key()}, oc.FailRequest{Reason: "dust"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, f2.StatusCode())
		require.Equal(t, "deposit:failed", partnerHistory(t, pc, tx2.Id).History[2].Reason)
	})
}

// The stage list is keyset-paged across partners and filters by partner, network and time.
func TestStageList(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator"})
		ctx := context.Background()
		ka, kb := env.NewPartner(t), env.NewPartner(t)
		ops := env.OperatorClient(t, env.NewOperator(t))
		var ids []uuid.UUID
		for i, k := range []string{ka, kb, ka} {
			tx := create(t, env.Client(t, k), "STAGE-"+uuid.NewString(), "2000.00")
			confirmDeposit(t, env, tx.Id)
			ids = append([]uuid.UUID{tx.Id}, ids...)
			_ = i
		}
		var walked []uuid.UUID
		var cur *string
		for {
			res, err := ops.ListStageWithResponse(ctx, &oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill), Limit: ptr(2), Cursor: cur})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
			for _, tx := range res.JSON200.Data.Data {
				walked = append(walked, tx.Id)
				require.Equal(t, "confirmed", *tx.DepositStatus)
			}
			if !res.JSON200.Data.HasMore {
				break
			}
			cur = res.JSON200.Data.NextCursor
		}
		require.Equal(t, ids, walked, "newest first, every partner, each once")

		pa := env.PartnerID(t, ka)
		res, err := ops.ListStageWithResponse(ctx, &oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill), PartnerId: &pa, Network: ptr("bep20")})
		require.NoError(t, err)
		require.Len(t, res.JSON200.Data.Data, 2)
		res, err = ops.ListStageWithResponse(ctx, &oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill), Network: ptr("trc20")})
		require.NoError(t, err)
		require.Empty(t, res.JSON200.Data.Data)

		// A cursor with other filters is refused.
		first, err := ops.ListStageWithResponse(ctx, &oc.ListStageParams{Stage: ptr(oc.StageAwaitingFill), Limit: ptr(1)})
		require.NoError(t, err)
		bad, err := ops.ListStageWithResponse(ctx, &oc.ListStageParams{Stage: ptr(oc.StageAwaitingSettlement), Limit: ptr(1), Cursor: first.JSON200.Data.NextCursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, bad.StatusCode())
		require.Equal(t, oc.ErrorCodeInvalidCursor, bad.JSON400.Error.Code)
	})
}

// Unmatched deposits recorded by the chain side are listed and resolved once.
func TestUnmatchedDeposits(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, nil)
		ctx := context.Background()
		opKey := env.NewOperator(t)
		ops := env.OperatorClient(t, opKey)
		pc := env.Client(t, env.NewPartner(t))
		done := create(t, pc, "UNM-"+uuid.NewString(), "2000.00")

		rec := func(i int, txID *uuid.UUID) *lifecycle.RefundTask {
			d, err := env.App.Unmatched().Record(ctx, env.Store, lifecycle.RefundTask{
				Network: "bep20", TxHash: "0x" + strings.Repeat("0", 63) + string(rune('1'+i)), LogIndex: i, ToAddress: "0xabc",
				Amount: decimal.RequireFromString("25.5"), RawAmount: "25500000000000000000", BlockNumber: 100 + int64(i), TransactionID: txID,
			})
			require.NoError(t, err)
			return d
		}
		a, b := rec(0, nil), rec(1, &done.Id)
		require.Equal(t, a.ID, rec(0, nil).ID, "recording the same transfer again is a no-op")

		res, err := ops.ListUnmatchedDepositsWithResponse(ctx, &oc.ListUnmatchedDepositsParams{Limit: ptr(1)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Len(t, res.JSON200.Data.Data, 1)
		require.Equal(t, b.ID, res.JSON200.Data.Data[0].Id, "newest first")
		require.Equal(t, "25.500000", res.JSON200.Data.Data[0].Amount)
		require.Equal(t, done.Id, *res.JSON200.Data.Data[0].TransactionId)
		require.True(t, res.JSON200.Data.HasMore)
		res, err = ops.ListUnmatchedDepositsWithResponse(ctx, &oc.ListUnmatchedDepositsParams{Limit: ptr(1), Cursor: res.JSON200.Data.NextCursor})
		require.NoError(t, err)
		require.Equal(t, a.ID, res.JSON200.Data.Data[0].Id)
		require.False(t, res.JSON200.Data.HasMore)

		// A refund needs its chain transaction.
		miss, err := ops.ResolveUnmatchedDepositWithResponse(ctx, a.ID, &oc.ResolveUnmatchedDepositParams{IdempotencyKey: key()}, oc.ResolveRequest{Action: oc.ResolveRequestActionRefunded})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, miss.StatusCode())

		hash := "0x" + strings.Repeat("ef", 32)
		r, err := ops.ResolveUnmatchedDepositWithResponse(ctx, a.ID, &oc.ResolveUnmatchedDepositParams{IdempotencyKey: key()}, oc.ResolveRequest{Action: oc.ResolveRequestActionRefunded, TxHash: &hash, Note: ptr("sent back")})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
		d := r.JSON200.Data
		require.Equal(t, oc.UnmatchedDepositStatusRefunded, d.Status)
		require.Equal(t, hash, *d.ResolutionTxHash)
		require.Equal(t, operatorID(t, env, opKey), d.ResolvedBy.String())
		require.NotNil(t, d.ResolvedAt)

		again, err := ops.ResolveUnmatchedDepositWithResponse(ctx, a.ID, &oc.ResolveUnmatchedDepositParams{IdempotencyKey: key()}, oc.ResolveRequest{Action: oc.ResolveRequestActionCredited, Note: ptr("x")})
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, again.StatusCode())
		require.Equal(t, oc.ErrorCodeInvalidStateTransition, again.JSON409.Error.Code)

		c, err := ops.ResolveUnmatchedDepositWithResponse(ctx, b.ID, &oc.ResolveUnmatchedDepositParams{IdempotencyKey: key()}, oc.ResolveRequest{Action: oc.ResolveRequestActionCredited, Note: ptr("added to the partner's payout")})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, c.StatusCode(), string(c.Body))

		open, err := ops.ListUnmatchedDepositsWithResponse(ctx, &oc.ListUnmatchedDepositsParams{})
		require.NoError(t, err)
		require.Empty(t, open.JSON200.Data.Data)
		refunded, err := ops.ListUnmatchedDepositsWithResponse(ctx, &oc.ListUnmatchedDepositsParams{Status: ptr(oc.UnmatchedDepositStatusRefunded)})
		require.NoError(t, err)
		require.Len(t, refunded.JSON200.Data.Data, 1)

		nf, err := ops.ResolveUnmatchedDepositWithResponse(ctx, uuid.New(), &oc.ResolveUnmatchedDepositParams{IdempotencyKey: key()}, oc.ResolveRequest{Action: oc.ResolveRequestActionCredited, Note: ptr("x")})
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, nf.StatusCode())
	})
}

// A fill of zero is refused before anything is stored; the key stays free.
func TestFillNeedsPositiveAmounts(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, db testdb.Database) {
		env := apitest.Start(t, db, map[string]string{"LIQUIDITY": "operator"})
		ctx := context.Background()
		pc := env.Client(t, env.NewPartner(t))
		ops := env.OperatorClient(t, env.NewOperator(t))
		tx := create(t, pc, "ZERO-"+uuid.NewString(), "5000.00")
		confirmDeposit(t, env, tx.Id)
		k := key()
		bad, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: k}, oc.FillRequest{Rate: "0.00", FiatAmount: "5000.00", Reference: "r"})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, bad.StatusCode())
		require.Equal(t, "/rate", bad.JSON400.Error.Details[0].Field)
		ok, err := ops.FillOrderWithResponse(ctx, tx.Id, &oc.FillOrderParams{IdempotencyKey: k}, oc.FillRequest{Rate: "1500.00", FiatAmount: "5000.00", Reference: "r"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, ok.StatusCode(), string(ok.Body))
	})
}
