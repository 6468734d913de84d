package lifecycle

import (
	"fmt"

	"partnerd/internal/kit/apperr"
)

// OperatorAction names an operator's action on one transaction, as the operator
// API's transaction detail lists them in allowed_actions.
type OperatorAction string

// The operator actions, in the order allowed_actions lists them.
const (
	ActionFill   OperatorAction = "fill"
	ActionSettle OperatorAction = "settle"
	ActionPayout OperatorAction = "payout"
	ActionAccept OperatorAction = "accept"
	ActionFail   OperatorAction = "fail"
	ActionRefund OperatorAction = "refund"
)

// OperatorActions lists every operator action.
var OperatorActions = []OperatorAction{ActionFill, ActionSettle, ActionPayout, ActionAccept, ActionFail, ActionRefund}

// guards hold, per action, the one rule of when it applies: the table's row and the
// deposit's state the action needs. The engine's actions check them first, and
// AllowedActions reports them, so what the console offers and what the API accepts
// cannot drift apart. A guard returns nil when the action applies to t now, else
// the InvalidStateTransition the action answers.
var guards = map[OperatorAction]func(t *Transaction) error{
	ActionFill: func(t *Transaction) error {
		if !t.Screening.Proceeds() {
			return errHeld
		}
		if t.Status == DepositConfirming && !depositConfirmed(t) {
			return apperr.New(apperr.InvalidStateTransition, "The deposit is not confirmed yet; it cannot be filled.")
		}
		return allows(t, FillOrder, "filled")
	},
	ActionSettle: func(t *Transaction) error { return allows(t, Settle, "settled") },
	ActionPayout: func(t *Transaction) error {
		if t.PayoutSettledAt != nil {
			return apperr.New(apperr.InvalidStateTransition, "The payout of this transaction has already settled.")
		}
		return allows(t, SettlePayout, "given a payout")
	},
	ActionAccept: func(t *Transaction) error {
		if err := shortDecision(t, "accepted"); err != nil {
			return err
		}
		if t.RefundRequestedAt != nil {
			return errRefundRequested
		}
		return allows(t, Accept, "accepted")
	},
	ActionFail: func(t *Transaction) error { return allows(t, failTrigger(t), "failed") },
	ActionRefund: func(t *Transaction) error {
		if !t.Screening.Proceeds() {
			return errHeld
		}
		if err := allows(t, Refund, "refunded"); err != nil {
			return err
		}
		if t.Deposit == nil {
			return apperr.New(apperr.InvalidStateTransition, "The transaction has no deposit to refund.")
		}
		return nil
	},
}

// errHeld is what a sale or a refund answers while the screening of the deposit's
// senders does not let the money proceed (screening.go).
var errHeld = apperr.New(apperr.InvalidStateTransition, "The transaction is held for review; its funds cannot be sold or sent back until the review ends.")

// errBlocked is what every action answers on a transaction whose funds were blocked.
var errBlocked = apperr.New(apperr.InvalidStateTransition, "The transaction's funds are blocked; no action applies to it.")

// allows is the table's word on trigger from t's status.
func allows(t *Transaction, trigger Trigger, action string) error {
	if _, ok := Lookup(t.Status, trigger); !ok {
		return errTransition(t, action)
	}
	return nil
}

// failTrigger is how t fails: deposit:failed while its deposit is unconfirmed,
// order:failed once the deposit is confirmed or the order filled.
func failTrigger(t *Transaction) Trigger {
	if t.Status == DepositConfirming && !depositConfirmed(t) {
		return FailDeposit
	}
	return FailOrder
}

// Check returns nil when action applies to t now, else the error the action
// answers (InvalidStateTransition).
func Check(t *Transaction, action OperatorAction) error {
	g, ok := guards[action]
	if !ok {
		return fmt.Errorf("lifecycle: unknown operator action %q", action)
	}
	if t.Screening == ScreeningBlocked {
		return errBlocked
	}
	return g(t)
}

// AllowedActions returns the operator actions that apply to t now, in
// OperatorActions' order (empty, never nil, when none does).
func AllowedActions(t *Transaction) []OperatorAction {
	out := []OperatorAction{}
	for _, a := range OperatorActions {
		if Check(t, a) == nil {
			out = append(out, a)
		}
	}
	return out
}
