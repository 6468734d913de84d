package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/pricing/money"
)

// Settlement says who moves a transaction after its deposit is confirmed: the two
// ports of issue "production's path to completed", each with its adapter.
//
//   - Liquidity (the sale of the received tokens for NGN: the fill and the
//     settlement). Simulated fills at once, at the transaction's rate, in the change
//     that confirms the deposit; Operator leaves the transaction in
//     deposit_confirming (deposit confirmed) until FillOrder.
//   - Payout (the NGN paid to the partner).
//
// AutoDelay, when positive, makes the simulated adapters finish by themselves: a job
// settles a filled order AutoDelay after the fill (simulated liquidity) and a job
// pays a completed transaction out right after (simulated payout). Zero leaves the
// simulated steps to the sandbox simulator.
type Settlement struct {
	OperatorLiquidity bool
	OperatorPayout    bool
	AutoDelay         time.Duration
}

// Fill is the executed sale an operator reported: the back office's record, apart
// from the partner-visible history (which carries only the operator and reference).
type Fill struct {
	TransactionID uuid.UUID
	Rate          decimal.Decimal
	FiatAmount    decimal.Decimal
	Reference     string
	OperatorID    uuid.UUID
	FilledAt      time.Time
}

// Automatic steps.
const (
	StepSettle = "settle"
	StepPayout = "payout"
)

func (l *Engine) fillsOnConfirm() bool { return !l.settlement.OperatorLiquidity }

// scheduleNext runs inside change, after each recorded step: in automatic mode a
// fill schedules the settlement and a settlement the payout, as jobs of the same
// unit of work (so a restart between steps loses nothing).
func (l *Engine) scheduleNext(ctx context.Context, tx Tx, t *Transaction, tr Transition, now time.Time) error {
	s := l.settlement
	if s.AutoDelay <= 0 {
		return nil
	}
	switch {
	case tr.Trigger == FillOrder && !s.OperatorLiquidity:
		return tx.ScheduleStep(ctx, t.ID, StepSettle, now.Add(s.AutoDelay))
	case tr.Trigger == Settle && !s.OperatorPayout:
		return tx.ScheduleStep(ctx, t.ID, StepPayout, now)
	}
	return nil
}

// RunStep performs an automatic step (the job Tx.ScheduleStep inserted). A step that is
// no longer possible (the simulator or an operator got there first, or the
// transaction failed) is done: it returns nil so the job is not retried.
func (l *Engine) RunStep(ctx context.Context, id uuid.UUID, step string) error {
	meta := map[string]any{"by": "auto"}
	if step != StepSettle && step != StepPayout {
		return nil
	}
	_, err := l.Run(ctx, func(ctx context.Context, tx Tx) (*Transaction, error) {
		if step == StepSettle {
			return l.settle(ctx, tx, id, meta)
		}
		return l.settlePayout(ctx, tx, id, meta, nil)
	})
	if c := apperr.CodeOf(err); c == apperr.InvalidStateTransition || c == apperr.NotFound {
		return nil
	}
	return err
}

// meta is the history entry's metadata of a change by a: the operator who acted
// (the nil UUID for anyone else), and kv.
func meta(a actor.Actor, kv ...any) map[string]any {
	m := map[string]any{"operator_id": a.OperatorID().String()}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// with returns base with extra's entries added (base when extra is empty).
func with(base, extra map[string]any) map[string]any {
	for k, v := range extra {
		base[k] = v
	}
	return base
}

// CheckRate is the rule of an executed rate (a fill, one or a batch): greater
// than zero. Errors: InvalidRequest naming /rate.
func CheckRate(rate decimal.Decimal) error {
	if !rate.IsPositive() {
		return apperr.Field(apperr.InvalidRequest, "The executed rate must be positive.", "/rate", "must be a decimal greater than 0")
	}
	return nil
}

// CheckFiat is the rule of an NGN amount an operator records (a fill, a payout):
// greater than zero. Errors: InvalidRequest naming /fiat_amount.
func CheckFiat(fiat decimal.Decimal) error {
	if !fiat.IsPositive() {
		return apperr.Field(apperr.InvalidRequest, "The NGN amount must be positive.", "/fiat_amount", "must be a decimal greater than 0")
	}
	return nil
}

// FillOrder records the executed sale of a confirmed deposit: deposit_confirming
// with the deposit confirmed → order_filled (history order:filled carrying the
// operator and reference), and the Fill with the executed rate and NGN amount, in
// one database transaction. The partner's amount and rate do not change. Errors:
// InvalidRequest (CheckRate, CheckFiat), NotFound, InvalidStateTransition.
func (l *Engine) FillOrder(ctx context.Context, tx Tx, id uuid.UUID, by actor.Actor, rate, fiat decimal.Decimal, reference string) (*Transaction, error) {
	if err := CheckRate(rate); err != nil {
		return nil, err
	}
	if err := CheckFiat(fiat); err != nil {
		return nil, err
	}
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if err := Check(t, ActionFill); err != nil {
			return nil, err
		}
		s, err := move(t, FillOrder, "filled", meta(by, "reference", reference))
		if err != nil {
			return nil, err
		}
		return []step{s}, tx.InsertFill(ctx, &Fill{
			TransactionID: t.ID, Rate: rate, FiatAmount: fiat, Reference: reference, OperatorID: by.OperatorID(), FilledAt: now,
		})
	})
}

// SettleOrder completes a filled order for an operator: order:settled, the revenue
// row and transaction.completed. Errors: NotFound, InvalidStateTransition.
func (l *Engine) SettleOrder(ctx context.Context, tx Tx, id uuid.UUID, by actor.Actor, reference string) (*Transaction, error) {
	return l.settle(ctx, tx, id, meta(by, "reference", reference))
}

