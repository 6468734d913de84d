// Package revenue is the partners' revenue ledger: one row per completed
// transaction (written by the lifecycle's settlement, in its unit of work), paged
// newest first with signed cursors, and an exact summary of a window (the fee and
// share rules are in package money).
package revenue

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
)

// Filter selects ledger rows: ts within [From, To] (both optional), and
// optionally one token and one network.
type Filter struct {
	From, To *time.Time
	Token    *string
	Network  *string
}

// Query is one page request with the effective window.
type Query struct {
	From, To time.Time
	Token    *string
	Network  *string
	After    *cursor.Position
	Limit    int
}

// Store reads the ledger.
type Store interface {
	ListRevenue(ctx context.Context, partnerID uuid.UUID, q Query) ([]lifecycle.RevenueRow, error)
	RevenueSummary(ctx context.Context, partnerID uuid.UUID, q Query) (int64, decimal.Decimal, error)
}

// Page is one page of the ledger, with the window's summary when asked.
type Page struct {
	Rows       []lifecycle.RevenueRow
	HasMore    bool
	Limit      int
	NextCursor *string
	Summary    *Summary
}

// Summary covers the whole window, every page of it.
type Summary struct {
	From, To          time.Time
	TotalPartnerShare decimal.Decimal
	Count             int64
}

// EpochStart is the effective start of a revenue window given no from.
var EpochStart = time.Unix(0, 0).UTC()

// Ledger pages through the revenue ledger.
type Ledger struct {
	store Store
	codec *cursor.Codec
	now   func() time.Time
}

// NewLedger returns a Ledger.
func NewLedger(store Store, codec *cursor.Codec, now func() time.Time) *Ledger {
	return &Ledger{store: store, codec: codec, now: now}
}

// List returns a page of partnerID's ledger, newest first. The window is [from, to]
// with from defaulting to the Unix epoch and to to now. Errors: InvalidCursor.
func (l *Ledger) List(ctx context.Context, partnerID uuid.UUID, f Filter, limit int, after string, summary bool) (*Page, error) {
	q := Query{From: EpochStart, To: l.now(), Token: f.Token, Network: f.Network}
	if f.From != nil {
		q.From = f.From.UTC()
	}
	if f.To != nil {
		q.To = f.To.UTC()
	}
	sc := scope(partnerID, f)
	rows, err := cursor.Read(l.codec, sc, after, limit, func(pos *cursor.Position, n int) ([]lifecycle.RevenueRow, error) {
		page := q
		page.After, page.Limit = pos, n
		return l.store.ListRevenue(ctx, partnerID, page)
	}, func(r lifecycle.RevenueRow) cursor.Position {
		return cursor.Position{Time: r.TS, ID: r.TransactionID.String()}
	})
	if err != nil {
		return nil, err
	}
	p := &Page{Rows: rows.Items, HasMore: rows.HasMore, Limit: rows.Limit, NextCursor: rows.NextCursor}
	if summary {
		n, sum, err := l.store.RevenueSummary(ctx, partnerID, q)
		if err != nil {
			return nil, err
		}
		p.Summary = &Summary{From: q.From, To: q.To, TotalPartnerShare: sum, Count: n}
	}
	return p, nil
}

func scope(partnerID uuid.UUID, f Filter) string {
	scope := cursor.Scope(struct {
		List    string     `json:"list"`
		Partner uuid.UUID  `json:"partner"`
		From    *time.Time `json:"from"`
		To      *time.Time `json:"to"`
		Token   *string    `json:"token"`
		Network *string    `json:"network"`
	}{"revenue", partnerID, cursor.UTC(f.From), cursor.UTC(f.To), f.Token, f.Network})
	return scope
}
