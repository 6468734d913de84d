package lifecycle

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// The payment rules as the chain watcher (package deposits) applies them, one
// transfer at a time. Each method is one change of the transaction, made in the
// unit of work tx the watcher hands it (so the watcher's own bookkeeping of the
// transfer commits with it), and reports what became of the transfer.

// Fate is what a change made of a chain transfer.
type Fate int

// Fates of a chain transfer.
const (
	// StillPending: counted, not confirmed yet.
	StillPending Fate = iota
	// Settled: confirmed, or its transaction moved on by other means (the sandbox
	// simulator): nothing is left to confirm.
	Settled
	// Gone: the transaction's deposit is no longer this transfer; it is kept for
	// the operators.
	Gone
	// Dropped: its block left the canonical chain and it no longer counts.
	Dropped
)

// ReceiveTransfer applies a chain transfer to transaction id by the payment rules
// and reports whether it counts (Counted, Known) and, when it does not, why
// (note). It is never confirmed here, even when already deep enough (a
// catch-up): the next poll re-checks its block against the canonical chain first.
func (l *Engine) ReceiveTransfer(ctx context.Context, tx Tx, id uuid.UUID, in Incoming) (Outcome, string, error) {
	var out Outcome
	var why string
	_, err := l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		o, note, steps, err := l.receive(ctx, tx, t, in, now)
		out, why = o, note
		return steps, err
	})
	return out, why, err
}

// ConfirmTransfer raises counted transfer depositID's confirmations. At the
// network's requirement, once final (its block at or below the node's finalized
// block; always on a node without one), the transfer is confirmed (Settled); when
// the transaction is deposit_confirming and every counted transfer is confirmed,
// the deposit confirms (payments.go: the excess becomes a refund task).
func (l *Engine) ConfirmTransfer(ctx context.Context, tx Tx, id uuid.UUID, depositID string, confirmations int, final bool) (Fate, error) {
	fate := StillPending
	_, err := l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if t.Deposit == nil || t.Deposit.Transfer(depositID) == nil {
			fate = Gone
			return nil, nil
		}
		if !counting(t) {
			fate = Settled
			return nil, nil
		}
		steps, err := l.confirmTransfer(ctx, tx, t, depositID, confirmations, final, now)
		if err != nil {
			return nil, err
		}
		if t.Deposit.Transfer(depositID).Confirmed() {
			fate = Settled
		}
		if len(steps) == 0 {
			return nil, tx.SaveDeposit(ctx, t.ID, t.Deposit)
		}
		return steps, nil
	})
	return fate, err
}

// DropTransfer undoes counted transfer depositID, whose block left the canonical
// chain: it no longer counts (Dropped). An expired short transaction's short task
// covers what remains (none left: it is dropped). A deposit_confirming
// transaction whose total falls short again returns to awaiting_deposit (expired
// past its deadline) with reason deposit:reorged. emptied reports that no transfer
// is left: the caller removes the deposit in the same unit of work. The transfer
// is counted again if it reappears. where says where it was (the history entry's
// facts).
func (l *Engine) DropTransfer(ctx context.Context, tx Tx, id uuid.UUID, depositID string, where map[string]any) (fate Fate, emptied bool, err error) {
	fate = Dropped
	_, err = l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if t.Deposit == nil || t.Deposit.Transfer(depositID) == nil {
			fate = Gone
			return nil, nil
		}
		if !counting(t) {
			return nil, nil
		}
		dep := t.Deposit
		kept := dep.Transfers[:0]
		for _, tr := range dep.Transfers {
			if tr.ID != depositID {
				kept = append(kept, tr)
			}
		}
		dep.Transfers = kept
		dep.sum()
		if t.Status == Expired && l.tasks != nil { // short past the deadline: the short task follows the total
			if len(kept) > 0 {
				if err := l.refreshShort(ctx, tx, t); err != nil {
					return nil, err
				}
			} else if err := l.tasks.DropOpen(ctx, tx, t.ID, TaskShort); err != nil {
				return nil, err
			}
		}
		var steps []step
		if t.Status == DepositConfirming && !l.paid(t, dep.Amount) {
			trigger := ReorgDeposit
			if !now.Before(t.ExpiresAt) {
				trigger = ReorgDepositLate
			}
			s, err := move(t, trigger, "returned to waiting", where)
			if err != nil {
				return nil, err
			}
			steps = append(steps, s)
			dep.Status = DepositStatusPartial
			if t.Status == Expired && len(dep.Transfers) > 0 { // short past the deadline
				dep.Status = DepositStatusUnderpaid
				if err := l.refreshShort(ctx, tx, t); err != nil {
					return nil, err
				}
			}
		}
		if len(dep.Transfers) == 0 {
			t.Deposit = nil
			emptied = true
			return steps, nil
		}
		if len(steps) == 0 {
			return nil, tx.SaveDeposit(ctx, t.ID, dep)
		}
		return steps, nil
	})
	return fate, emptied, err
}

// RequiredFor returns the confirmations network's transfers need.
func (l *Engine) RequiredFor(network string) int { return l.requiredFor(network) }

// counting reports whether t's deposit can still change: the total is being
// received or confirmed.
func counting(t *Transaction) bool {
	return t.Status == AwaitingDeposit || t.Status == Expired ||
		(t.Status == DepositConfirming && t.Deposit.Status == DepositStatusConfirming)
}
