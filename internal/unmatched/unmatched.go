// Package unmatched keeps the deposits that matched no open transaction: a transfer
// to an address no transaction owns, or to the address of a transaction that no
// longer takes deposits (completed, cancelled, refunded). The chain watcher records
// them (Record, idempotent per transfer); an operator lists them and resolves each
// one, by refunding it on chain or crediting it another way.
package unmatched

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/apperr"
	"partnerd/internal/cursor"
)

// Status of an unmatched deposit.
type Status string

// The statuses: Open until an operator resolves it as Refunded or Credited.
const (
	Open     Status = "open"
	Refunded Status = "refunded"
	Credited Status = "credited"
)

// Deposit is one unmatched transfer. (Network, TxHash, LogIndex) identify it on chain.
type Deposit struct {
	ID        uuid.UUID
	Network   string
	TxHash    string
	LogIndex  int
	ToAddress string
	// Amount is the token amount; RawAmount the on-chain integer in the token's
	// smallest unit, as the log carried it.
	Amount      decimal.Decimal
	RawAmount   string
	BlockNumber int64
	// TransactionID is the transaction owning ToAddress, when one does.
	TransactionID *uuid.UUID
	Status        Status
	// Resolution: the refund's chain hash, the operator's note, who and when.
	ResolutionTxHash *string
	ResolutionNote   *string
	ResolvedBy       *uuid.UUID
	ResolvedAt       *time.Time
	CreatedAt        time.Time
}

// Resolution is how an operator closed a deposit.
type Resolution struct {
	Status     Status // Refunded or Credited
	TxHash     *string
	Note       *string
	OperatorID uuid.UUID
	At         time.Time
}

// Store persists unmatched deposits.
type Store interface {
	// InsertUnmatchedDeposit inserts d unless a deposit with its (network, tx_hash,
	// log_index) exists, and returns the stored one.
	InsertUnmatchedDeposit(ctx context.Context, d *Deposit) (*Deposit, error)
	// UnmatchedDeposit returns deposit id, or apperr NotFound.
	UnmatchedDeposit(ctx context.Context, id uuid.UUID) (*Deposit, error)
	// ListUnmatchedDeposits returns up to limit deposits in status, newest first
	// (created_at, id descending), after pos when set.
	ListUnmatchedDeposits(ctx context.Context, status Status, after *cursor.Position, limit int) ([]*Deposit, error)
	// ResolveUnmatchedDeposit closes deposit id if it is still open, reporting whether it did.
	ResolveUnmatchedDeposit(ctx context.Context, id uuid.UUID, r Resolution) (bool, error)
	// DeleteOpenUnmatchedDeposit deletes the transfer's deposit if it is still open.
	DeleteOpenUnmatchedDeposit(ctx context.Context, network, txHash string, logIndex int) error
}

// Service records, lists and resolves unmatched deposits.
type Service struct {
	store Store
	codec *cursor.Codec
	now   func() time.Time
}

// NewService returns a Service signing list cursors with codec.
func NewService(store Store, codec *cursor.Codec, now func() time.Time) *Service {
	return &Service{store: store, codec: codec, now: now}
}

// Record stores an unmatched transfer as open and returns it; recording the same
// transfer again returns the first record unchanged (the watcher may rescan blocks).
func (s *Service) Record(ctx context.Context, d Deposit) (*Deposit, error) {
	d.ID = uuid.New()
	d.Status = Open
	d.CreatedAt = s.now()
	d.ResolutionTxHash, d.ResolutionNote, d.ResolvedBy, d.ResolvedAt = nil, nil, nil, nil
	return s.store.InsertUnmatchedDeposit(ctx, &d)
}

// Forget removes the open record of a transfer whose block was reorganised away
// (nothing arrived); a resolved one is kept, for its audit trail.
func (s *Service) Forget(ctx context.Context, network, txHash string, logIndex int) error {
	return s.store.DeleteOpenUnmatchedDeposit(ctx, network, txHash, logIndex)
}

// Page is one page of unmatched deposits.
type Page struct {
	Items      []*Deposit
	HasMore    bool
	Limit      int
	NextCursor *string
}

// List returns a page of the deposits in status, newest first. Errors: InvalidCursor.
func (s *Service) List(ctx context.Context, status Status, limit int, after string) (*Page, error) {
	limit = cursor.Limit(limit)
	scope := fmt.Sprintf(`{"list":"unmatched_deposits","status":%q}`, status)
	pos, err := s.codec.After(after, scope)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListUnmatchedDeposits(ctx, status, pos, limit+1)
	if err != nil {
		return nil, err
	}
	p := &Page{Limit: limit}
	p.Items, p.HasMore, p.NextCursor = cursor.Trim(s.codec, scope, rows, limit, func(d *Deposit) cursor.Position {
		return cursor.Position{Time: d.CreatedAt, ID: d.ID.String()}
	})
	return p, nil
}

// Resolve closes an open deposit as refunded (txHash required: the refund's chain
// transaction) or credited (note required). Errors: NotFound, InvalidRequest,
// InvalidStateTransition when it is no longer open.
func (s *Service) Resolve(ctx context.Context, id uuid.UUID, operatorID uuid.UUID, action Status, txHash, note *string) (*Deposit, error) {
	switch action {
	case Refunded:
		if txHash == nil {
			return nil, apperr.Field(apperr.InvalidRequest, "A refund needs the refund's chain transaction.", "/tx_hash", "is required when action is refunded")
		}
	case Credited:
		if note == nil {
			return nil, apperr.Field(apperr.InvalidRequest, "A credit needs a note saying how it was credited.", "/note", "is required when action is credited")
		}
	default:
		return nil, apperr.Field(apperr.InvalidRequest, "Unknown action.", "/action", "refunded or credited")
	}
	d, err := s.store.UnmatchedDeposit(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.Status != Open {
		return nil, apperr.New(apperr.InvalidStateTransition, fmt.Sprintf("The deposit is already %s.", d.Status))
	}
	ok, err := s.store.ResolveUnmatchedDeposit(ctx, id, Resolution{Status: action, TxHash: txHash, Note: note, OperatorID: operatorID, At: s.now()})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.New(apperr.InvalidStateTransition, "The deposit was resolved concurrently.")
	}
	return s.store.UnmatchedDeposit(ctx, id)
}
