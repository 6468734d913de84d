// Package batches records the back office's batches: one bank transfer paying a
// partner for many transactions or for one (a payout) and one liquidity order
// filling many (a fill). A batch is all or none: every transaction is checked
// first, then each takes the engine's own per-transaction action (the same history
// entry and event as the single action) in the one unit of work that also stores
// the batch and its audit rows.
package batches

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/money"
)

// Kind is a batch's kind.
type Kind string

// The kinds.
const (
	Payout Kind = "payout"
	Fill   Kind = "fill"
)

// Batch is one payout or fill.
type Batch struct {
	ID   uuid.UUID
	Kind Kind
	// PartnerID is the partner paid (payouts only).
	PartnerID *uuid.UUID
	Reference string
	// Rate is the executed rate (fills only).
	Rate           *decimal.Decimal
	FiatAmount     decimal.Decimal
	CryptoAmount   decimal.Decimal
	TransactionIDs []uuid.UUID
	// TransactionCount is how many transactions the batch holds when a list
	// counted them without reading their ids (Query.CountOnly); see Size.
	TransactionCount int
	// OperatorID is the operator who recorded the batch; the nil UUID for a
	// payout the service recorded (a simulated or automatic payout, a payout of
	// one; System).
	OperatorID uuid.UUID
	CreatedAt  time.Time
}

// System reports whether the service recorded b (a simulated or automatic
// payout), not an operator.
func (b *Batch) System() bool { return b.OperatorID == uuid.Nil }

// Size is how many transactions the batch holds, whether their ids were read or
// only counted (Query.CountOnly).
func (b *Batch) Size() int {
	if b.TransactionIDs != nil {
		return len(b.TransactionIDs)
	}
	return b.TransactionCount
}

// Query selects batches for one page: of Kind, of PartnerID when set, created
// within From and To (inclusive) when set, after the position After.
type Query struct {
	Kind      Kind
	PartnerID *uuid.UUID
	From, To  *time.Time
	After     *cursor.Position
	Limit     int
	// CountOnly leaves each batch's TransactionIDs unread and counts them
	// (TransactionCount): a page of payouts that paid thousands each costs a
	// count per batch, not every id.
	CountOnly bool
}

// Tx is the unit of work a batch is written in.
type Tx interface {
	// The lifecycle's changes of the batch's transactions are made in it.
	lifecycle.Tx
	// The audit row of each transaction is written in it.
	audit.Tx
	// InsertBatch writes b and its items (a transaction already in a batch of the
	// kind fails the unit of work).
	InsertBatch(ctx context.Context, b *Batch) error
}

// Store reads batches and transactions and opens units of work.
type Store interface {
	// ListBatches returns up to q.Limit batches of q's kind (and partner, and
	// window, when set), newest first, after q.After when set.
	ListBatches(ctx context.Context, q Query) ([]*Batch, error)
	// Batch returns batch id of any kind and partner, or apperr NotFound.
	Batch(ctx context.Context, id uuid.UUID) (*Batch, error)
	// BatchOf returns the batch of kind holding transaction id, or nil.
	BatchOf(ctx context.Context, kind Kind, id uuid.UUID) (*Batch, error)
}

// Service records and lists batches.
type Service struct {
	store  Store
	engine *lifecycle.Engine
	audit  *audit.Log
	codec  *cursor.Codec
	now    func() time.Time
}

// New returns a Service.
func New(store Store, engine *lifecycle.Engine, log *audit.Log, codec *cursor.Codec, now func() time.Time) *Service {
	return &Service{store: store, engine: engine, audit: log, codec: codec, now: now}
}

// conflict is the 409 of a batch that cannot be recorded as asked.
func conflict(msg, field, problem string) error {
	return apperr.Field(apperr.InvalidStateTransition, msg, field, problem)
}

