package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/partners"
)

type partnerRow struct {
	ID          uuid.UUID `gorm:"primaryKey"`
	Name        string
	Environment string
	KeyHash     string
	FeeRate     decimal.Decimal
	ShareRate   decimal.Decimal
	CreatedAt   time.Time
}

func (partnerRow) TableName() string { return "partners" }

func (r partnerRow) domain() *partners.Partner {
	return &partners.Partner{
		ID: r.ID, Name: r.Name, Environment: partners.Environment(r.Environment), KeyHash: r.KeyHash,
		FeeRate: r.FeeRate, ShareRate: r.ShareRate, CreatedAt: r.CreatedAt.UTC(),
	}
}

// CreatePartner inserts p.
func (s *Store) CreatePartner(ctx context.Context, p *partners.Partner) error {
	row := partnerRow{
		ID: p.ID, Name: p.Name, Environment: string(p.Environment), KeyHash: p.KeyHash,
		FeeRate: p.FeeRate, ShareRate: p.ShareRate, CreatedAt: p.CreatedAt,
	}
	return s.write(ctx).Create(&row).Error
}

// PartnerByKeyHash returns the partner whose API key hashes to hash, or apperr NotFound.
func (s *Store) PartnerByKeyHash(ctx context.Context, hash string) (*partners.Partner, error) {
	var row partnerRow
	if err := s.read(ctx).Where("key_hash = ?", hash).Take(&row).Error; err != nil {
		return nil, notFound(err, "partner")
	}
	return row.domain(), nil
}

// PartnerByID returns the partner with id, or apperr NotFound.
func (s *Store) PartnerByID(ctx context.Context, id uuid.UUID) (*partners.Partner, error) {
	var row partnerRow
	if err := s.read(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, notFound(err, "partner")
	}
	return row.domain(), nil
}

// CountPartners returns how many partners exist.
func (s *Store) CountPartners(ctx context.Context) (int64, error) {
	var n int64
	err := s.read(ctx).Model(&partnerRow{}).Count(&n).Error
	return n, err
}
