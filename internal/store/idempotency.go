package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm/clause"

	"partnerd/internal/idempotency"
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

// InsertKey inserts r unless the key exists (ON CONFLICT DO NOTHING), reporting whether it did.
func (s *Store) InsertKey(ctx context.Context, r *idempotency.Record) (bool, error) {
	row := idempotencyRow{PartnerID: r.PartnerID, Operation: r.Operation, Key: r.Key.Key, Fingerprint: r.Fingerprint,
		State: r.State, LockedAt: r.LockedAt, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
	res := s.conn(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	return res.RowsAffected == 1, res.Error
}

// GetKey returns the key's record, or apperr NotFound.
func (s *Store) GetKey(ctx context.Context, k idempotency.Key) (*idempotency.Record, error) {
	var row idempotencyRow
	q, args := keyWhere(k)
	if err := s.conn(ctx).Where(q, args...).Take(&row).Error; err != nil {
		return nil, notFound(err, "idempotency key")
	}
	rec := &idempotency.Record{Key: k, Fingerprint: row.Fingerprint, State: row.State, ResponseBody: row.ResponseBody,
		LockedAt: row.LockedAt.UTC(), CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}
	if row.ResponseStatus != nil {
		rec.ResponseStatus = *row.ResponseStatus
	}
	return rec, nil
}

// RelockKey takes over a stale in-progress claim (compare-and-set on locked_at).
func (s *Store) RelockKey(ctx context.Context, k idempotency.Key, old, now time.Time) (bool, error) {
	q, args := keyWhere(k)
	res := s.conn(ctx).Model(&idempotencyRow{}).Where(q, args...).
		Where("state = ? AND locked_at = ?", idempotency.InProgress, old).Update("locked_at", now)
	return res.RowsAffected == 1, res.Error
}

// ReplaceExpiredKey overwrites an expired record of the key with r.
func (s *Store) ReplaceExpiredKey(ctx context.Context, r *idempotency.Record, now time.Time) (bool, error) {
	q, args := keyWhere(r.Key)
	res := s.conn(ctx).Model(&idempotencyRow{}).Where(q, args...).Where("expires_at <= ?", now).
		Updates(map[string]any{
			"fingerprint": r.Fingerprint, "state": r.State, "response_status": nil, "response_body": nil,
			"locked_at": r.LockedAt, "created_at": r.CreatedAt, "expires_at": r.ExpiresAt,
		})
	return res.RowsAffected == 1, res.Error
}

// CompleteKey stores the response and marks the key done.
func (s *Store) CompleteKey(ctx context.Context, k idempotency.Key, status int, body []byte) error {
	q, args := keyWhere(k)
	return s.conn(ctx).Model(&idempotencyRow{}).Where(q, args...).
		Updates(map[string]any{"state": idempotency.Done, "response_status": status, "response_body": body}).Error
}

// DeleteKey removes an in-progress claim.
func (s *Store) DeleteKey(ctx context.Context, k idempotency.Key) error {
	q, args := keyWhere(k)
	return s.conn(ctx).Where(q, args...).Where("state = ?", idempotency.InProgress).Delete(&idempotencyRow{}).Error
}

// PurgeKeys deletes keys that expired before t.
func (s *Store) PurgeKeys(ctx context.Context, t time.Time) (int64, error) {
	res := s.conn(ctx).Where("expires_at < ?", t).Delete(&idempotencyRow{})
	return res.RowsAffected, res.Error
}
