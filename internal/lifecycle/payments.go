package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/pricing/money"
)

// Payments are the rules for payments as customers make them (openapi/partner.yaml,
// "Deposits on chain"): the chain watcher and the sandbox simulator both apply them
// through Engine.receive, so a simulated case and its chain twin agree.
//
//   - Transfers add up: every transfer to an open transaction's address counts, and
//     the total decides (awaiting_deposit with deposit_status partial while short).
//   - Tolerance: a total short by no more than Tolerance counts as paid in full.
//   - Dust: a transfer below MinDeposit that does not complete the payment never
//     counts; it becomes a refund task.
//   - Late: an expired transaction takes transfers for LateWindow after its deadline.
type Payments struct {
	Tolerance  Tolerance
	MinDeposit decimal.Decimal
	LateWindow time.Duration
}

// Tolerance is the accepted shortfall: a percentage of the expected amount, or an
// absolute token amount.
type Tolerance struct {
	Value   decimal.Decimal
	Percent bool
}

// Of returns the shortfall accepted on expected (rounded down to the token scale);
// an absolute tolerance never exceeds expected itself.
func (t Tolerance) Of(expected decimal.Decimal) decimal.Decimal {
	if !t.Percent {
		return decimal.Min(t.Value, expected)
	}
	return expected.Mul(t.Value).Div(decimal.NewFromInt(100)).RoundDown(money.TokenScale)
}

// DefaultPayments are the rules unless configured: no tolerance, 1 token minimum,
// an hour's grace after the deadline.
var DefaultPayments = Payments{MinDeposit: decimal.NewFromInt(1), LateWindow: time.Hour}

// RefundTasks keeps money to give back or decide on for the operators
// (package backoffice/refunds). Its writes go through the unit of work it is handed.
type RefundTasks interface {
	Record(ctx context.Context, tx TaskTx, d RefundTask) (*RefundTask, error)
	// Forget removes the still-open record of a transfer whose block was
	// reorganised away (nothing arrived: nothing to refund).
	Forget(ctx context.Context, tx TaskTx, network, txHash string, logIndex int) error
	DropOpen(ctx context.Context, tx TaskTx, transactionID uuid.UUID, kind TaskKind) error
	CloseOpen(ctx context.Context, tx TaskTx, transactionID uuid.UUID, kind TaskKind, operatorID *uuid.UUID, txHash, note string) error
	// Direct names where transaction id's open tasks of kind are to be refunded
	// (the partner's chosen address, instead of the sender).
	Direct(ctx context.Context, tx TaskTx, transactionID uuid.UUID, kind TaskKind, address string) error
}

// Incoming is one transfer to a transaction's deposit address, as the chain (or the
// simulator) reports it.
type Incoming struct {
	ID       string
	Token    string
	Hash     string
	LogIndex int
	Block    int64
	From, To string
	Amount   decimal.Decimal
	// Raw is the on-chain integer amount ("" for simulated transfers).
	Raw           string
	Confirmations int
	ReceivedAt    time.Time
}

// Outcome is what a transfer was to its transaction.
type Outcome int

// The outcomes of Engine.receive.
const (
	// Counted: one of the transaction's deposits.
	Counted Outcome = iota
	// Known: counted before (the same id); nothing changed.
	Known
	// Dust: below the minimum deposit; a dust refund task.
	Dust
	// NotOpen: the transaction takes no deposits; an unmatched refund task.
	NotOpen
)

// open reports whether t takes a transfer made at at: awaiting_deposit, or expired
// with at within the late window (without a deposit, or with a short one).
func (l *Engine) open(t *Transaction, at time.Time) bool {
	switch t.Status {
	case AwaitingDeposit:
		return true
	case Expired:
		if t.Deposit != nil && t.Deposit.Status != DepositStatusUnderpaid {
			return false
		}
		if t.RefundRequestedAt != nil { // the partner asked for the money back: what follows goes back too
			return false
		}
		return at.Before(t.ExpiresAt.Add(l.payments.LateWindow))
	}
	return false
}

// paid reports whether total pays t in full, within the tolerance.
func (l *Engine) paid(t *Transaction, total decimal.Decimal) bool {
	return total.GreaterThanOrEqual(t.CryptoAmount.Sub(l.payments.Tolerance.Of(t.CryptoAmount)))
}

// completes reports whether amount, added to what t received, pays it in full (a
// small order paid at once is never dust).
func (l *Engine) completes(t *Transaction, amount decimal.Decimal) bool {
	if t.Deposit != nil {
		amount = amount.Add(t.Deposit.Amount)
	}
	return l.paid(t, amount)
}

