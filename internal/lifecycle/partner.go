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

// PartnerAction names what a partner may do with one of its transactions, as the
// partner API's allowed_actions lists them ("Partner decisions" in
// openapi/partner.yaml).
type PartnerAction string

// The partner actions, in the order allowed_actions lists them.
const (
	PartnerCancel PartnerAction = "cancel"
	PartnerAccept PartnerAction = "accept"
	PartnerRefund PartnerAction = "refund"
)

// PartnerActions lists every partner action.
var PartnerActions = []PartnerAction{PartnerCancel, PartnerAccept, PartnerRefund}

// partnerGuards hold, per partner action, the one rule of when it applies, as
// guards do for the operators': the engine's partner actions check them first and
// AllowedPartnerActions reports them.
var partnerGuards = map[PartnerAction]func(t *Transaction) error{
	PartnerCancel: func(t *Transaction) error { return allows(t, Cancel, "cancelled") },
	PartnerAccept: func(t *Transaction) error { return partnerDecision(t, Accept, "accepted") },
	PartnerRefund: func(t *Transaction) error { return partnerDecision(t, RequestRefund, "refunded") },
}

// errRefundRequested is what an accept answers once the partner asked for the
// short payment back: the first decision wins.
var errRefundRequested = apperr.New(apperr.InvalidStateTransition,
	"A refund of this transaction's short payment was asked for; it can no longer be accepted.")

// shortDecision is the rule shared by every decision on a short payment: the
// transaction expired with its deposit underpaid.
func shortDecision(t *Transaction, action string) error {
	if t.Status != Expired || t.Deposit == nil || t.Deposit.Status != DepositStatusUnderpaid {
		return apperr.New(apperr.InvalidStateTransition,
			fmt.Sprintf("Only an expired transaction with an underpaid deposit can be %s; this one is %s.", action, t.Status))
	}
	return nil
}

// partnerDecision is the partner's accept or refund: a short payment nobody has
// decided on yet, whose funds may move.
func partnerDecision(t *Transaction, trigger Trigger, action string) error {
	if err := shortDecision(t, action); err != nil {
		return err
	}
	if t.RefundRequestedAt != nil {
		return apperr.New(apperr.InvalidStateTransition, "A refund of this transaction's short payment was already asked for.")
	}
	if !t.Screening.Proceeds() {
		return errHeld
	}
	return allows(t, trigger, action)
}

// CheckPartner returns nil when action applies to t now, else the error the
// action answers (InvalidStateTransition).
func CheckPartner(t *Transaction, action PartnerAction) error {
	g, ok := partnerGuards[action]
	if !ok {
		return fmt.Errorf("lifecycle: unknown partner action %q", action)
	}
	if t.Screening == ScreeningBlocked {
		return errBlocked
	}
	return g(t)
}

// AllowedPartnerActions returns the partner actions that apply to t now, in
// PartnerActions' order (empty, never nil, when none does).
func AllowedPartnerActions(t *Transaction) []PartnerAction {
	out := []PartnerAction{}
	for _, a := range PartnerActions {
		if CheckPartner(t, a) == nil {
			out = append(out, a)
		}
	}
	return out
}

// ActionRequired reports whether t waits on its partner's decision: an action
// other than cancelling applies to it.
func ActionRequired(t *Transaction) bool {
	for _, a := range AllowedPartnerActions(t) {
		if a != PartnerCancel {
			return true
		}
	}
	return false
}

// Reprice is the fresh price a partner's accept takes: the quote recorded for it.
type Reprice struct {
	QuoteID uuid.UUID
	Rate    decimal.Decimal
}

// AcceptForPartner is the partner's accept of partnerID's transaction id: the
// short payment proceeds as the operators' Accept makes it, at the fresh rate of
// price (crypto_amount the total received, amount re-priced by
// money.FiatFromTokens, history deposit:accepted with the quote and the old and
// new amounts and rates). Errors: NotFound (another partner's), InvalidStateTransition.
func (l *Engine) AcceptForPartner(ctx context.Context, tx Tx, partnerID, id uuid.UUID, price Reprice) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if t.PartnerID != partnerID {
			return nil, apperr.New(apperr.NotFound, "The transaction was not found.")
		}
		if err := CheckPartner(t, PartnerAccept); err != nil {
			return nil, err
		}
		oldRate := t.Rate
		t.Rate = price.Rate
		return l.accept(ctx, tx, t, now, map[string]any{"by": "partner", "quote_id": price.QuoteID.String(),
			"old_rate": money.FormatRate(oldRate), "new_rate": money.FormatRate(t.Rate)}, nil, "accepted by the partner")
	})
}

// RequestRefund records partnerID's request for transaction id's short payment
// back to address (history refund:requested, the transaction's
// refund_address and refund_requested_at, and the destination on its open short
// refund task, for the operators who send it). screened is the destination's
// screening, made before the unit of work (nil when screening is off): a hit holds
// the transaction for review, with the record as its evidence. Errors: NotFound,
// InvalidStateTransition.
func (l *Engine) RequestRefund(ctx context.Context, tx Tx, partnerID, id uuid.UUID, address string, screened *ScreeningRecord) (*Transaction, error) {
	return l.change(ctx, tx, id, func(ctx context.Context, tx Tx, t *Transaction, now time.Time) ([]step, error) {
		if t.PartnerID != partnerID {
			return nil, apperr.New(apperr.NotFound, "The transaction was not found.")
		}
		if err := CheckPartner(t, PartnerRefund); err != nil {
			return nil, err
		}
		t.RefundAddress, t.RefundRequestedAt = &address, &now
		s, err := move(t, RequestRefund, "refunded", map[string]any{"by": "partner", "refund_address": address})
		if err != nil {
			return nil, err
		}
		if screened != nil {
			rec := *screened
			rec.ID, rec.TransactionID = uuid.New(), t.ID
			if err := tx.InsertScreening(ctx, &rec); err != nil {
				return nil, err
			}
			records, err := tx.ScreeningsOf(ctx, t.ID)
			if err != nil {
				return nil, err
			}
			t.Screening = ScreeningStateOf(t, records, l.failOpen)
		}
		if l.tasks != nil {
			if err := l.tasks.Direct(ctx, tx, t.ID, TaskShort, address); err != nil {
				return nil, err
			}
		}
		return []step{s}, nil
	})
}

// RefundDestinations are where a refund of t goes: the address its partner asked
// for, else its deposits' senders. Whoever sends it screens these.
func RefundDestinations(t *Transaction) []string {
	if t.RefundRequestedAt != nil && t.RefundAddress != nil {
		return []string{*t.RefundAddress}
	}
	return Senders(t)
}
