// Package quotes issues short-lived, single-use price quotes. A quote fixes the rate
// and both amounts for 120 seconds; a transaction in quote mode consumes it.
package quotes

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/pricing"
	"partnerd/internal/pricing/money"
)

// TTL is how long a quote stays usable.
const TTL = 120 * time.Second

// Quote is a stored price for one partner.
type Quote struct {
	ID           uuid.UUID
	PartnerID    uuid.UUID
	Token        string
	Network      string
	BaseRate     decimal.Decimal
	AdjustedRate decimal.Decimal
	CryptoAmount decimal.Decimal
	FiatAmount   decimal.Decimal
	CreatedAt    time.Time
	ExpiresAt    time.Time
	// UsedAt is set when a transaction consumed the quote.
	UsedAt *time.Time
}

// Tx is the unit of work a quote is stored in.
type Tx interface {
	// A keyed request's answer is stored in it (idempotency.Run).
	idempotency.Keeper
	// AfterCommit runs f once the unit of work has committed.
	AfterCommit(f func())
	// CreateQuote inserts q.
	CreateQuote(ctx context.Context, q *Quote) error
}

// Store persists quotes.
type Store interface {
	// WithTx runs fn in a unit of work of its own.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// Request asks for a quote: exactly one of CryptoAmount and FiatAmount, as the
// decimal strings the partner sent.
type Request struct {
	Token        string
	Network      string
	CryptoAmount *string
	FiatAmount   *string
}

// Service creates quotes.
type Service struct {
	pricer *pricing.Pricer
	store  Store
	now    func() time.Time
}

// NewService returns a Service.
func NewService(pricer *pricing.Pricer, store Store, now func() time.Time) *Service {
	return &Service{pricer: pricer, store: store, now: now}
}

// Create prices req for partnerID and stores the quote. Errors: InvalidRequest (both
// or neither amount, bad format), UnsupportedPair, AmountOutOfRange, RatesUnavailable.
// run is how its caller has it run (uow.Plain, or under its request's key:
// idempotency.Keyed): a failure while pricing still replays the answer stored
// for an earlier success.
func (s *Service) Create(ctx context.Context, run uow.Runner[*Quote, Tx], partnerID uuid.UUID, req Request) (*Quote, error) {
	amt, err := parseAmount(req)
	if err != nil {
		return nil, err
	}
	price, err := s.pricer.Price(ctx, req.Token, req.Network, amt)
	if err != nil {
		return nil, run.Before(ctx, err)
	}
	// The unit of work begins once the amount is priced: the quote and, under an
	// Idempotency-Key, the stored answer commit together.
	return run.Run(ctx, s.store.WithTx, func(ctx context.Context, tx Tx) (*Quote, error) {
		return s.insert(ctx, tx, partnerID, price)
	})
}

// insert stores a quote of price for partnerID.
func (s *Service) insert(ctx context.Context, tx Tx, partnerID uuid.UUID, price pricing.Price) (*Quote, error) {
	now := s.now()
	q := &Quote{
		ID:           uuid.New(),
		PartnerID:    partnerID,
		Token:        price.Token,
		Network:      price.Network,
		BaseRate:     price.BaseRate,
		AdjustedRate: price.AdjustedRate,
		CryptoAmount: price.CryptoAmount,
		FiatAmount:   price.FiatAmount,
		CreatedAt:    now,
		ExpiresAt:    now.Add(TTL),
	}
	if err := tx.CreateQuote(ctx, q); err != nil {
		return nil, err
	}
	return q, nil
}

func parseAmount(req Request) (pricing.Amount, error) {
	if (req.CryptoAmount == nil) == (req.FiatAmount == nil) {
		return pricing.Amount{}, apperr.New(apperr.InvalidRequest, "Send exactly one of crypto_amount and fiat_amount.")
	}
	if req.FiatAmount != nil {
		v, err := money.ParseFiat(*req.FiatAmount)
		if err != nil {
			return pricing.Amount{}, apperr.Field(apperr.InvalidRequest, "The fiat_amount is invalid.", "/fiat_amount", err.Error())
		}
		return pricing.Amount{Fiat: &v}, nil
	}
	v, err := money.ParseTokens(*req.CryptoAmount)
	if err != nil {
		return pricing.Amount{}, apperr.Field(apperr.InvalidRequest, "The crypto_amount is invalid.", "/crypto_amount", err.Error())
	}
	return pricing.Amount{Crypto: &v}, nil
}
