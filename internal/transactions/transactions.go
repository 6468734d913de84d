// Package transactions creates, reads and lists stablecoin-to-fiat transactions. A
// creation prices the transaction (from a quote or directly), allocates a fresh
// deposit address, and writes the transaction, its first status-history entry and
// its transaction.created event in one database transaction.
package transactions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/textrule"
	"partnerd/internal/kit/uow"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing"
	"partnerd/internal/pricing/money"
	"partnerd/internal/pricing/quotes"
)

// DepositWindow is how long a new transaction waits for its deposit (the seed's
// 30 minutes; configurable so tests need not wait).
const DepositWindow = 30 * time.Minute

// ReferenceKey folds a merchant reference for case-insensitive uniqueness and lookup:
// Unicode NFC normalisation, then full Unicode case folding. Done in Go so that
// PostgreSQL and SQLite (whose lower() folds only ASCII) agree.
func ReferenceKey(ref string) string {
	return cases.Fold().String(norm.NFC.String(ref))
}

// Tx is the unit of work a transaction is created in (store.Tx implements it):
// the quote it uses, its deposit address index, the row, and its first history
// entry and event (lifecycle.Recorder) commit together.
type Tx interface {
	lifecycle.Recorder
	// A keyed request's answer is stored in it (idempotency.Run).
	idempotency.Keeper
	// QuoteByID returns partnerID's quote id, or apperr NotFound.
	QuoteByID(ctx context.Context, partnerID, id uuid.UUID) (*quotes.Quote, error)
	// MarkQuoteUsed sets used_at if unset and reports whether it did.
	MarkQuoteUsed(ctx context.Context, id uuid.UUID, at time.Time) (bool, error)
	// NextAddressIndex allocates the next derivation index of network.
	NextAddressIndex(ctx context.Context, network string) (uint32, error)
	// ReleaseAddressIndex hands back an index NextAddressIndex allocated in this
	// unit of work and that no transaction took, so the next creation uses it and a
	// failed request leaves no unused address behind.
	ReleaseAddressIndex(ctx context.Context, network string, index uint32) error
	// InsertTransaction inserts t; a duplicate reference is apperr DuplicateMerchantReference.
	InsertTransaction(ctx context.Context, t *lifecycle.Transaction) error
}

// Store reads transactions and opens units of work.
type Store interface {
	// WithTx runs fn in a unit of work, which fn is handed.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// TransactionByID and TransactionByReference return apperr NotFound for an
	// unknown or another partner's transaction.
	TransactionByID(ctx context.Context, partnerID, id uuid.UUID) (*lifecycle.Transaction, error)
	TransactionByReference(ctx context.Context, partnerID uuid.UUID, referenceKey string) (*lifecycle.Transaction, error)
	// ListTransactions returns a page of partnerID's transactions, each Deposit
	// holding its status only.
	ListTransactions(ctx context.Context, partnerID uuid.UUID, q ListQuery) ([]*lifecycle.Transaction, error)
	// DueForExpiry returns up to limit transactions awaiting deposit past their deadline.
	DueForExpiry(ctx context.Context, now time.Time, limit int) ([]uuid.UUID, error)
}

// Addresses derives deposit addresses.
type Addresses interface {
	// Address returns the deposit address at index on network.
	Address(network string, index uint32) (string, error)
}

// CreateRequest is a validated create request. Exactly one of QuoteID (quote mode)
// and FiatAmount (direct mode) is set.
type CreateRequest struct {
	MerchantReference string
	Token             string
	Network           string
	QuoteID           *uuid.UUID
	FiatAmount        *string
	MerchantID        *string
	TerminalID        *string
	SellerPhone       *string
	// RefundAddress is where a refund goes if the partner asks for one.
	RefundAddress *string
}

// Service creates and reads transactions.
type Service struct {
	observer  lifecycle.Observer
	store     Store
	pricer    *pricing.Pricer
	addresses Addresses
	window    time.Duration
	now       func() time.Time
}

// NewService returns a Service; window is how long a transaction awaits its
// deposit (DepositWindow in production), observer (nil for none) hears of each
// created transaction after its commit. Expiry needs nothing scheduled: the
// expiry sweep finds the transaction by its deadline.
func NewService(store Store, pricer *pricing.Pricer, addresses Addresses, window time.Duration, now func() time.Time, observer lifecycle.Observer) *Service {
	return &Service{store: store, pricer: pricer, addresses: addresses, window: window, now: now, observer: observer}
}

