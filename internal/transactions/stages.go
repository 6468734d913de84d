package transactions

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/cursor"
	"partnerd/internal/lifecycle"
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
)

// StageFilter selects the transactions of every partner in one stage.
type StageFilter struct {
	Stage     Stage
	PartnerID *uuid.UUID
	Network   *string
	From, To  *time.Time
}

// StageQuery is what the store needs for one page of a stage.
type StageQuery struct {
	StageFilter
	After *cursor.Position
	Limit int
}

// StageStore lists stages.
type StageStore interface {
	// ListStage returns up to q.Limit transactions (with deposits) of q's stage,
	// ordered by (created_at, id) descending, after q.After.
	ListStage(ctx context.Context, q StageQuery) ([]*lifecycle.Transaction, error)
}

// StageLister pages through a stage for the operator API.
type StageLister struct {
	store StageStore
	codec *cursor.Codec
}

// NewStageLister returns a StageLister signing cursors with codec.
func NewStageLister(store StageStore, codec *cursor.Codec) *StageLister {
	return &StageLister{store: store, codec: codec}
}

// List returns one page of stage f.Stage, newest first; after is the previous page's
// next cursor or "". Errors: InvalidCursor.
func (l *StageLister) List(ctx context.Context, f StageFilter, limit int, after string) (*Page, error) {
	limit = cursor.Limit(limit)
	b, _ := json.Marshal(struct {
		List    string     `json:"list"`
		Stage   Stage      `json:"stage"`
		Partner *uuid.UUID `json:"partner"`
		Network *string    `json:"network"`
		From    *time.Time `json:"from"`
		To      *time.Time `json:"to"`
	}{"stage", f.Stage, f.PartnerID, f.Network, cursor.UTC(f.From), cursor.UTC(f.To)})
	scope := string(b)
	pos, err := l.codec.After(after, scope)
	if err != nil {
		return nil, err
	}
	rows, err := l.store.ListStage(ctx, StageQuery{StageFilter: f, After: pos, Limit: limit + 1})
	if err != nil {
		return nil, err
	}
	p := &Page{Limit: limit}
	p.Items, p.HasMore, p.NextCursor = cursor.Trim(l.codec, scope, rows, limit, func(t *lifecycle.Transaction) cursor.Position {
		return cursor.Position{Time: t.CreatedAt, ID: t.ID.String()}
	})
	return p, nil
}
