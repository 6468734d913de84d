// Package payouts is the partner's view of the bank transfers that paid it: the
// payout batches the operators recorded (package batches), listed and read per
// partner, and exported as CSV for reconciliation. A partner sees only its own
// payouts; another partner's is NotFound, exactly like an unknown id.
package payouts

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/backoffice/batches"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/csvexport"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/money"
)

// Store reads payout batches and the partner's transactions.
type Store interface {
	// ListBatches returns one page of batches (see batches.Query).
	ListBatches(ctx context.Context, q batches.Query) ([]*batches.Batch, error)
	// Batch returns batch id of any kind and partner, or apperr NotFound.
	Batch(ctx context.Context, id uuid.UUID) (*batches.Batch, error)
	// BatchTransactions returns partnerID's transactions in each of the batches
	// ids, in each batch's order, keyed by batch, in one read whatever their
	// number (a payout may pay thousands).
	BatchTransactions(ctx context.Context, partnerID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID][]*lifecycle.Transaction, error)
	BalanceStore
}

// Service lists, reads and exports a partner's payouts.
type Service struct {
	store Store
	codec *cursor.Codec
}

// New returns a Service signing its cursors with codec.
func New(store Store, codec *cursor.Codec) *Service { return &Service{store: store, codec: codec} }

// Page is one page of payouts, newest first.
type Page = cursor.Page[*batches.Batch]

// Detail is a payout with the transactions it paid, in the batch's order.
type Detail struct {
	*batches.Batch
	Transactions []*lifecycle.Transaction
}

// List returns one page of partnerID's payouts created within from and to (both
// inclusive, each optional), newest first. Errors: InvalidCursor.
func (s *Service) List(ctx context.Context, partnerID uuid.UUID, from, to *time.Time, limit int, after string) (*Page, error) {
	limit = cursor.Limit(limit)
	scope := cursor.Scope(struct {
		List    string     `json:"list"`
		Partner uuid.UUID  `json:"partner"`
		From    *time.Time `json:"from"`
		To      *time.Time `json:"to"`
	}{"payouts", partnerID, cursor.UTC(from), cursor.UTC(to)})
	return cursor.Read(s.codec, scope, after, limit, func(pos *cursor.Position, n int) ([]*batches.Batch, error) {
		return s.store.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &partnerID, From: from, To: to, After: pos, Limit: n, CountOnly: true})
	}, (*batches.Batch).Position)
}

// Get returns partnerID's payout id with its transactions. Errors: NotFound (an
// unknown id, a fill, or another partner's payout).
func (s *Service) Get(ctx context.Context, partnerID, id uuid.UUID) (*Detail, error) {
	b, err := s.store.Batch(ctx, id)
	if err != nil {
		return nil, err
	}
	if b.Kind != batches.Payout || b.PartnerID == nil || *b.PartnerID != partnerID {
		return nil, apperr.New(apperr.NotFound, "No such payout.")
	}
	return s.detail(ctx, partnerID, b)
}

func (s *Service) detail(ctx context.Context, partnerID uuid.UUID, b *batches.Batch) (*Detail, error) {
	paid, err := s.store.BatchTransactions(ctx, partnerID, []uuid.UUID{b.ID})
	if err != nil {
		return nil, err
	}
	return detailOf(b, paid[b.ID])
}

// detailOf is payout b with its transactions ts as read; a transaction of the
// batch missing from them (another partner's, or gone) is an error, never a
// payout shown short.
func detailOf(b *batches.Batch, ts []*lifecycle.Transaction) (*Detail, error) {
	if len(ts) != b.Size() {
		return nil, fmt.Errorf("payout %s: %d of its %d transactions read", b.ID, len(ts), b.Size())
	}
	return &Detail{Batch: b, Transactions: ts}, nil
}

