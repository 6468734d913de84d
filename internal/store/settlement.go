package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm/clause"

	"partnerd/internal/backoffice/settlement"
)

var _ settlement.Tx = (*Tx)(nil)

type settlementAccountRow struct {
	PartnerID     uuid.UUID `gorm:"primaryKey"`
	BankCode      string
	BankName      string
	AccountNumber string
	AccountName   string
	NameMatches   bool
	VerifiedAt    time.Time
	SetBy         uuid.UUID
	UpdatedAt     time.Time
}

func (settlementAccountRow) TableName() string { return "settlement_accounts" }

// PutSettlementAccount inserts a's partner's settlement account or replaces it.
func (s *Store) PutSettlementAccount(ctx context.Context, a *settlement.Account) error {
	row := settlementAccountRow{PartnerID: a.PartnerID, BankCode: a.BankCode, BankName: a.BankName, AccountNumber: a.AccountNumber,
		AccountName: a.AccountName, NameMatches: a.NameMatches, VerifiedAt: a.VerifiedAt.UTC(), SetBy: a.SetBy, UpdatedAt: a.UpdatedAt.UTC()}
	return s.write(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "partner_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"bank_code", "bank_name", "account_number", "account_name", "name_matches", "verified_at", "set_by", "updated_at"}),
	}).Create(&row).Error
}

// SettlementAccount returns partner's settlement account with the partner's
// name, or apperr NotFound.
func (s *Store) SettlementAccount(ctx context.Context, partner uuid.UUID) (*settlement.Account, error) {
	var row struct {
		Row         settlementAccountRow `gorm:"embedded"`
		PartnerName string
	}
	err := s.read(ctx).Table("settlement_accounts AS a").Select("a.*, p.name AS partner_name").
		Joins("JOIN partners p ON p.id = a.partner_id").Where("a.partner_id = ?", partner).Take(&row).Error
	if err != nil {
		return nil, notFound(err, "settlement account")
	}
	r := row.Row
	return &settlement.Account{PartnerID: r.PartnerID, PartnerName: row.PartnerName, BankCode: r.BankCode, BankName: r.BankName,
		AccountNumber: r.AccountNumber, AccountName: r.AccountName, NameMatches: r.NameMatches, VerifiedAt: r.VerifiedAt.UTC(),
		SetBy: r.SetBy, UpdatedAt: r.UpdatedAt.UTC()}, nil
}

// PutSettlementAccount is Store.PutSettlementAccount in the unit of work.
func (tx *Tx) PutSettlementAccount(ctx context.Context, a *settlement.Account) error {
	return tx.store().PutSettlementAccount(ctx, a)
}
