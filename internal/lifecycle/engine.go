package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/pricing/money"
)

// DepositInput describes a simulated transfer: its id (required), chain hash, the
// amount received (what is still due when zero), its sender and its
// confirmations so far.
type DepositInput struct {
	ID            string
	Hash          string
	Amount        decimal.Decimal
	From          string
	Confirmations int
}

// Store is what the engine reads and opens its units of work on.
type Store interface {
	// WithTx runs fn in a unit of work of its own.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// DueForExpiry returns up to limit transactions awaiting deposit past their deadline.
	DueForExpiry(ctx context.Context, now time.Time, limit int) ([]uuid.UUID, error)
}

// Engine moves transactions through the state machine (the table). Real
// chain processing, the expiry sweep and the sandbox simulator all call it, so every
// path shares one set of rules. Each change is one unit of work: a
// version-conditional update, its history entry and its event (with its delivery).
type Engine struct {
	store    Store
	required map[string]int
	now      func() time.Time
	observer Observer
	// settlement says who moves the steps after a confirmed deposit (operator.go).
	settlement Settlement
	// payments are the rules for counting transfers (payments.go); tasks is where
	// money to give back is recorded for the operators.
	payments Payments
	tasks    RefundTasks
	// screener screens deposits' senders (nil: screening off); failOpen lets an
	// unknown answer proceed (staging only).
	screener Screener
	failOpen bool
}

// Observer hears of every committed status change (for logs and metrics), after
// the commit: a change that rolls back is never reported.
type Observer interface {
	Transitioned(t *Transaction, tr Transition)
}

// Config is what an Engine is built with, fixed for its life: its clock, the
// confirmations each network needs, who moves the steps after a confirmed
// deposit, the payment rules, where refund tasks go and who hears of changes.
type Config struct {
	// Required is the confirmations each network needs.
	Required map[string]int
	Now      func() time.Time
	// Settlement says who moves the steps after a confirmed deposit (operator.go);
	// the zero value is the automatic adapters.
	Settlement Settlement
	// Payments are the rules for counting transfers (payments.go); nil is
	// DefaultPayments.
	Payments *Payments
	// Tasks records money to give back for the operators; nil records none (a
	// test of the state machine alone).
	Tasks RefundTasks
	// Observer hears of committed transitions; nil for none.
	Observer Observer
	// Screener screens each deposit's sender (screening.go); nil when screening
	// is off. ScreeningFailOpen lets an unknown answer proceed (staging only).
	Screener          Screener
	ScreeningFailOpen bool
}

// NewEngine returns an Engine over store built with c.
func NewEngine(store Store, c Config) *Engine {
	payments := DefaultPayments
	if c.Payments != nil {
		payments = *c.Payments
	}
	return &Engine{store: store, required: c.Required, now: c.Now, settlement: c.Settlement,
		payments: payments, tasks: c.Tasks, observer: c.Observer,
		screener: c.Screener, failOpen: c.ScreeningFailOpen}
}

// Begin opens the engine's unit of work, for a use case that makes several
// changes as one: it hands each change the tx fn receives.
func (l *Engine) Begin(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	return l.store.WithTx(ctx, fn)
}

// Run is a use case that is one change and nothing more (a job's step, an expiry,
// a test's deposit): it opens a unit of work of its own, hands fn its tx, and
// returns fn's transaction once it committed.
func (l *Engine) Run(ctx context.Context, fn func(ctx context.Context, tx Tx) (*Transaction, error)) (*Transaction, error) {
	return uow.Run(ctx, l.store.WithTx, fn)
}

// ErrTransition is the answer to an action the state machine does not allow.
func errTransition(t *Transaction, action string) error {
	return apperr.New(apperr.InvalidStateTransition,
		fmt.Sprintf("A transaction in %s cannot be %s.", t.Status, action))
}

