// Package lifecycle is the transaction state machine and the engine that runs it.
//
// lifecycle.go is the table: the statuses, and every allowed transition with its
// trigger, history reason and webhook event; nothing else decides whether a
// transition is allowed (openapi/partner.yaml documents the same table).
// transaction.go holds the transaction, its deposit, history and outbox event, and
// Tx, the unit of work every change runs in. engine.go is the Engine, the one code
// path every change takes (expiry sweep, cancel, sandbox simulator, operator
// actions in operator.go, chain transfers in transfers.go): a version-conditional
// update, its history row and its event, committed together. payments.go holds the
// rules both the chain and the simulator count transfers by (partial payments,
// tolerance, dust, overpayment, short at expiry, the late window) and the refund
// tasks they leave for the operators. What the chain watcher keeps of the chain
// (transfers, cursors) is package deposits, which applies each transfer through
// transfers.go.
package lifecycle

import "fmt"

// Status is a transaction's state.
type Status string

// The statuses.
const (
	AwaitingDeposit   Status = "awaiting_deposit"
	DepositConfirming Status = "deposit_confirming"
	OrderFilled       Status = "order_filled"
	Completed         Status = "completed"
	Cancelled         Status = "cancelled"
	Failed            Status = "failed"
	Expired           Status = "expired"
	Refunded          Status = "refunded"
)

// Statuses lists every status.
var Statuses = []Status{AwaitingDeposit, DepositConfirming, OrderFilled, Completed, Cancelled, Failed, Expired, Refunded}

// Trigger is what causes a transition.
type Trigger string

// The triggers.
const (
	Create         Trigger = "create"
	Cancel         Trigger = "cancel"
	Expire         Trigger = "expire"
	DetectDeposit  Trigger = "deposit_detected"
	ConfirmDeposit Trigger = "deposit_confirmed"
	FillOrder      Trigger = "order_filled"
	Settle         Trigger = "settle"
	FailDeposit    Trigger = "deposit_failed"
	FailOrder      Trigger = "order_failed"
	Refund         Trigger = "refund"
	SettlePayout   Trigger = "payout_settled"
	// ReorgDeposit and ReorgDepositLate undo a detected deposit whose block left the
	// canonical chain: back to awaiting_deposit, or to expired past the deadline.
	ReorgDeposit     Trigger = "deposit_reorged"
	ReorgDepositLate Trigger = "deposit_reorged_late"
	// DetectPartial counts a transfer that leaves the total short (payments.go).
	DetectPartial Trigger = "deposit_partial"
	// Accept lets an operator proceed with an expired transaction's short payment.
	Accept Trigger = "deposit_accepted"
	// BlockFunds is an operator's decision to block a held transaction's funds
	// (screening.go): it fails, for good.
	BlockFunds Trigger = "funds_blocked"
	// RequestRefund records the partner's request for an expired transaction's
	// short payment back (partner.go); the status stays, the operators send it.
	RequestRefund Trigger = "refund_requested"
)

// EventType is a webhook event type.
type EventType string

// The webhook event types.
const (
	EventCreated          EventType = "transaction.created"
	EventCompleted        EventType = "transaction.completed"
	EventDepositDetected  EventType = "deposit.detected"
	EventDepositConfirmed EventType = "deposit.confirmed"
	EventFailed           EventType = "transaction.failed"
	EventExpired          EventType = "transaction.expired"
	EventRefunded         EventType = "transaction.refunded"
	EventPayoutSettled    EventType = "payout.settled"
)

// None is the "from" of the creation transition: there is no status before it.
const None Status = ""

// Transition is one row of the table.
type Transition struct {
	From    Status
	Trigger Trigger
	To      Status
	// Reason is the status-history reason, "actor:action".
	Reason string
	// Event is the webhook event the transition emits ("" for none).
	Event EventType
}

// Table is every allowed transition. A (from, trigger) pair not listed is refused
// with apperr InvalidStateTransition by whoever asks Lookup.
var Table = []Transition{
	{None, Create, AwaitingDeposit, "transaction:created", EventCreated},
	{AwaitingDeposit, Cancel, Cancelled, "partner:cancelled", ""},
	{AwaitingDeposit, Expire, Expired, "system:expired", EventExpired},
	// A transfer that leaves the total short keeps the status (a late one within the
	// window keeps expired); the one that completes it moves to deposit_confirming.
	{AwaitingDeposit, DetectPartial, AwaitingDeposit, "deposit:partial", EventDepositDetected},
	{Expired, DetectPartial, Expired, "deposit:partial", EventDepositDetected},
	{AwaitingDeposit, DetectDeposit, DepositConfirming, "deposit:detected", EventDepositDetected},
	{Expired, DetectDeposit, DepositConfirming, "deposit:detected", EventDepositDetected},
	// The partner or an operator accepts what an expired transaction received (no
	// event: the next one carries the re-priced amount).
	{Expired, Accept, DepositConfirming, "deposit:accepted", ""},
	// The partner asks for an expired transaction's short payment back; the
	// operators' refund (Refund) follows.
	{Expired, RequestRefund, Expired, "refund:requested", ""},
	// Confirmation and the sell order are two history entries with one event:
	// deposit:confirmed keeps the status, order:filled moves it on.
	{DepositConfirming, ConfirmDeposit, DepositConfirming, "deposit:confirmed", EventDepositConfirmed},
	{DepositConfirming, FillOrder, OrderFilled, "order:filled", ""},
	{OrderFilled, Settle, Completed, "order:settled", EventCompleted},
	{DepositConfirming, FailDeposit, Failed, "deposit:failed", EventFailed},
	// A confirmed deposit waiting for its fill whose sale failed.
	{DepositConfirming, FailOrder, Failed, "order:failed", EventFailed},
	// Chain deposits: a reorganised-away block undoes the detection (no event: the
	// deposit never confirmed).
	{DepositConfirming, ReorgDeposit, AwaitingDeposit, "deposit:reorged", ""},
	{DepositConfirming, ReorgDepositLate, Expired, "deposit:reorged", ""},
	{OrderFilled, FailOrder, Failed, "order:failed", EventFailed},
	{Failed, Refund, Refunded, "deposit:refunded", EventRefunded},
	{Expired, Refund, Refunded, "deposit:refunded", EventRefunded},
	{Completed, SettlePayout, Completed, "payout:settled", EventPayoutSettled},
	// Blocked funds (screening.go): the transaction fails and stays failed (the
	// guards refuse every action on it); the reason names no cause, as the partner
	// must not learn it.
	{AwaitingDeposit, BlockFunds, Failed, "review:failed", EventFailed},
	{DepositConfirming, BlockFunds, Failed, "review:failed", EventFailed},
	{Expired, BlockFunds, Failed, "review:failed", EventFailed},
}

// Lookup returns the transition for trigger from status from, or false when the
// table does not allow it.
func Lookup(from Status, trigger Trigger) (Transition, bool) {
	for _, t := range Table {
		if t.From == from && t.Trigger == trigger {
			return t, true
		}
	}
	return Transition{}, false
}

// MustLookup is Lookup for transitions the caller knows exist (such as creation).
func MustLookup(from Status, trigger Trigger) Transition {
	t, ok := Lookup(from, trigger)
	if !ok {
		panic(fmt.Sprintf("lifecycle: no transition %q from %q", trigger, from))
	}
	return t
}
