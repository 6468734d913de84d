// Package transactions creates, reads and lists stablecoin-to-fiat transactions. A
// creation prices the transaction (from a quote or directly), allocates a fresh
// deposit address, and writes the transaction, its first status-history entry and
// its transaction.created event in one database transaction.
package transactions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"partnerd/internal/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/money"
	"partnerd/internal/pricing"
	"partnerd/internal/quotes"
	"partnerd/internal/revenue"
)

// DepositWindow is how long a new transaction waits for its deposit (the seed's
// 30 minutes; configurable so tests need not wait).
const DepositWindow = 30 * time.Minute

// Transaction is one stablecoin-to-fiat transaction.
type Transaction struct {
	ID                uuid.UUID
	PartnerID         uuid.UUID
	MerchantReference string
	// ReferenceKey is ReferenceKey(MerchantReference), unique per partner.
	ReferenceKey   string
	MerchantID     *string
	TerminalID     *string
	SellerPhone    *string
	Token          string
	Network        string
	CryptoAmount   decimal.Decimal
	FiatAmount     decimal.Decimal
	Rate           decimal.Decimal
	QuoteID        *uuid.UUID
	DepositAddress string
	AddressIndex   uint32
	Status         lifecycle.Status
	CreatedAt      time.Time
	UpdatedAt      time.Time
	ExpiresAt      time.Time
	// Deposit is nil until a deposit is detected.
	Deposit *Deposit
	// PayoutSettledAt is when the fiat payout settled, after completion.
	PayoutSettledAt *time.Time
	// Version increases with every change; updates are conditional on it, so of two
	// racing changes exactly one wins.
	Version int64
}

// Deposit is the on-chain deposit of a transaction.
type Deposit struct {
	ID                    string
	Status                string
	Confirmations         int
	RequiredConfirmations int
	// Hash is the chain transaction hash.
	Hash string
	// Amount is the token amount received.
	Amount      decimal.Decimal
	ReceivedAt  time.Time
	ConfirmedAt *time.Time
}

// Deposit statuses.
const (
	DepositConfirming = "confirming"
	DepositConfirmed  = "confirmed"
	DepositUnderpaid  = "underpaid"
	DepositFailed     = "failed"
	DepositRefunded   = "refunded"
)

// HistoryEntry is one status change.
type HistoryEntry struct {
	TransactionID uuid.UUID
	From          lifecycle.Status // lifecycle.None for the creation entry
	To            lifecycle.Status
	Reason        string
	// Metadata holds facts of the change (deposit id, confirmations), or nil.
	Metadata  map[string]any
	ChangedAt time.Time
}

// Event is an outbox row: a webhook event with the exact payload to deliver.
type Event struct {
	ID            uuid.UUID
	PartnerID     uuid.UUID
	TransactionID uuid.UUID
	Type          lifecycle.EventType
	Payload       []byte
	CreatedAt     time.Time
}

// ReferenceKey folds a merchant reference for case-insensitive uniqueness and lookup:
// Unicode NFC normalisation, then full Unicode case folding. Done in Go so that
// PostgreSQL and SQLite (whose lower() folds only ASCII) agree.
func ReferenceKey(ref string) string {
	return cases.Fold().String(norm.NFC.String(ref))
}

// Tx is the unit of work a change runs in (store.Tx implements it). Every write
// of this package goes through it, so none can happen outside a transaction; an
// event appended here is delivered (its job scheduled) exactly when it commits,
// and AfterCommit hooks run only then.
type Tx interface {
	QuoteByID(ctx context.Context, partnerID, id uuid.UUID) (*quotes.Quote, error)
	// MarkQuoteUsed sets used_at if unset and reports whether it did.
	MarkQuoteUsed(ctx context.Context, id uuid.UUID, at time.Time) (bool, error)
	// NextAddressIndex allocates the next derivation index of network.
	NextAddressIndex(ctx context.Context, network string) (uint32, error)
	// InsertTransaction inserts t; a duplicate reference is apperr DuplicateMerchantReference.
	InsertTransaction(ctx context.Context, t *Transaction) error
	InsertHistory(ctx context.Context, h *HistoryEntry) error
	// AppendEvent writes the outbox row and schedules its delivery.
	AppendEvent(ctx context.Context, e *Event) error
	// TransactionForUpdate returns transaction id of any partner, with its deposit.
	TransactionForUpdate(ctx context.Context, id uuid.UUID) (*Transaction, error)
	// UpdateTransaction writes t's status, updated_at and payout_settled_at and
	// bumps its version, if its version is still t.Version; it reports whether it did.
	UpdateTransaction(ctx context.Context, t *Transaction) (bool, error)
	// SaveDeposit inserts or updates the deposit of transaction id.
	SaveDeposit(ctx context.Context, id uuid.UUID, d *Deposit) error
	InsertRevenue(ctx context.Context, r *revenue.Row) error
	// PartnerRates returns the fee and share rates of a partner.
	PartnerRates(ctx context.Context, partnerID uuid.UUID) (fee, share decimal.Decimal, err error)
	// InsertFill records an operator's executed sale.
	InsertFill(ctx context.Context, f *Fill) error
	// ScheduleStep inserts the job that runs Lifecycle.RunStep(id, step) at at.
	ScheduleStep(ctx context.Context, id uuid.UUID, step string, at time.Time) error
	// AfterCommit runs f once the unit of work has committed.
	AfterCommit(f func())
}