// change is every change of a transaction, made in the unit of work tx its caller
// opened and handed it (the use case: an operator action, a simulated event, the
// chain's bookkeeping, a job; Run for one that is no more than this change): it
// loads transaction id for update, lets fn apply transitions to it, and writes it.
// fn returns the transitions it made (with their metadata); each is checked
// against the table and recorded in tx, so they commit with the rest of the use case.
func (l *Engine) change(ctx context.Context, tx Tx, id uuid.UUID, fn func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error)) (*Transaction, error) {
	t, err := tx.TransactionForUpdate(ctx, id)
	if err != nil {
		return nil, err
	}
	now := l.now()
	screening := t.Screening
	steps, err := fn(ctx, tx, t, now)
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 && t.Screening == screening {
		return t, nil
	}
	t.UpdatedAt = now
	ok, err := tx.UpdateTransaction(ctx, t)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.New(apperr.InvalidStateTransition, "The transaction changed concurrently; fetch it and retry.")
	}
	t.Version++
	if t.Deposit != nil {
		if err := tx.SaveDeposit(ctx, t.ID, t.Deposit); err != nil {
			return nil, err
		}
	}
	for _, s := range steps {
		if err := record(ctx, tx, t, s, now); err != nil {
			return nil, err
		}
		if err := l.scheduleNext(ctx, tx, t, s.tr, now); err != nil {
			return nil, err
		}
	}
	if l.observer != nil {
		tx.AfterCommit(func() {
			for _, s := range steps {
				l.observer.Transitioned(t, s.tr)
			}
		})
	}
	return t, nil
}

type step struct {
	tr   Transition
	meta map[string]any
	// payout is what the payout.settled event tells of the payout (settlePayout).
	payout *PayoutFacts
}

// move applies trigger to t in memory, or returns InvalidStateTransition.
func move(t *Transaction, trigger Trigger, action string, meta map[string]any) (step, error) {
	tr, ok := Lookup(t.Status, trigger)
	if !ok {
		return step{}, errTransition(t, action)
	}
	t.Status = tr.To
	return step{tr: tr, meta: meta}, nil
}

// Cancel cancels partnerID's transaction id (only awaiting_deposit is cancellable).
// A partial payment already received stays with the operators: its total is
// recorded as the transaction's short refund task in the same unit of work.
// Errors: NotFound, InvalidStateTransition.
// run is how its caller has it run: uow.Plain, or under its request's key (idempotency.Keyed).
func (l *Engine) Cancel(ctx context.Context, run uow.Runner[*Transaction, Tx], partnerID, id uuid.UUID) (*Transaction, error) {
	return run.Run(ctx, l.store.WithTx, func(ctx context.Context, tx Tx) (*Transaction, error) {
		return l.cancel(ctx, tx, partnerID, id)
	})
}

// cancel is Cancel in unit of work tx.
func (l *Engine) cancel(ctx context.Context, tx Tx, partnerID, id uuid.UUID) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, _ time.Time) ([]step, error) {
		if t.PartnerID != partnerID { // another partner's transaction does not exist for this one
			return nil, apperr.New(apperr.NotFound, "The transaction was not found.")
		}
		var meta map[string]any
		if d := t.Deposit; d != nil && t.Status == AwaitingDeposit && len(d.Transfers) > 0 {
			meta = map[string]any{"expected": t.CryptoAmount.String(), "received": d.Amount.String()}
			addAmountFacts(meta, t.CryptoAmount, d.Amount)
			if err := l.refreshShort(ctx, tx, t); err != nil {
				return nil, err
			}
		}
		s, err := move(t, Cancel, "cancelled", meta)
		return []step{s}, err
	})
}

