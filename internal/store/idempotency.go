package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm/clause"

	"partnerd/internal/apperr"
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

// InsertKey inserts r unless the key exists (ON CONFLICT DO NOTHING), reporting
// whether it did. A wait for another unit of work's claim that outlasts
// LimitLockWait is apperr IdempotencyRequestInProgress.
func (tx *Tx) InsertKey(ctx context.Context, r *idempotency.Record) (bool, error) {
	row := idempotencyRow{PartnerID: r.PartnerID, Operation: r.Operation, Key: r.Key.Key, Fingerprint: r.Fingerprint,
		State: r.State, LockedAt: r.LockedAt, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
	if r.State == idempotency.Done {
		status := r.ResponseStatus
		row.ResponseStatus, row.ResponseBody = &status, r.ResponseBody
	}
	res := tx.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	if lockTimedOut(res.Error) {
		return false, apperr.New(apperr.IdempotencyRequestInProgress,
			"A request with this Idempotency-Key is still being processed; retry shortly.")
	}
	return res.RowsAffected == 1, res.Error
}

// lockTimedOut reports PostgreSQL's lock_not_available (lock_timeout expired).
func lockTimedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// LimitLockWait sets PostgreSQL's lock_timeout for the rest of the unit of work.
func (tx *Tx) LimitLockWait(ctx context.Context, d time.Duration) error {
	if tx.s.dialect != Postgres {
		return nil
	}
	return tx.db.WithContext(ctx).Exec(fmt.Sprintf("SET LOCAL lock_timeout = %d", d.Milliseconds())).Error
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

// ReplaceKey overwrites an expired record of the key, or an in-progress claim
// locked before staleBefore, with r.
func (tx *Tx) ReplaceKey(ctx context.Context, r *idempotency.Record, now, staleBefore time.Time) (bool, error) {
	q, args := keyWhere(r.Key)
	res := tx.db.WithContext(ctx).Model(&idempotencyRow{}).Where(q, args...).
		Where("expires_at <= ? OR (state = ? AND locked_at < ?)", now, idempotency.InProgress, staleBefore).
		Updates(map[string]any{
			"fingerprint": r.Fingerprint, "state": r.State, "response_status": nil, "response_body": nil,
			"locked_at": r.LockedAt, "created_at": r.CreatedAt, "expires_at": r.ExpiresAt,
		})
	return res.RowsAffected == 1, res.Error
}

// CompleteKey stores the response and marks the key done.
func (tx *Tx) CompleteKey(ctx context.Context, k idempotency.Key, status int, body []byte) error {
	q, args := keyWhere(k)
	return tx.db.WithContext(ctx).Model(&idempotencyRow{}).Where(q, args...).
		Updates(map[string]any{"state": idempotency.Done, "response_status": status, "response_body": body}).Error
}

// PurgeKeys deletes keys that expired before t.
func (s *Store) PurgeKeys(ctx context.Context, t time.Time) (int64, error) {
	res := s.write(ctx).Where("expires_at < ?", t).Delete(&idempotencyRow{})
	return res.RowsAffected, res.Error
}
