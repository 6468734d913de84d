package transactions

import (
	"context"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/chain"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing"
	"partnerd/internal/pricing/quotes"
)

// DecisionTx is the unit of work of a partner's decision (store.Tx): the
// lifecycle's change, the quote an accept is priced by, and the stored answer of
// its Idempotency-Key commit together.
type DecisionTx interface {
	lifecycle.Tx
	// CreateQuote inserts q.
	CreateQuote(ctx context.Context, q *quotes.Quote) error
}

// DestinationScreen screens a refund destination a partner names
// (screening.Service.ScreenDestination): the record to keep, nil when screening
// is off, ServiceUnavailable when it cannot answer now.
type DestinationScreen interface {
	ScreenDestination(ctx context.Context, network, address string) (*lifecycle.ScreeningRecord, error)
}

// Decisions are the partner's decisions on a transaction that waits for one
// ("Partner decisions" in openapi/partner.yaml): accepting an expired short payment
// at a fresh rate, or asking for it back. Whatever reaches the network (the rate
// source, the screeners) is asked before the unit of work begins, so no database
// transaction waits on it; the rules of when each applies are the lifecycle's
// (lifecycle.CheckPartner), so the back office's own decisions and the partner's
// exclude each other by the transaction's row lock and version.
type Decisions struct {
	engine *lifecycle.Engine
	begin  uow.Begin[DecisionTx]
	reader Store
	pricer *pricing.Pricer
	screen DestinationScreen
	now    func() time.Time
}

// NewDecisions returns the partner's decisions; screen is nil when screening is off.
func NewDecisions(engine *lifecycle.Engine, begin uow.Begin[DecisionTx], reader Store, pricer *pricing.Pricer, screen DestinationScreen, now func() time.Time) *Decisions {
	return &Decisions{engine: engine, begin: begin, reader: reader, pricer: pricer, screen: screen, now: now}
}

// Accept takes partnerID's transaction id's short payment at a fresh rate: the
// total received priced as POST /quotes would price it, recorded as a quote used
// at once. Errors: NotFound, InvalidStateTransition, RatesUnavailable,
// AmountOutOfRange (the received amount outside the pair's limits).
func (d *Decisions) Accept(ctx context.Context, run uow.Runner[*lifecycle.Transaction, DecisionTx], partnerID, id uuid.UUID) (*lifecycle.Transaction, error) {
	t, err := d.reader.TransactionByID(ctx, partnerID, id)
	if err != nil {
		return nil, run.Before(ctx, err)
	}
	// Checked before pricing, so a transaction that waits on nothing answers 409
	// whatever the rates; checked again under the row lock in the change.
	if err := lifecycle.CheckPartner(t, lifecycle.PartnerAccept); err != nil {
		return nil, run.Before(ctx, err)
	}
	received := lifecycle.Received(t)
	price, err := d.pricer.Price(ctx, t.Token, t.Network, pricing.Amount{Crypto: &received})
	if err != nil {
		return nil, run.Before(ctx, err)
	}
	return run.Run(ctx, d.begin, func(ctx context.Context, tx DecisionTx) (*lifecycle.Transaction, error) {
		now := d.now()
		q := &quotes.Quote{ID: uuid.New(), PartnerID: partnerID, Token: price.Token, Network: price.Network,
			BaseRate: price.BaseRate, AdjustedRate: price.AdjustedRate, CryptoAmount: price.CryptoAmount, FiatAmount: price.FiatAmount,
			CreatedAt: now, ExpiresAt: now.Add(quotes.TTL), UsedAt: &now}
		if err := tx.CreateQuote(ctx, q); err != nil {
			return nil, err
		}
		return d.engine.AcceptForPartner(ctx, tx, partnerID, id, lifecycle.Reprice{QuoteID: q.ID, Rate: q.AdjustedRate})
	})
}

// Refund asks for partnerID's transaction id's short payment back to address (the
// transaction's refund_address when empty), screened first. Errors:
// InvalidRequest (no address, or not one of the network's), NotFound,
// InvalidStateTransition, ServiceUnavailable (screening cannot answer now).
func (d *Decisions) Refund(ctx context.Context, run uow.Runner[*lifecycle.Transaction, DecisionTx], partnerID, id uuid.UUID, address *string) (*lifecycle.Transaction, error) {
	t, err := d.reader.TransactionByID(ctx, partnerID, id)
	if err != nil {
		return nil, run.Before(ctx, err)
	}
	if err := lifecycle.CheckPartner(t, lifecycle.PartnerRefund); err != nil {
		return nil, run.Before(ctx, err)
	}
	if address == nil {
		address = t.RefundAddress
	}
	if address == nil {
		return nil, run.Before(ctx, apperr.Field(apperr.InvalidRequest,
			"The transaction has no refund_address; give the refund's destination in address.", "/address", "required: the transaction has no refund_address"))
	}
	to, err := refundAddress(t.Network, address, "/address")
	if err != nil {
		return nil, run.Before(ctx, err)
	}
	var screened *lifecycle.ScreeningRecord
	if d.screen != nil {
		if screened, err = d.screen.ScreenDestination(ctx, t.Network, *to); err != nil {
			return nil, run.Before(ctx, err)
		}
	}
	return run.Run(ctx, d.begin, func(ctx context.Context, tx DecisionTx) (*lifecycle.Transaction, error) {
		return d.engine.RequestRefund(ctx, tx, partnerID, id, *to, screened)
	})
}

// refundAddress checks a refund destination given for network (field names it in
// the error) and returns it in the form the service stores addresses; nil stays nil.
func refundAddress(network string, addr *string, field string) (*string, error) {
	if addr == nil {
		return nil, nil
	}
	a, err := chain.ParseAddress(network, *addr)
	if err != nil {
		return nil, apperr.Field(apperr.InvalidRequest, "The refund address is not an address of the transaction's network.", field,
			"an address of "+network+" ("+chain.AddressForm(network)+")")
	}
	out := chain.FormatAddress(network, a)
	return &out, nil
}