// Expire expires transaction id if it still awaits its deposit. With force unset it
// also requires the deadline to have passed (the job path); the simulator forces.
// It is idempotent: a transaction no longer awaiting deposit is left alone and
// ErrNoLongerAwaiting is returned; one whose deadline is still ahead gets ErrTooEarly.
func (l *Engine) Expire(ctx context.Context, tx Tx, id uuid.UUID, force bool) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if !force {
			if t.Status != AwaitingDeposit {
				return nil, ErrNoLongerAwaiting
			}
			if now.Before(t.ExpiresAt) {
				return nil, ErrTooEarly
			}
		}
		var meta map[string]any
		if d := t.Deposit; d != nil { // short at the deadline: the money is a refund task
			d.Status = DepositStatusUnderpaid
			meta = map[string]any{"expected": t.CryptoAmount.String(), "received": d.Amount.String()}
			addAmountFacts(meta, t.CryptoAmount, d.Amount)
			if err := l.refreshShort(ctx, tx, t); err != nil {
				return nil, err
			}
		}
		s, err := move(t, Expire, "expired", meta)
		return []step{s}, err
	})
}

// ErrNoLongerAwaiting means an expiry found nothing to do: the transaction no
// longer awaits its deposit.
var ErrNoLongerAwaiting = errors.New("transaction no longer awaits its deposit")

// ErrTooEarly means the transaction's deadline has not passed yet.
var ErrTooEarly = errors.New("transaction deadline not reached")

// ExpireDue expires up to limit transactions past their deadline and returns how
// many it expired: the expiry sweep.
func (l *Engine) ExpireDue(ctx context.Context, now time.Time, limit int) (int, error) {
	ids, err := l.store.DueForExpiry(ctx, now, limit)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		_, err := l.Run(ctx, func(ctx context.Context, tx Tx) (*Transaction, error) { return l.Expire(ctx, tx, id, false) })
		switch {
		case err == nil:
			n++
		case errors.Is(err, ErrNoLongerAwaiting), errors.Is(err, ErrTooEarly), apperr.CodeOf(err) == apperr.InvalidStateTransition:
			// Changed since the query (deposit, cancel, another instance): fine.
		default:
			return n, err
		}
	}
	return n, nil
}

// DetectDeposit counts one transfer to transaction id (Receive): in.Amount, or what
// is still due when zero. The same deposit id again changes nothing; a transfer to a
// transaction that takes none is InvalidStateTransition (nothing recorded), except
// an unnamed one to a transaction that has its deposit, which changes nothing.
func (l *Engine) DetectDeposit(ctx context.Context, tx Tx, id uuid.UUID, in DepositInput) (*Transaction, error) {
	if in.ID == "" {
		return nil, apperr.Field(apperr.InvalidRequest, "A deposit needs its id.", "/deposit_id", "required")
	}
	return l.receiveSimulated(ctx, tx, id, in, false)
}

// receiveSimulated is DetectDeposit; named says the caller chose the id.
func (l *Engine) receiveSimulated(ctx context.Context, tx Tx, id uuid.UUID, in DepositInput, generated bool) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if !l.open(t, now) && t.Deposit != nil && (generated || t.Deposit.Transfer(in.ID) != nil) && !in.Amount.IsPositive() {
			return nil, nil // the deposit is there: reused, nothing changes
		}
		amount := in.Amount
		if !amount.IsPositive() {
			amount = Due(t)
		}
		inc := Incoming{ID: in.ID, Hash: in.Hash, Amount: amount, Confirmations: in.Confirmations, From: in.From, ReceivedAt: now}
		o, note, steps, err := l.receive(ctx, tx, t, inc, now)
		switch {
		case err != nil:
			return nil, err
		case o == NotOpen:
			return nil, apperr.New(apperr.InvalidStateTransition,
				fmt.Sprintf("A transaction in %s takes no deposit (%s); on chain such a transfer is kept for the operators.", t.Status, note))
		case o != Counted:
			return nil, nil
		}
		more, err := l.confirmTransfer(ctx, tx, t, in.ID, in.Confirmations, true, now)
		return append(steps, more...), err
	})
}

// DetectGenerated is DetectDeposit for a deposit whose id the simulator made up:
// on a transaction that no longer takes deposits but has one, it changes nothing
// (a repeated detection reuses the deposit).
func (l *Engine) DetectGenerated(ctx context.Context, tx Tx, id uuid.UUID, in DepositInput) (*Transaction, error) {
	return l.receiveSimulated(ctx, tx, id, in, true)
}