// load reads and locks the batch's transactions in the unit of work, refusing
// unknown ones and, through ok, those not in the right state. Locking them before
// the batch's items are written is the order every payout and fill of a transaction
// takes (the engine's change locks first too), so concurrent ones wait for each
// other and the losers see the winner's change (409), not the batch items' unique
// key. They are locked in id order, whatever order the request lists them in, so
// two batches sharing transactions wait for each other instead of deadlocking.
func (s *Service) load(ctx context.Context, tx Tx, ids []uuid.UUID, ok func(i int, t *lifecycle.Transaction) error) ([]*lifecycle.Transaction, error) {
	if len(ids) == 0 || len(ids) > 100 {
		return nil, apperr.Field(apperr.InvalidRequest, "A batch holds 1 to 100 transactions.", "/transaction_ids", "1 to 100 items")
	}
	at := make(map[uuid.UUID]int, len(ids))
	for i, id := range ids {
		if _, dup := at[id]; dup {
			return nil, apperr.Field(apperr.InvalidRequest, "A transaction is listed twice.", fmt.Sprintf("/transaction_ids/%d", i), "duplicate")
		}
		at[id] = i
	}
	locking := slices.Clone(ids)
	slices.SortFunc(locking, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	out := make([]*lifecycle.Transaction, len(ids))
	for _, id := range locking {
		i := at[id]
		t, err := tx.TransactionForUpdate(ctx, id)
		if err != nil {
			if apperr.CodeOf(err) == apperr.NotFound {
				return nil, apperr.Field(apperr.NotFound, fmt.Sprintf("No transaction %s.", id), fmt.Sprintf("/transaction_ids/%d", i), "unknown transaction")
			}
			return nil, err
		}
		if err := ok(i, t); err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// CreatePayout records one bank transfer of fiat NGN paying partnerID for the
// transactions ids: each must be awaiting payout (completed, payout not settled)
// and belong to partnerID, and fiat must equal the sum of their amounts; otherwise
// InvalidStateTransition and nothing changes. Errors: InvalidRequest, NotFound,
// InvalidStateTransition. The batch is written in tx, the caller's unit of work.
func (s *Service) CreatePayout(ctx context.Context, tx Tx, by actor.Actor, partnerID uuid.UUID, ids []uuid.UUID, reference string, fiat decimal.Decimal) (*Batch, error) {
	if err := lifecycle.CheckFiat(fiat); err != nil {
		return nil, err
	}
	ts, err := s.load(ctx, tx, ids, func(i int, t *lifecycle.Transaction) error {
		field := fmt.Sprintf("/transaction_ids/%d", i)
		if t.PartnerID != partnerID {
			return conflict(fmt.Sprintf("Transaction %s belongs to another partner.", t.ID), field, "another partner's transaction")
		}
		if !lifecycle.AwaitingPayout(t) {
			return conflict(fmt.Sprintf("Transaction %s is not awaiting payout (it is %s%s).", t.ID, t.Status, paidNote(t)), field, "not awaiting payout")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var sum, crypto decimal.Decimal
	for _, t := range ts {
		sum, crypto = sum.Add(t.FiatAmount), crypto.Add(t.CryptoAmount)
	}
	if !sum.Equal(fiat) {
		return nil, conflict(fmt.Sprintf("The payout's fiat_amount %s is not the sum of the transactions' amounts, %s.", fiat.StringFixed(2), sum.StringFixed(2)),
			"/fiat_amount", "must equal "+sum.StringFixed(2))
	}
	b := &Batch{ID: uuid.New(), Kind: Payout, PartnerID: &partnerID, Reference: reference, FiatAmount: fiat, CryptoAmount: crypto,
		TransactionIDs: ids, OperatorID: by.OperatorID(), CreatedAt: s.now()}
	if err := tx.InsertBatch(ctx, b); err != nil {
		return nil, err
	}
	for _, t := range ts {
		if _, err := s.engine.PayOut(ctx, tx, t.ID, by, reference, &lifecycle.PayoutBatch{ID: b.ID, Amount: fiat}); err != nil {
			return nil, err
		}
		if err := s.record(ctx, tx, by, audit.BatchPayout, t.ID, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// PayOne records one bank transfer paying transaction id alone: a payout of one
// (its amount, the operator's reference), so the partner finds it among its
// payouts and its payout.settled event names it like any batch's. The transaction
// is locked first (as load does) and the engine checks it, so one not awaiting
// payout is refused as the single action refuses it; the batch is dated when the
// payout settled and written in tx, the caller's unit of work, with the change.
// Errors: NotFound, InvalidStateTransition.
func (s *Service) PayOne(ctx context.Context, tx Tx, by actor.Actor, id uuid.UUID, reference string) (*lifecycle.Transaction, *Batch, error) {
	t, err := tx.TransactionForUpdate(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	b := &Batch{ID: uuid.New(), Kind: Payout, PartnerID: &t.PartnerID, Reference: reference, FiatAmount: t.FiatAmount,
		CryptoAmount: t.CryptoAmount, TransactionIDs: []uuid.UUID{id}, OperatorID: by.OperatorID()}
	if t, err = s.engine.PayOut(ctx, tx, id, by, reference, &lifecycle.PayoutBatch{ID: b.ID, Amount: b.FiatAmount}); err != nil {
		return nil, nil, err
	}
	b.CreatedAt = *t.PayoutSettledAt
	return t, b, tx.InsertBatch(ctx, b)
}

func paidNote(t *lifecycle.Transaction) string {
	if t.PayoutSettledAt != nil {
		return ", its payout already settled"
	}
	return ""
}

// CreateFill records one liquidity order that sold the deposits of the
// transactions ids at rate: each must be awaiting its fill (a confirmed deposit);
// each fill's NGN amount is its received token amount × rate, rounded to kobo, and
// the batch's is their sum. Errors: InvalidRequest, NotFound, InvalidStateTransition.
// The batch is written in tx, the caller's unit of work.
func (s *Service) CreateFill(ctx context.Context, tx Tx, by actor.Actor, ids []uuid.UUID, rate decimal.Decimal, reference string) (*Batch, error) {
	if err := lifecycle.CheckRate(rate); err != nil {
		return nil, err
	}
	ts, err := s.load(ctx, tx, ids, func(i int, t *lifecycle.Transaction) error {
		if !lifecycle.AwaitingFill(t) {
			return conflict(fmt.Sprintf("Transaction %s is not awaiting its fill (it is %s).", t.ID, t.Status),
				fmt.Sprintf("/transaction_ids/%d", i), "not awaiting its fill")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var fiat, crypto decimal.Decimal
	amounts := make([]decimal.Decimal, len(ts))
	for i, t := range ts {
		sold := SoldAmount(t)
		amounts[i] = money.Proceeds(sold, rate)
		fiat, crypto = fiat.Add(amounts[i]), crypto.Add(sold)
	}
	r := rate
	b := &Batch{ID: uuid.New(), Kind: Fill, Reference: reference, Rate: &r, FiatAmount: fiat, CryptoAmount: crypto,
		TransactionIDs: ids, OperatorID: by.OperatorID(), CreatedAt: s.now()}
	if err := tx.InsertBatch(ctx, b); err != nil {
		return nil, err
	}
	for i, t := range ts {
		if _, err := s.engine.FillOrder(ctx, tx, t.ID, by, rate, amounts[i], reference); err != nil {
			return nil, err
		}
		if err := s.record(ctx, tx, by, audit.BatchFill, t.ID, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// SoldAmount is the token amount a fill sells: the deposit received, or the
// expected amount when no deposit amount is known.
func SoldAmount(t *lifecycle.Transaction) decimal.Decimal {
	if t.Deposit != nil && t.Deposit.Amount.IsPositive() {
		return t.Deposit.Amount
	}
	return t.CryptoAmount
}

func (s *Service) record(ctx context.Context, tx Tx, by actor.Actor, a audit.Action, id uuid.UUID, b *Batch) error {
	tid, bid, ref := id, b.ID, b.Reference
	return s.audit.Record(ctx, tx, by, audit.Entry{Action: a, TransactionID: &tid, BatchID: &bid, Reference: &ref})
}

// Page is one page of batches.
type Page = cursor.Page[*Batch]

// List returns one page of batches of kind (of partnerID when set), newest first.
// Errors: InvalidCursor.
func (s *Service) List(ctx context.Context, kind Kind, partnerID *uuid.UUID, limit int, after string) (*Page, error) {
	limit = cursor.Limit(limit)
	scope := cursor.Scope(struct {
		List    string     `json:"list"`
		Kind    Kind       `json:"kind"`
		Partner *uuid.UUID `json:"partner"`
	}{"batches", kind, partnerID})
	return cursor.Read(s.codec, scope, after, limit, func(pos *cursor.Position, n int) ([]*Batch, error) {
		return s.store.ListBatches(ctx, Query{Kind: kind, PartnerID: partnerID, After: pos, Limit: n})
	}, (*Batch).Position)
}

// Position is b's place in a keyset-paged list of batches (newest first).
func (b *Batch) Position() cursor.Position {
	return cursor.Position{Time: b.CreatedAt, ID: b.ID.String()}
}

// Of returns the batch of kind holding transaction id, or nil.
func (s *Service) Of(ctx context.Context, kind Kind, id uuid.UUID) (*Batch, error) {
	return s.store.BatchOf(ctx, kind, id)
}