// PayOut records a completed transaction's NGN payout for an operator (once);
// batch is the payout it is part of: a batch, or a payout of one when it was paid
// on its own (package batches records both).
// Errors: NotFound, InvalidStateTransition.
func (l *Engine) PayOut(ctx context.Context, tx Tx, id uuid.UUID, by actor.Actor, reference string, batch *PayoutBatch) (*Transaction, error) {
	return l.settlePayout(ctx, tx, id, meta(by, "reference", reference), batch)
}

// FailBy fails a transaction for an operator (see fail). Errors: NotFound,
// InvalidStateTransition.
func (l *Engine) FailBy(ctx context.Context, tx Tx, id uuid.UUID, by actor.Actor, reason string) (*Transaction, error) {
	return l.fail(ctx, tx, id, meta(by, "reason", reason))
}

// fail fails transaction id: deposit:failed while its deposit is unconfirmed (the
// deposit is marked failed), order:failed once the deposit is confirmed or the
// order filled (the tokens are here, to be refunded).
func (l *Engine) fail(ctx context.Context, tx Tx, id uuid.UUID, meta map[string]any) (*Transaction, error) {
	return l.change(ctx, tx, id, func(_ context.Context, _ Tx, t *Transaction, _ time.Time) ([]step, error) {
		if err := Check(t, ActionFail); err != nil {
			return nil, err
		}
		trigger := failTrigger(t)
		if trigger == FailDeposit && t.Deposit != nil {
			t.Deposit.Status = DepositStatusFailed
		}
		s, err := move(t, trigger, "failed", meta)
		return []step{s}, err
	})
}

// RefundBy records for an operator that a failed (or expired) transaction's deposit
// was sent back in chain transaction txHash. An expired transaction's open short
// refund task is closed with it. Errors: NotFound, InvalidStateTransition.
func (l *Engine) RefundBy(ctx context.Context, tx Tx, id uuid.UUID, by actor.Actor, txHash string) (*Transaction, error) {
	op := by.OperatorID()
	return l.refund(ctx, tx, id, meta(by, "reference", txHash, "refund_tx_hash", txHash), &op, txHash)
}

// RefundShort records for an operator that transaction id's short payment went
// back in chain transaction txHash (a short refund task resolved refunded). An
// expired transaction is refunded with it (→ refunded, deposit refunded, history and
// event in the same unit of work), so neither a late transfer nor Accept can count
// the returned money again; a cancelled one only has its short task closed. Errors:
// NotFound, InvalidStateTransition (no open short task to refund).
func (l *Engine) RefundShort(ctx context.Context, tx Tx, id uuid.UUID, by actor.Actor, txHash string) (*Transaction, error) {
	op := by.OperatorID()
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, _ time.Time) ([]step, error) {
		switch {
		case t.Status == Expired && t.Deposit != nil:
			return l.refundIn(ctx, tx, t, meta(by, "reference", txHash, "refund_tx_hash", txHash), &op, txHash)
		case t.Status == Cancelled && l.tasks != nil:
			return nil, l.tasks.CloseOpen(ctx, tx, t.ID, TaskShort, &op, txHash, "refunded after the cancellation")
		}
		return nil, apperr.New(apperr.InvalidStateTransition,
			fmt.Sprintf("A short payment of a transaction in %s cannot be refunded on its own.", t.Status))
	})
}

// Accept lets an expired transaction with a short deposit (deposit_status
// underpaid) proceed on what was received, for an operator: → deposit_confirming
// (history deposit:accepted with the reason and the old and new amounts), its
// crypto_amount the total received and its NGN amount re-priced at its own rate
// (money.FiatFromTokens, the rounding of create). Its open short refund task is
// closed; when every transfer is already confirmed the deposit confirms in the same
// change, and that event tells the partner the new amount. Errors: NotFound,
// InvalidStateTransition.
func (l *Engine) Accept(ctx context.Context, tx Tx, id uuid.UUID, by actor.Actor, reason string) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if err := Check(t, ActionAccept); err != nil {
			return nil, err
		}
		op := by.OperatorID()
		return l.accept(ctx, tx, t, now, meta(by, "reason", reason), &op, "accepted: "+reason)
	})
}

// accept moves t, whose short payment was accepted (by its partner or an
// operator, op; facts are the history's), to deposit_confirming: crypto_amount
// the total received, amount re-priced at t.Rate (money.FiatFromTokens, the
// rounding of create), the open short refund task closed with note, and the
// deposit confirmed in the same change when every transfer already is.
func (l *Engine) accept(ctx context.Context, tx Tx, t *Transaction, now time.Time, facts map[string]any, op *uuid.UUID, note string) ([]step, error) {
	oldFiat, oldCrypto := t.FiatAmount, t.CryptoAmount
	t.CryptoAmount = t.Deposit.Amount
	t.FiatAmount = money.FiatFromTokens(t.CryptoAmount, t.Rate)
	t.Deposit.Status = DepositStatusConfirming
	s, err := move(t, Accept, "accepted", with(facts, map[string]any{
		"old_amount": money.FormatFiat(oldFiat), "new_amount": money.FormatFiat(t.FiatAmount),
		"old_crypto_amount": money.FormatTokens(oldCrypto), "new_crypto_amount": money.FormatTokens(t.CryptoAmount)}))
	if err != nil {
		return nil, err
	}
	if l.tasks != nil {
		if err := l.tasks.CloseOpen(ctx, tx, t.ID, TaskShort, op, "", note); err != nil {
			return nil, err
		}
	}
	more, err := l.confirmIfDue(ctx, tx, t, now)
	return append([]step{s}, more...), err
}