// Confirm gives every counted transfer of transaction id at least confirmations
// confirmations. When all have the network's requirement the deposit confirms
// (history deposit:confirmed and the deposit.confirmed event) and, with the
// simulated liquidity adapter, the sell order fills at once (→ order_filled,
// history order:filled); with the operator adapter the transaction waits in
// deposit_confirming, deposit confirmed, for FillOrder. Fewer only update the counts.
func (l *Engine) Confirm(ctx context.Context, tx Tx, id uuid.UUID, confirmations int) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if t.Deposit == nil || t.Status != DepositConfirming {
			return nil, errTransition(t, "confirmed")
		}
		if t.Deposit.Status == DepositStatusConfirmed { // waiting for its fill: confirmed once
			return nil, apperr.New(apperr.InvalidStateTransition, "The deposit is already confirmed.")
		}
		var steps []step
		for _, tr := range t.Deposit.Transfers {
			more, err := l.confirmTransfer(ctx, tx, t, tr.ID, confirmations, true, now)
			if err != nil {
				return nil, err
			}
			steps = append(steps, more...)
		}
		if len(steps) == 0 {
			return nil, tx.SaveDeposit(ctx, t.ID, t.Deposit)
		}
		return steps, nil
	})
}

func confirm(t *Transaction, now time.Time, fill bool) ([]step, error) {
	t.Deposit.Status = DepositStatusConfirmed
	t.Deposit.ConfirmedAt = &now
	meta := map[string]any{"deposit_id": t.Deposit.ID, "confirmations": t.Deposit.Confirmations}
	confirmed, err := move(t, ConfirmDeposit, "confirmed", meta)
	if err != nil {
		return nil, err
	}
	if !fill {
		return []step{confirmed}, nil
	}
	filled, err := move(t, FillOrder, "filled", nil)
	if err != nil {
		return nil, err
	}
	return []step{confirmed, filled}, nil
}

// Settle completes an order_filled transaction and writes its revenue row in the
// same database transaction.
func (l *Engine) Settle(ctx context.Context, tx Tx, id uuid.UUID) (*Transaction, error) {
	return l.settle(ctx, tx, id, nil)
}

// settle is Settle with meta in the history entry.
func (l *Engine) settle(ctx context.Context, tx Tx, id uuid.UUID, meta map[string]any) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		s, err := move(t, Settle, "settled", meta)
		if err != nil {
			return nil, err
		}
		feeRate, shareRate, err := tx.PartnerRates(ctx, t.PartnerID)
		if err != nil {
			return nil, err
		}
		fee := money.Fee(t.FiatAmount, feeRate)
		shortfall := decimal.Zero
		if t.Deposit != nil && t.Deposit.Amount.LessThan(t.CryptoAmount) {
			shortfall = t.CryptoAmount.Sub(t.Deposit.Amount)
		}
		if err := tx.InsertRevenue(ctx, &RevenueRow{
			TransactionID: t.ID, PartnerID: t.PartnerID, MerchantReference: t.MerchantReference,
			MerchantID: t.MerchantID, TerminalID: t.TerminalID, Network: t.Network, Token: t.Token,
			CryptoAmount: t.CryptoAmount, FiatAmount: t.FiatAmount,
			PlatformFee: fee, Share: money.Fee(fee, shareRate), Shortfall: shortfall, TS: now,
		}); err != nil {
			return nil, err
		}
		return []step{s}, nil
	})
}

// Fail fails a transaction whose deposit (deposit_confirming, unconfirmed) or sell
// order (confirmed and waiting for its fill, or order_filled) failed.
func (l *Engine) Fail(ctx context.Context, tx Tx, id uuid.UUID) (*Transaction, error) {
	return l.fail(ctx, tx, id, nil)
}

