package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"partnerd/internal/apikeys"
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

// CreatePartner inserts p and its first API key (p.KeyHash, p.KeyPrefix), whose id
// is the account's own (as for the keys the migration carried over).
func (s *Store) CreatePartner(ctx context.Context, p *partners.Partner) error {
	row := partnerRow{
		ID: p.ID, Name: p.Name, Environment: string(p.Environment), KeyHash: p.KeyHash,
		FeeRate: p.FeeRate, ShareRate: p.ShareRate, CreatedAt: p.CreatedAt,
	}
	return s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		s := tx.store()
		if err := s.write(ctx).Create(&row).Error; err != nil {
			return err
		}
		return s.InsertAPIKey(ctx, &apikeys.Key{ID: p.ID, Owner: apikeys.Partner, OwnerID: p.ID, Hash: p.KeyHash, Prefix: p.KeyPrefix, CreatedAt: p.CreatedAt})
	})
}

// PartnerByKeyHash returns the partner whose working API key hashes to hash (not
// revoked, not expired), with that key's expiry, or apperr NotFound; it records the
// key's use.
func (s *Store) PartnerByKeyHash(ctx context.Context, hash string) (*partners.Partner, error) {
	var row partnerWithKey
	now := Now()
	err := s.read(ctx).Table("api_keys AS k").Select("p.*, k.expires_at AS key_expires_at").
		Joins("JOIN partners p ON p.id = k.owner_id").Where(usableKey, hash, string(apikeys.Partner), now).Take(&row).Error
	if err != nil {
		return nil, notFound(err, "partner")
	}
	if err := s.touchKey(ctx, hash, now); err != nil {
		return nil, err
	}
	p := row.Row.domain()
	p.KeyExpiresAt = utcPtr(row.KeyExpiresAt)
	return p, nil
}

// partnerWithKey is a partner row with the expiry of the key that found it.
type partnerWithKey struct {
	Row          partnerRow `gorm:"embedded"`
	KeyExpiresAt *time.Time
}

// Partners returns every partner, oldest first.
func (s *Store) Partners(ctx context.Context) ([]*partners.Partner, error) {
	var rows []partnerRow
	if err := s.read(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*partners.Partner, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// PartnerByID returns the partner with id, or apperr NotFound.
func (s *Store) PartnerByID(ctx context.Context, id uuid.UUID) (*partners.Partner, error) {
	return partnerByID(s.read(ctx), id)
}

func partnerByID(db *gorm.DB, id uuid.UUID) (*partners.Partner, error) {
	var row partnerRow
	if err := db.Where("id = ?", id).Take(&row).Error; err != nil {
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