// Columns are the payouts export's columns (documented in the contract's
// GET /exports/payouts): one row per transaction paid, its payout's columns first.
var Columns = []string{"payout_id", "reference", "payout_amount", "paid_at",
	"transaction_id", "merchant_reference", "network", "crypto_currency", "crypto_amount", "amount"}

// exportPage is how many payouts the export reads per query.
const exportPage = 100

// WriteCSV writes every payout of partnerID created within from and to (both
// inclusive) to w as CSV, newest first, one row per transaction paid, reading
// the payouts a page at a time and each payout's transactions in one read.
func (s *Service) WriteCSV(ctx context.Context, w io.Writer, partnerID uuid.UUID, from, to time.Time) error {
	out, err := csvexport.New(w, Columns...)
	if err != nil {
		return err
	}
	var pos *cursor.Position
	for {
		page, err := s.store.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &partnerID, From: &from, To: &to, After: pos, Limit: exportPage, CountOnly: true})
		if err != nil {
			return err
		}
		for _, b := range page {
			// One payout's transactions at a time: one statement each, and
			// memory bounded by the largest payout, not by a page of them.
			paid, err := s.store.BatchTransactions(ctx, partnerID, []uuid.UUID{b.ID})
			if err != nil {
				return err
			}
			d, err := detailOf(b, paid[b.ID])
			if err != nil {
				return err
			}
			for _, t := range d.Transactions {
				if err := out.Row(csvexport.Word(b.ID.String()), csvexport.Text(b.Reference), csvexport.Amount(money.FormatFiat(b.FiatAmount)),
					csvexport.Time(b.CreatedAt), csvexport.Word(t.ID.String()), csvexport.Text(t.MerchantReference),
					csvexport.Word(t.Network), csvexport.Word(t.Token), csvexport.Amount(money.FormatTokens(t.CryptoAmount)),
					csvexport.Amount(money.FormatFiat(t.FiatAmount))); err != nil {
					return err
				}
			}
		}
		if len(page) < exportPage {
			return out.Close()
		}
		last := page[len(page)-1]
		pos = &cursor.Position{Time: last.CreatedAt, ID: last.ID.String()}
	}
}

// Line is an NGN sum and how many transactions it is made of.
type Line struct {
	Amount       decimal.Decimal
	Transactions int
}

// Balance is a partner's NGN balance with us (GET /balance), read in one
// snapshot: Owed are its completed transactions whose payout has not settled,
// InPayout those in a payout sent but not settled (none while payouts are
// recorded once settled), PaidOut the transactions of the Payouts payouts
// created within [PeriodStart, PeriodEnd).
type Balance struct {
	Owed, InPayout, PaidOut Line
	Payouts                 int
	PeriodStart, PeriodEnd  time.Time
	AsOf                    time.Time
}

// BalanceStore reads a balance (store.Store).
type BalanceStore interface {
	// PartnerBalance reads partnerID's Owed, PaidOut and Payouts (payouts created
	// within [from, to)) in one snapshot.
	PartnerBalance(ctx context.Context, partnerID uuid.UUID, from, to time.Time) (Balance, error)
}

// Period is the balance's period at now: the calendar month in UTC, its first
// instant inclusive to the next month's first instant exclusive.
func Period(now time.Time) (time.Time, time.Time) {
	now = now.UTC()
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// BalanceOf reads partnerID's balance at now from st.
func BalanceOf(ctx context.Context, st BalanceStore, partnerID uuid.UUID, now time.Time) (Balance, error) {
	from, to := Period(now)
	b, err := st.PartnerBalance(ctx, partnerID, from, to)
	if err != nil {
		return Balance{}, err
	}
	b.PeriodStart, b.PeriodEnd, b.AsOf = from, to, now.UTC()
	return b, nil
}

// Balance returns partnerID's balance at now (GET /balance; see Balance).
func (s *Service) Balance(ctx context.Context, partnerID uuid.UUID, now time.Time) (Balance, error) {
	return BalanceOf(ctx, s.store, partnerID, now)
}