// receive applies transfer in to t (loaded in the change's unit of work) by the
// payment rules and returns the outcome, a note for one that did not count, and the
// transitions it made. Dust and transfers t does not take are recorded as refund
// tasks in the same unit of work.
func (l *Engine) receive(ctx context.Context, tx Tx, t *Transaction, in Incoming, now time.Time) (Outcome, string, []step, error) {
	if t.Deposit != nil && t.Deposit.Transfer(in.ID) != nil {
		return Known, "", nil, nil
	}
	if in.Amount.LessThan(l.payments.MinDeposit) && !l.completes(t, in.Amount) {
		note := fmt.Sprintf("dust: below the minimum deposit of %s", l.payments.MinDeposit.String())
		return Dust, note, nil, l.recordTask(ctx, tx, t, TaskDust, in, in.Amount)
	}
	// Late or not, within the window or not, is the transfer's own time (its
	// block's, on chain), not when it is processed.
	at := in.ReceivedAt
	if at.IsZero() {
		at = now
	}
	note := ""
	switch {
	case in.Token != "" && in.Token != t.Token:
		note = "token " + in.Token + " is not the transaction's " + t.Token
	case l.open(t, at):
	case t.Status == Expired && (t.Deposit == nil || t.Deposit.Status == DepositStatusUnderpaid):
		note = "the transaction expired more than the late-payment window ago"
	case t.Deposit != nil:
		note = fmt.Sprintf("the transaction (%s) already has deposit %s", t.Status, t.Deposit.ID)
	default:
		note = fmt.Sprintf("transaction is %s", t.Status)
	}
	if note != "" {
		return NotOpen, note, nil, l.recordTask(ctx, tx, t, TaskUnmatched, in, in.Amount)
	}

	from := t.Status
	if t.Deposit == nil {
		t.Deposit = &Deposit{Status: DepositStatusPartial, RequiredConfirmations: l.requiredFor(t.Network)}
	}
	d := t.Deposit
	d.Transfers = append(d.Transfers, Transfer{
		ID: in.ID, Hash: in.Hash, LogIndex: in.LogIndex, From: in.From, Amount: in.Amount, Block: in.Block,
		Confirmations: in.Confirmations, RequiredConfirmations: d.RequiredConfirmations, ReceivedAt: in.ReceivedAt,
	})
	d.sum()
	if err := l.screenSender(ctx, tx, t, in.From, now); err != nil {
		return Counted, "", nil, err
	}
	meta := map[string]any{
		"deposit_id": in.ID, "confirmations": in.Confirmations, "blockchain_hash": in.Hash,
		"amount": in.Amount.String(), "received": d.Amount.String(), "expected": t.CryptoAmount.String(),
	}
	if in.Block > 0 {
		meta["log_index"], meta["block"], meta["raw_amount"] = in.LogIndex, in.Block, in.Raw
	}
	addAmountFacts(meta, t.CryptoAmount, d.Amount)
	if !l.paid(t, d.Amount) {
		d.Status = DepositStatusPartial
		if from == Expired { // late and still short: the short task now covers the new total
			d.Status = DepositStatusUnderpaid
			if err := l.refreshShort(ctx, tx, t); err != nil {
				return Counted, "", nil, err
			}
		}
		s, err := move(t, DetectPartial, "given a transfer", meta)
		return Counted, "", []step{s}, err
	}
	d.Status = DepositStatusConfirming
	s, err := move(t, DetectDeposit, "given a deposit", meta)
	if err != nil {
		return Counted, "", nil, err
	}
	if from == Expired && l.tasks != nil {
		if err := l.tasks.CloseOpen(ctx, tx, t.ID, TaskShort, nil, "", "paid in full within the late-payment window"); err != nil {
			return Counted, "", nil, err
		}
	}
	return Counted, "", []step{s}, nil
}

// confirmTransfer raises counted transfer id's confirmations; with its requirement
// met and its block final (always so for the simulator and operators) the transfer
// is confirmed. When t is deposit_confirming and every counted transfer is
// confirmed, the deposit confirms.
func (l *Engine) confirmTransfer(ctx context.Context, tx Tx, t *Transaction, id string, confirmations int, final bool, now time.Time) ([]step, error) {
	tr := t.Deposit.Transfer(id)
	if tr == nil {
		return nil, nil
	}
	if confirmations > tr.Confirmations {
		tr.Confirmations = confirmations
	}
	if final && tr.Confirmations >= tr.RequiredConfirmations && tr.ConfirmedAt == nil {
		tr.ConfirmedAt = &now
	}
	t.Deposit.sum()
	return l.confirmIfDue(ctx, tx, t, now)
}