// Create creates a transaction for partnerID. Errors: InvalidRequest (both or
// neither pricing mode, bad amount or reference), NotFound (unknown quote),
// QuoteMismatch, QuoteAlreadyUsed, QuoteExpired, UnsupportedPair,
// AmountOutOfRange, RatesUnavailable, DuplicateMerchantReference.
//
// run is how its caller has it run (uow.Plain, or under its request's
// Idempotency-Key: idempotency.Keyed): a failure before the unit of work (the
// rates source down) still replays the answer stored for an earlier success.
func (s *Service) Create(ctx context.Context, run uow.Runner[*lifecycle.Transaction, Tx], partnerID uuid.UUID, req CreateRequest) (*lifecycle.Transaction, error) {
	if (req.QuoteID == nil) == (req.FiatAmount == nil) {
		return nil, apperr.New(apperr.InvalidRequest, "Send exactly one pricing mode: quote_id (quote mode) or fiat_amount (direct mode).")
	}
	if err := checkReference(req.MerchantReference); err != nil {
		return nil, err
	}
	var direct pricing.Price
	if req.FiatAmount != nil {
		fiat, err := money.ParseFiat(*req.FiatAmount)
		if err != nil {
			return nil, apperr.Field(apperr.InvalidRequest, "The fiat_amount is invalid.", "/fiat_amount", err.Error())
		}
		if direct, err = s.pricer.Price(ctx, req.Token, req.Network, pricing.Amount{Fiat: &fiat}); err != nil {
			return nil, run.Before(ctx, err)
		}
	} else if _, err := s.pricer.Pair(req.Token, req.Network); err != nil {
		return nil, run.Before(ctx, err)
	}
	refundTo, err := refundAddress(req.Network, req.RefundAddress, "/refund_address")
	if err != nil {
		return nil, err
	}

	// The unit of work begins here, after the pricing (the rate source may be
	// slow): the key's claim, the transaction, its history, event and stored answer
	// commit together.
	return run.Run(ctx, s.store.WithTx, func(ctx context.Context, tx Tx) (*lifecycle.Transaction, error) {
		now := s.now()
		t := &lifecycle.Transaction{
			ID:                uuid.New(),
			PartnerID:         partnerID,
			MerchantReference: req.MerchantReference,
			ReferenceKey:      ReferenceKey(req.MerchantReference),
			MerchantID:        req.MerchantID,
			TerminalID:        req.TerminalID,
			SellerPhone:       req.SellerPhone,
			RefundAddress:     refundTo,
			Token:             req.Token,
			Network:           req.Network,
			Status:            lifecycle.AwaitingDeposit,
			CreatedAt:         now,
			UpdatedAt:         now,
			ExpiresAt:         now.Add(s.window),
		}
		if req.QuoteID != nil {
			q, err := useQuote(ctx, tx, partnerID, *req.QuoteID, req, now)
			if err != nil {
				return nil, err
			}
			t.QuoteID, t.Rate, t.CryptoAmount, t.FiatAmount = &q.ID, q.AdjustedRate, q.CryptoAmount, q.FiatAmount
		} else {
			t.Rate, t.CryptoAmount, t.FiatAmount = direct.AdjustedRate, direct.CryptoAmount, direct.FiatAmount
		}
		idx, err := tx.NextAddressIndex(ctx, t.Network)
		if err != nil {
			return nil, err
		}
		if t.DepositAddress, err = s.addresses.Address(t.Network, idx); err != nil {
			return nil, fmt.Errorf("derive %s address %d: %w", t.Network, idx, err)
		}
		t.AddressIndex = idx
		if err := tx.InsertTransaction(ctx, t); err != nil {
			// Not inserted (a duplicate reference): the index goes back, so a
			// failed create leaves no unused address between used ones.
			if rerr := tx.ReleaseAddressIndex(ctx, t.Network, idx); rerr != nil {
				return nil, errors.Join(err, rerr)
			}
			return nil, err
		}
		created := lifecycle.MustLookup(lifecycle.None, lifecycle.Create)
		if err := lifecycle.Record(ctx, tx, t, created, nil, now); err != nil {
			return nil, err
		}
		if s.observer != nil {
			tx.AfterCommit(func() { s.observer.Transitioned(t, created) })
		}
		return t, nil
	})
}

// useQuote checks the quote against the request and marks it used.
func useQuote(ctx context.Context, tx Tx, partnerID, id uuid.UUID, req CreateRequest, now time.Time) (*quotes.Quote, error) {
	q, err := tx.QuoteByID(ctx, partnerID, id)
	if err != nil {
		if apperr.CodeOf(err) == apperr.NotFound {
			return nil, apperr.Field(apperr.NotFound, "The quote was not found.", "/quote_id", "no such quote for this partner")
		}
		return nil, err
	}
	if q.Token != req.Token || q.Network != req.Network {
		return nil, apperr.Field(apperr.QuoteMismatch,
			fmt.Sprintf("The quote is for %s on %s, not %s on %s.", q.Token, q.Network, req.Token, req.Network),
			"/quote_id", "token and network must equal the quote's")
	}
	if q.UsedAt != nil {
		return nil, apperr.Field(apperr.QuoteAlreadyUsed, "The quote was already used by a transaction.", "/quote_id", "request a new quote")
	}
	if !now.Before(q.ExpiresAt) {
		return nil, apperr.Field(apperr.QuoteExpired, "The quote has expired.", "/quote_id", "expired at "+q.ExpiresAt.Format(time.RFC3339))
	}
	ok, err := tx.MarkQuoteUsed(ctx, q.ID, now)
	if err != nil {
		return nil, err
	}
	if !ok { // used concurrently since we read it
		return nil, apperr.Field(apperr.QuoteAlreadyUsed, "The quote was already used by a transaction.", "/quote_id", "request a new quote")
	}
	return q, nil
}

func checkReference(ref string) error {
	n := len([]rune(ref))
	if n < 1 || n > 255 {
		return apperr.Field(apperr.InvalidRequest, "The merchant_reference is invalid.", "/merchant_reference", "1 to 255 characters")
	}
	if strings.IndexFunc(ref, unicode.IsControl) >= 0 || textrule.Has(ref) {
		return apperr.Field(apperr.InvalidRequest, "The merchant_reference is invalid.", "/merchant_reference", "no control characters")
	}
	return nil
}

// Get returns partnerID's transaction id, or apperr NotFound.
func (s *Service) Get(ctx context.Context, partnerID, id uuid.UUID) (*lifecycle.Transaction, error) {
	return s.store.TransactionByID(ctx, partnerID, id)
}

// GetByReference returns partnerID's transaction with merchant reference ref in any
// letter case, or apperr NotFound.
func (s *Service) GetByReference(ctx context.Context, partnerID uuid.UUID, ref string) (*lifecycle.Transaction, error) {
	return s.store.TransactionByReference(ctx, partnerID, ReferenceKey(ref))
}