// Store reads transactions and opens units of work.
type Store interface {
	// WithTx runs fn in a unit of work, joining the one ctx carries, if any.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// TransactionByID and TransactionByReference return apperr NotFound for an
	// unknown or another partner's transaction.
	TransactionByID(ctx context.Context, partnerID, id uuid.UUID) (*Transaction, error)
	TransactionByReference(ctx context.Context, partnerID uuid.UUID, referenceKey string) (*Transaction, error)
	ListTransactions(ctx context.Context, partnerID uuid.UUID, q ListQuery) ([]*Transaction, error)
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
}

// Service creates and reads transactions.
type Service struct {
	observer  Observer
	store     Store
	pricer    *pricing.Pricer
	addresses Addresses
	window    time.Duration
	now       func() time.Time
}

// NewService returns a Service; window is how long a transaction awaits its
// deposit (DepositWindow in production). Expiry needs nothing scheduled: the
// expiry sweep finds the transaction by its deadline.
func NewService(store Store, pricer *pricing.Pricer, addresses Addresses, window time.Duration, now func() time.Time) *Service {
	return &Service{store: store, pricer: pricer, addresses: addresses, window: window, now: now}
}

// Create creates a transaction for partnerID. Errors: InvalidRequest (both or
// neither pricing mode, bad amount or reference), NotFound (unknown quote),
// QuoteMismatch, QuoteAlreadyUsed, QuoteExpired, UnsupportedPair,
// AmountOutOfRange, RatesUnavailable, DuplicateMerchantReference.
func (s *Service) Create(ctx context.Context, partnerID uuid.UUID, req CreateRequest) (*Transaction, error) {
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
		// Priced before the database transaction: the rate source may be slow.
		if direct, err = s.pricer.Price(ctx, req.Token, req.Network, pricing.Amount{Fiat: &fiat}); err != nil {
			return nil, err
		}
	} else if _, err := s.pricer.Pair(req.Token, req.Network); err != nil {
		return nil, err
	}

	var out *Transaction
	err := s.store.WithTx(ctx, func(ctx context.Context, tx Tx) error {
		now := s.now()
		t := &Transaction{
			ID:                uuid.New(),
			PartnerID:         partnerID,
			MerchantReference: req.MerchantReference,
			ReferenceKey:      ReferenceKey(req.MerchantReference),
			MerchantID:        req.MerchantID,
			TerminalID:        req.TerminalID,
			SellerPhone:       req.SellerPhone,
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
				return err
			}
			t.QuoteID, t.Rate, t.CryptoAmount, t.FiatAmount = &q.ID, q.AdjustedRate, q.CryptoAmount, q.FiatAmount
		} else {
			t.Rate, t.CryptoAmount, t.FiatAmount = direct.AdjustedRate, direct.CryptoAmount, direct.FiatAmount
		}
		idx, err := tx.NextAddressIndex(ctx, t.Network)
		if err != nil {
			return err
		}
		if t.DepositAddress, err = s.addresses.Address(t.Network, idx); err != nil {
			return fmt.Errorf("derive %s address %d: %w", t.Network, idx, err)
		}
		t.AddressIndex = idx
		if err := tx.InsertTransaction(ctx, t); err != nil {
			return err
		}
		created := lifecycle.MustLookup(lifecycle.None, lifecycle.Create)
		if err := Record(ctx, tx, t, created, nil, now); err != nil {
			return err
		}
		if s.observer != nil {
			tx.AfterCommit(func() { s.observer.Transitioned(t, created) })
		}
		out = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Observe sets the observer of created transactions (told after commit).
func (s *Service) Observe(o Observer) { s.observer = o }

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
	if strings.IndexFunc(ref, unicode.IsControl) >= 0 {
		return apperr.Field(apperr.InvalidRequest, "The merchant_reference is invalid.", "/merchant_reference", "no control characters")
	}
	return nil
}

// Get returns partnerID's transaction id, or apperr NotFound.
func (s *Service) Get(ctx context.Context, partnerID, id uuid.UUID) (*Transaction, error) {
	return s.store.TransactionByID(ctx, partnerID, id)
}

// GetByReference returns partnerID's transaction with merchant reference ref in any
// letter case, or apperr NotFound.
func (s *Service) GetByReference(ctx context.Context, partnerID uuid.UUID, ref string) (*Transaction, error) {
	return s.store.TransactionByReference(ctx, partnerID, ReferenceKey(ref))
}

// Record writes the history entry of transition tr of t and, when tr has one, its
// event with t's snapshot as payload, in tx, the unit of work that changed t (with
// t already in its new state), so the three commit together.
func Record(ctx context.Context, tx Tx, t *Transaction, tr lifecycle.Transition, metadata map[string]any, at time.Time) error {
	if err := tx.InsertHistory(ctx, &HistoryEntry{
		TransactionID: t.ID, From: tr.From, To: tr.To, Reason: tr.Reason, Metadata: metadata, ChangedAt: at,
	}); err != nil {
		return err
	}
	if tr.Event == "" {
		return nil
	}
	ev := &Event{ID: uuid.New(), PartnerID: t.PartnerID, TransactionID: t.ID, Type: tr.Event, CreatedAt: at}
	payload, err := json.Marshal(Payload{ID: ev.ID, Type: string(ev.Type), CreatedAt: at, Data: t.Snapshot()})
	if err != nil {
		return err
	}
	ev.Payload = payload
	return tx.AppendEvent(ctx, ev)
}
