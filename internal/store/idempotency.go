package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm/clause"

	"partnerd/internal/idempotency"
	"partnerd/internal/transactions"
)

type idempotencyRow struct {
	PartnerID      uuid.UUID `gorm:"primaryKey"`
	Operation      string    `gorm:"primaryKey"`
	Key            string    `gorm:"primaryKey"`
	Fingerprint    string
	State          string
	ResponseStatus *int
	ResponseBody   []byte
	LockedAt       time.Time
	CreatedAt      time.Time
	ExpiresAt      time.Time
}

func (idempotencyRow) TableName() string { return "idempotency_keys" }

func keyWhere(k idempotency.Key) (string, []any) {
	return "partner_id = ? AND operation = ? AND key = ?", []any{k.PartnerID, k.Operation, k.Key}
}

// Compile-time checks: the unit of work is every domain package's transaction.
var (
	_ idempotency.Tx  = (*Tx)(nil)
	_ transactions.Tx = (*Tx)(nil)
)

// SaveKey stores r (a done key) unless a live record holds the key: one upsert,
// conditional on the existing record being expired or an abandoned claim. On
// PostgreSQL, meeting another unit of work's uncommitted row of the key, it waits
// for that unit to end.
func (tx *Tx) SaveKey(ctx context.Context, r *idempotency.Record, now, staleBefore time.Time) (bool, error) {
	status := r.ResponseStatus
	row := idempotencyRow{PartnerID: r.PartnerID, Operation: r.Operation, Key: r.Key.Key, Fingerprint: r.Fingerprint,
		State: r.State, ResponseStatus: &status, ResponseBody: r.ResponseBody,
		LockedAt: r.LockedAt, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
	res := tx.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "partner_id"}, {Name: "operation"}, {Name: "key"}},
		DoUpdates: clause.AssignmentColumns([]string{
			"fingerprint", "state", "response_status", "response_body", "locked_at", "created_at", "expires_at",
		}),
		Where: clause.Where{Exprs: []clause.Expression{clause.Expr{
			SQL:  "idempotency_keys.expires_at <= ? OR (idempotency_keys.state = ? AND idempotency_keys.locked_at < ?)",
			Vars: []any{now, idempotency.InProgress, staleBefore},
		}}},
	}).Create(&row)
	return res.RowsAffected == 1, res.Error
}

// GetKey returns the key's record, or apperr NotFound.
func (tx *Tx) GetKey(ctx context.Context, k idempotency.Key) (*idempotency.Record, error) {
	var row idempotencyRow
	q, args := keyWhere(k)
	if err := tx.db.WithContext(ctx).Where(q, args...).Take(&row).Error; err != nil {
		return nil, notFound(err, "idempotency key")
	}
	rec := &idempotency.Record{Key: k, Fingerprint: row.Fingerprint, State: row.State, ResponseBody: row.ResponseBody,
		LockedAt: row.LockedAt.UTC(), CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}
	if row.ResponseStatus != nil {
		rec.ResponseStatus = *row.ResponseStatus
	}
	return rec, nil
}

// PurgeKeys deletes keys that expired before t.
func (s *Store) PurgeKeys(ctx context.Context, t time.Time) (int64, error) {
	res := s.write(ctx).Where("expires_at < ?", t).Delete(&idempotencyRow{})
	return res.RowsAffected, res.Error
}