// confirmIfDue confirms t's deposit when t is deposit_confirming with every
// transfer confirmed: deposit:confirmed (with the excess or accepted shortfall),
// the fill with simulated liquidity, and an excess refund task.
func (l *Engine) confirmIfDue(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
	d := t.Deposit
	if t.Status != DepositConfirming || d.Status != DepositStatusConfirming || !d.allConfirmed() {
		return nil, nil
	}
	steps, err := confirm(t, now, l.fillsOnConfirm() && t.Screening.Proceeds())
	if err != nil {
		return nil, err
	}
	addAmountFacts(steps[0].meta, t.CryptoAmount, d.Amount)
	if excess := d.Amount.Sub(t.CryptoAmount); excess.IsPositive() {
		// The transfer that took the total over is where the excess goes back.
		var over *Transfer
		sum := decimal.Zero
		for i := range d.Transfers {
			sum = sum.Add(d.Transfers[i].Amount)
			if over == nil && sum.GreaterThan(t.CryptoAmount) {
				over = &d.Transfers[i]
			}
		}
		in := Incoming{ID: over.ID, Hash: over.Hash, LogIndex: over.LogIndex, Block: over.Block, From: over.From, To: t.DepositAddress}
		if err := l.recordTask(ctx, tx, t, TaskExcess, in, excess); err != nil {
			return nil, err
		}
	}
	return steps, nil
}

// refreshShort records t's partial total as its short refund task (replacing an
// open one, which covered less).
func (l *Engine) refreshShort(ctx context.Context, tx Tx, t *Transaction) error {
	if l.tasks == nil {
		return nil
	}
	if err := l.tasks.DropOpen(ctx, tx, t.ID, TaskShort); err != nil {
		return err
	}
	last := t.Deposit.last()
	in := Incoming{ID: last.ID, Hash: last.Hash, LogIndex: last.LogIndex, Block: last.Block, From: last.From, To: t.DepositAddress}
	return l.recordTask(ctx, tx, t, TaskShort, in, t.Deposit.Amount)
}

// recordTask records amount of transfer in as a refund task of kind for t.
func (l *Engine) recordTask(ctx context.Context, tx Tx, t *Transaction, kind TaskKind, in Incoming, amount decimal.Decimal) error {
	if l.tasks == nil {
		return nil
	}
	to := in.To
	if to == "" {
		to = t.DepositAddress
	}
	id, partner := t.ID, t.PartnerID
	var refundTo *string
	if kind == TaskShort && t.RefundRequestedAt != nil {
		refundTo = t.RefundAddress
	}
	_, err := l.tasks.Record(ctx, tx, RefundTask{
		Kind: kind, Network: t.Network, TxHash: in.Hash, LogIndex: in.LogIndex, FromAddress: in.From, ToAddress: to,
		RefundTo: refundTo, Amount: amount, RawAmount: in.Raw, BlockNumber: in.Block, TransactionID: &id, PartnerID: &partner,
	})
	return err
}

// addAmountFacts records an excess or a shortfall against the expected amount.
func addAmountFacts(meta map[string]any, expected, received decimal.Decimal) {
	switch received.Cmp(expected) {
	case 1:
		meta["excess"] = received.Sub(expected).String()
	case -1:
		meta["shortfall"] = expected.Sub(received).String()
	}
}

// Receive applies a transfer to transaction id by the payment rules (the
// simulator's deposit.detected): counted, dust or kept for the operators. A
// counted transfer with its required confirmations confirms at once.
func (l *Engine) Receive(ctx context.Context, tx Tx, id uuid.UUID, in Incoming) (*Transaction, Outcome, error) {
	var out Outcome
	t, err := l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if in.ReceivedAt.IsZero() {
			in.ReceivedAt = now
		}
		o, _, steps, err := l.receive(ctx, tx, t, in, now)
		out = o
		if err != nil || o != Counted {
			return steps, err
		}
		more, err := l.confirmTransfer(ctx, tx, t, in.ID, in.Confirmations, true, now)
		return append(steps, more...), err
	})
	return t, out, err
}

// Due returns what t still expects: crypto_amount less the total received (zero
// when nothing is due).
func Due(t *Transaction) decimal.Decimal {
	due := t.CryptoAmount
	if t.Deposit != nil {
		due = due.Sub(t.Deposit.Amount)
	}
	return decimal.Max(due, decimal.Zero)
}

// ConfirmAll gives every counted transfer of transaction id its required
// confirmations (the simulator's deposit.confirmed): a deposit_confirming
// transaction confirms; a partial one keeps waiting for the rest.
func (l *Engine) ConfirmAll(ctx context.Context, tx Tx, id uuid.UUID) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		d := t.Deposit
		if d == nil || (t.Status != DepositConfirming && d.Status != DepositStatusPartial && d.Status != DepositStatusUnderpaid) {
			return nil, errTransition(t, "confirmed")
		}
		if d.Status == DepositStatusConfirmed { // waiting for its fill: confirmed once
			return nil, apperr.New(apperr.InvalidStateTransition, "The deposit is already confirmed.")
		}
		for i := range d.Transfers {
			if tr := &d.Transfers[i]; !tr.Confirmed() {
				tr.Confirmations = tr.RequiredConfirmations
				tr.ConfirmedAt = &now
			}
		}
		d.sum()
		steps, err := l.confirmIfDue(ctx, tx, t, now)
		if err != nil || len(steps) > 0 {
			return steps, err
		}
		return nil, tx.SaveDeposit(ctx, t.ID, d)
	})
}
