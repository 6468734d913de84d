package backoffice

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
	"partnerd/internal/transactions"
)

// Stage is a back-office work queue: the transactions waiting on one step.
type Stage string

// The stages.
const (
	// AwaitingFill: the deposit is confirmed (deposit_confirming, deposit confirmed)
	// and the sell order not yet filled.
	AwaitingFill Stage = "awaiting_fill"
	// AwaitingSettlement: order_filled.
	AwaitingSettlement Stage = "awaiting_settlement"
	// AwaitingPayout: completed, payout not settled.
	AwaitingPayout Stage = "awaiting_payout"
	// StageFailed: failed, awaiting a refund.
	StageFailed Stage = "failed"
	// ConfirmingTooLong: a deposit still confirming (deposit_confirming, deposit not
	// confirmed) received before the lister's threshold: something is stuck.
	ConfirmingTooLong Stage = "confirming_too_long"
)

// Stages lists every stage, in the contract's order.
var Stages = []Stage{AwaitingFill, AwaitingSettlement, AwaitingPayout, StageFailed, ConfirmingTooLong}

// DefaultConfirmingTooLong is how long a deposit may confirm before it is listed as
// ConfirmingTooLong: many times any network's expected confirmation time.
const DefaultConfirmingTooLong = 30 * time.Minute

// StageFilter selects the transactions of every partner in one stage ("" for
// every transaction).
type StageFilter struct {
	Stage     Stage
	PartnerID *uuid.UUID
	Network   *string
	From, To  *time.Time
	// Search is what a support ticket quotes: a merchant reference (any case), a
	// deposit address, a deposit's chain hash or a transaction id.
	Search *string
	// Oldest orders the list oldest first (the queue's most overdue item first).
	Oldest bool
}

// StageQuery is what the store needs for one page of a stage.
type StageQuery struct {
	StageFilter
	// SearchKey is the folded Search (the merchant reference form).
	SearchKey *string
	// StuckBefore is the ConfirmingTooLong threshold: deposits received before it.
	StuckBefore time.Time
	After       *cursor.Position
	Limit       int
}

// StageStore lists stages.
type StageStore interface {
	// ListStage returns up to q.Limit transactions (with deposits) of q's stage
	// matching q, ordered by (created_at, id) descending (ascending with q.Oldest),
	// after q.After.
	ListStage(ctx context.Context, q StageQuery) ([]*lifecycle.Transaction, error)
}

// StageLister pages through a stage for the operator API.
type StageLister struct {
	store   StageStore
	codec   *cursor.Codec
	tooLong time.Duration
	now     func() time.Time
}

// NewStageLister returns a StageLister signing cursors with codec.
func NewStageLister(store StageStore, codec *cursor.Codec) *StageLister {
	return &StageLister{store: store, codec: codec, tooLong: DefaultConfirmingTooLong, now: func() time.Time { return time.Now().UTC() }}
}

// ConfirmingTooLong sets the ConfirmingTooLong threshold and the clock it is measured on.
func (l *StageLister) ConfirmingTooLong(after time.Duration, now func() time.Time) {
	if after > 0 {
		l.tooLong = after
	}
	l.now = now
}

// StuckBefore is the current ConfirmingTooLong threshold.
func (l *StageLister) StuckBefore() time.Time { return l.now().Add(-l.tooLong) }

// StageTotal is one stage's count and totals.
type StageTotal struct {
	Stage  Stage
	Count  int
	Crypto decimal.Decimal
	Fiat   decimal.Decimal
}

// StageTotaller counts and sums a stage (the store).
type StageTotaller interface {
	StageTotal(ctx context.Context, stage Stage, stuckBefore time.Time) (StageTotal, error)
}

// Totals counts and sums every stage, in Stages order.
func (l *StageLister) Totals(ctx context.Context, t StageTotaller) ([]StageTotal, error) {
	out := make([]StageTotal, 0, len(Stages))
	stuck := l.StuckBefore()
	for _, s := range Stages {
		v, err := t.StageTotal(ctx, s, stuck)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// List returns one page of stage f.Stage (every transaction when ""), newest
// first unless f.Oldest; after is the previous page's next cursor or "". Errors:
// InvalidCursor.
func (l *StageLister) List(ctx context.Context, f StageFilter, limit int, after string) (*transactions.Page, error) {
	limit = cursor.Limit(limit)
	q := StageQuery{StageFilter: f, StuckBefore: l.StuckBefore(), Limit: limit + 1}
	if f.Search != nil {
		k := transactions.ReferenceKey(*f.Search)
		q.SearchKey = &k
	}
	scope := cursor.Scope(struct {
		List    string     `json:"list"`
		Stage   Stage      `json:"stage"`
		Partner *uuid.UUID `json:"partner"`
		Network *string    `json:"network"`
		From    *time.Time `json:"from"`
		To      *time.Time `json:"to"`
		Search  *string    `json:"q,omitempty"`
		Oldest  bool       `json:"oldest,omitempty"`
	}{"stage", f.Stage, f.PartnerID, f.Network, cursor.UTC(f.From), cursor.UTC(f.To), f.Search, f.Oldest})
	return cursor.Read(l.codec, scope, after, limit, func(pos *cursor.Position, n int) ([]*lifecycle.Transaction, error) {
		q.After, q.Limit = pos, n
		return l.store.ListStage(ctx, q)
	}, func(t *lifecycle.Transaction) cursor.Position {
		return cursor.Position{Time: t.CreatedAt, ID: t.ID.String()}
	})
}
