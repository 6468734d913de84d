package transactions

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/cursor"
)

// RevenueFilter selects ledger rows: ts within [From, To] (both optional), and
// optionally one token and one network.
type RevenueFilter struct {
	From, To *time.Time
	Token    *string
	Network  *string
}

// RevenueQuery is one page request with the effective window.
type RevenueQuery struct {
	From, To time.Time
	Token    *string
	Network  *string
	After    *cursor.Position
	Limit    int
}

// RevenueStore reads the ledger.
type RevenueStore interface {
	ListRevenue(ctx context.Context, partnerID uuid.UUID, q RevenueQuery) ([]RevenueRow, error)
	RevenueSummary(ctx context.Context, partnerID uuid.UUID, q RevenueQuery) (int64, decimal.Decimal, error)
}

// RevenuePage is one page of the ledger, with the window's summary when asked.
type RevenuePage struct {
	Rows       []RevenueRow
	HasMore    bool
	Limit      int
	NextCursor *string
	Summary    *RevenueSummary
}

// RevenueSummary covers the whole window, every page of it.
type RevenueSummary struct {
	From, To          time.Time
	TotalPartnerShare decimal.Decimal
	Count             int64
}

// EpochStart is the effective start of a revenue window given no from.
var EpochStart = time.Unix(0, 0).UTC()

// Ledger pages through the revenue ledger.
type Ledger struct {
	store RevenueStore
	codec *cursor.Codec
	now   func() time.Time
}

// NewLedger returns a Ledger.
func NewLedger(store RevenueStore, codec *cursor.Codec, now func() time.Time) *Ledger {
	return &Ledger{store: store, codec: codec, now: now}
}

// List returns a page of partnerID's ledger, newest first. The window is [from, to]
// with from defaulting to the Unix epoch and to to now. Errors: InvalidCursor.
func (l *Ledger) List(ctx context.Context, partnerID uuid.UUID, f RevenueFilter, limit int, after string, summary bool) (*RevenuePage, error) {
	limit = cursor.Limit(limit)
	q := RevenueQuery{From: EpochStart, To: l.now(), Token: f.Token, Network: f.Network, Limit: limit + 1}
	if f.From != nil {
		q.From = f.From.UTC()
	}
	if f.To != nil {
		q.To = f.To.UTC()
	}
	scope := revenueScope(partnerID, f)
	var err error
	if q.After, err = l.codec.After(after, scope); err != nil {
		return nil, err
	}
	rows, err := l.store.ListRevenue(ctx, partnerID, q)
	if err != nil {
		return nil, err
	}
	p := &RevenuePage{Limit: limit}
	p.Rows, p.HasMore, p.NextCursor = cursor.Trim(l.codec, scope, rows, limit, func(r RevenueRow) cursor.Position {
		return cursor.Position{Time: r.TS, ID: r.TransactionID.String()}
	})
	if summary {
		wq := q
		wq.After = nil
		n, sum, err := l.store.RevenueSummary(ctx, partnerID, wq)
		if err != nil {
			return nil, err
		}
		p.Summary = &RevenueSummary{From: q.From, To: q.To, TotalPartnerShare: sum, Count: n}
	}
	return p, nil
}

func revenueScope(partnerID uuid.UUID, f RevenueFilter) string {
	b, _ := json.Marshal(struct {
		List    string     `json:"list"`
		Partner uuid.UUID  `json:"partner"`
		From    *time.Time `json:"from"`
		To      *time.Time `json:"to"`
		Token   *string    `json:"token"`
		Network *string    `json:"network"`
	}{"revenue", partnerID, cursor.UTC(f.From), cursor.UTC(f.To), f.Token, f.Network})
	return string(b)
}
