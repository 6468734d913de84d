package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"partnerd/internal/pricing/quotes"
)

type quoteRow struct {
	ID             uuid.UUID `gorm:"primaryKey"`
	PartnerID      uuid.UUID
	CryptoCurrency string
	Network        string
	BaseRate       decimal.Decimal
	AdjustedRate   decimal.Decimal
	CryptoAmount   decimal.Decimal
	FiatAmount     decimal.Decimal
	CreatedAt      time.Time
	ExpiresAt      time.Time
	UsedAt         *time.Time
}

func (quoteRow) TableName() string { return "quotes" }

func (r quoteRow) domain() *quotes.Quote {
	q := &quotes.Quote{
		ID: r.ID, PartnerID: r.PartnerID, Token: r.CryptoCurrency, Network: r.Network,
		BaseRate: r.BaseRate, AdjustedRate: r.AdjustedRate, CryptoAmount: r.CryptoAmount, FiatAmount: r.FiatAmount,
		CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
	}
	if r.UsedAt != nil {
		t := r.UsedAt.UTC()
		q.UsedAt = &t
	}
	return q
}

// CreateQuote inserts q.
func (s *Store) CreateQuote(ctx context.Context, q *quotes.Quote) error {
	return createQuote(s.write(ctx), q)
}

// CreateQuote inserts q in the unit of work.
func (tx *Tx) CreateQuote(ctx context.Context, q *quotes.Quote) error {
	return createQuote(tx.db.WithContext(ctx), q)
}

func createQuote(db *gorm.DB, q *quotes.Quote) error {
	row := quoteRow{
		ID: q.ID, PartnerID: q.PartnerID, CryptoCurrency: q.Token, Network: q.Network,
		BaseRate: q.BaseRate, AdjustedRate: q.AdjustedRate, CryptoAmount: q.CryptoAmount, FiatAmount: q.FiatAmount,
		CreatedAt: q.CreatedAt, ExpiresAt: q.ExpiresAt, UsedAt: q.UsedAt,
	}
	return db.Create(&row).Error
}

// QuoteByID returns partnerID's quote id, or apperr NotFound (also for another
// partner's quote, so existence never leaks).
func (s *Store) QuoteByID(ctx context.Context, partnerID, id uuid.UUID) (*quotes.Quote, error) {
	return quoteByID(s.read(ctx), partnerID, id)
}

func quoteByID(db *gorm.DB, partnerID, id uuid.UUID) (*quotes.Quote, error) {
	var row quoteRow
	err := db.Where("id = ? AND partner_id = ?", id, partnerID).Take(&row).Error
	if err != nil {
		return nil, notFound(err, "quote")
	}
	return row.domain(), nil
}

// QuoteByID is Store.QuoteByID inside the unit of work.
func (tx *Tx) QuoteByID(ctx context.Context, partnerID, id uuid.UUID) (*quotes.Quote, error) {
	return quoteByID(tx.db.WithContext(ctx), partnerID, id)
}