// Refund refunds the deposit of a failed transaction, or of an expired one that has
// a deposit.
func (l *Engine) Refund(ctx context.Context, tx Tx, id uuid.UUID) (*Transaction, error) {
	return l.refund(ctx, tx, id, nil, nil, "")
}

// refund is Refund with extra facts in the history metadata.
func (l *Engine) refund(ctx context.Context, tx Tx, id uuid.UUID, extra map[string]any, op *uuid.UUID, txHash string) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, _ time.Time) ([]step, error) {
		return l.refundIn(ctx, tx, t, extra, op, txHash)
	})
}

// refundIn refunds t (loaded in the change's unit of work): the whole deposit goes
// back, so its open short and excess refund tasks close with it (by operator op,
// nil for the simulator; txHash the refund's chain transaction), whatever state t
// came from.
func (l *Engine) refundIn(ctx context.Context, tx Tx, t *Transaction, extra map[string]any, op *uuid.UUID, txHash string) ([]step, error) {
	if err := Check(t, ActionRefund); err != nil {
		return nil, err
	}
	s, err := move(t, Refund, "refunded", with(map[string]any{"deposit_id": t.Deposit.ID}, extra))
	if err != nil {
		return nil, err
	}
	if l.tasks != nil {
		for _, kind := range []TaskKind{TaskShort, TaskExcess} {
			if err := l.tasks.CloseOpen(ctx, tx, t.ID, kind, op, txHash, "refunded with the transaction"); err != nil {
				return nil, err
			}
		}
	}
	t.Deposit.Status = DepositStatusRefunded
	return []step{s}, nil
}

// SettlePayout records that a completed transaction's fiat payout settled (once),
// simulated: a payout of one the service records (SystemPayout).
func (l *Engine) SettlePayout(ctx context.Context, tx Tx, id uuid.UUID) (*Transaction, error) {
	return l.settlePayout(ctx, tx, id, nil, nil)
}

// settlePayout is SettlePayout with extra facts in the history metadata and the
// payout it belongs to: batch, the bank transfer the operators recorded (a batch
// or a payout of one), or, when nil (a simulated or automatic payout), a payout of
// one the service records itself in the change's unit of work (SystemPayout; its
// reference joins the history metadata). The event carries the payout's id,
// reference and total.
func (l *Engine) settlePayout(ctx context.Context, tx Tx, id uuid.UUID, extra map[string]any, batch *PayoutBatch) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if err := Check(t, ActionPayout); err != nil {
			return nil, err
		}
		payout, meta := batch, with(map[string]any{"payout_settled_at": now.Format(time.RFC3339Nano)}, extra)
		var sys *SystemPayout
		if payout == nil {
			sys = &SystemPayout{ID: uuid.New(), PartnerID: t.PartnerID, TransactionID: t.ID,
				FiatAmount: t.FiatAmount, CryptoAmount: t.CryptoAmount, CreatedAt: now}
			sys.Reference = SystemPayoutReference(sys.ID)
			meta["reference"] = sys.Reference
			payout = &PayoutBatch{ID: sys.ID, Amount: sys.FiatAmount}
		}
		s, err := move(t, SettlePayout, "given a payout", meta)
		if err != nil {
			return nil, err
		}
		t.PayoutSettledAt = &now
		facts := &PayoutFacts{PayoutID: &payout.ID, Amount: money.FormatFiat(payout.Amount)}
		if ref, ok := meta["reference"].(string); ok {
			facts.Reference = &ref
		}
		s.payout = facts
		if sys != nil {
			if err := tx.InsertSystemPayout(ctx, sys); err != nil {
				return nil, err
			}
		}
		return []step{s}, nil
	})
}

func (l *Engine) requiredFor(network string) int {
	if n, ok := l.required[network]; ok && n > 0 {
		return n
	}
	return 1
}

// Now is the engine's clock: a use case built on the engine (the simulator's
// audit row) dates what it records as the engine dates its changes.
func (l *Engine) Now() time.Time { return l.now() }
