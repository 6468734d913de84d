package store

import (
	"context"
	"time"

	"gorm.io/gorm"

	"partnerd/internal/deposits"
	"partnerd/internal/idempotency"
	"partnerd/internal/lifecycle"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/transactions"
	"partnerd/internal/webhook"
)

// keyTable is a table of idempotency keys: the partners' (idempotency_keys) or
// the operators' (operator_idempotency_keys), the same columns but for the owner's.
type keyTable struct{ name, owner string }

var (
	partnerKeyTable  = keyTable{"idempotency_keys", "partner_id"}
	operatorKeyTable = keyTable{"operator_idempotency_keys", "operator_id"}
)

// keyTx is a unit of work as the idempotency layer sees it, on one key table.
type keyTx struct {
	*Tx
	table keyTable
}

// Compile-time checks: the unit of work is every domain package's transaction.
var (
	_ idempotency.Tx     = (*Tx)(nil)
	_ idempotency.Tx     = keyTx{}
	_ idempotency.Keeper = (*Tx)(nil)
	_ lifecycle.Tx       = (*Tx)(nil)
	_ deposits.Tx        = (*Tx)(nil)
	_ quotes.Tx          = (*Tx)(nil)
	_ transactions.Tx    = (*Tx)(nil)
	_ webhook.Tx         = (*Tx)(nil)
)

// Keys returns owner's idempotency keys in this unit of work: the idempotency
// layer stores a use case's answer in the use case's own unit of work, which it
// is handed as the domain interface the use case sees (idempotency.Keeper).
func (tx *Tx) Keys(owner idempotency.Owner) idempotency.Tx {
	if owner == idempotency.Operators {
		return keyTx{tx, operatorKeyTable}
	}
	return keyTx{tx, partnerKeyTable}
}

// PartnerKeys returns the idempotency store of partner requests (idempotency_keys).
func (s *Store) PartnerKeys() idempotency.Store {
	return keyStore{s, idempotency.Partners, partnerKeyTable}
}

// OperatorKeys returns the idempotency store of operator requests: the same
// rules as the partner keys', on the operator_idempotency_keys table, where
// Key.PartnerID holds the operator's id.
func (s *Store) OperatorKeys() idempotency.Store {
	return keyStore{s, idempotency.Operators, operatorKeyTable}
}

// keyStore is one owner's keys, on its table.
type keyStore struct {
	s     *Store
	owner idempotency.Owner
	table keyTable
}

func (k keyStore) WithTx(ctx context.Context, fn func(ctx context.Context, tx idempotency.Tx) error) error {
	return k.s.Transact(ctx, func(ctx context.Context, tx *Tx) error { return fn(ctx, keyTx{tx, k.table}) })
}

func (k keyStore) Owner() idempotency.Owner { return k.owner }

func (k keyStore) PurgeKeys(ctx context.Context, t time.Time) (int64, error) {
	return k.table.purge(k.s.write(ctx), t)
}

// GetKey returns the partner key's record (see keyTx.GetKey).
func (tx *Tx) GetKey(ctx context.Context, k idempotency.Key) (*idempotency.Record, error) {
	return keyTx{tx, partnerKeyTable}.GetKey(ctx, k)
}

// SaveKey stores a partner key's answer (see keyTx.SaveKey).
func (tx *Tx) SaveKey(ctx context.Context, r *idempotency.Record, now, staleBefore time.Time) (bool, error) {
	return keyTx{tx, partnerKeyTable}.SaveKey(ctx, r, now, staleBefore)
}

func (t keyTable) where(k idempotency.Key) (string, []any) {
	return t.owner + " = ? AND operation = ? AND key = ?", []any{k.PartnerID, k.Operation, k.Key}
}

// keyRow is a key's stored state (the owner, operation and key are asked for).
type keyRow struct {
	Fingerprint    string
	State          string
	ResponseStatus *int
	ResponseBody   []byte
	// ResponseKey is the id of the key that sealed ResponseBody (nil: stored in the
	// clear before answers were sealed).
	ResponseKey *string
	LockedAt    time.Time
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// GetKey returns the key's record, or apperr NotFound.
func (kt keyTx) GetKey(ctx context.Context, k idempotency.Key) (*idempotency.Record, error) {
	var row keyRow
	q, args := kt.table.where(k)
	if err := kt.db.WithContext(ctx).Table(kt.table.name).Where(q, args...).Take(&row).Error; err != nil {
		return nil, notFound(err, "idempotency key")
	}
	body, err := kt.s.openAnswer(kt.table, k, row.ResponseKey, row.ResponseBody)
	if err != nil {
		return nil, err
	}
	rec := &idempotency.Record{Key: k, Fingerprint: row.Fingerprint, State: row.State, ResponseBody: body,
		LockedAt: row.LockedAt.UTC(), CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}
	if row.ResponseStatus != nil {
		rec.ResponseStatus = *row.ResponseStatus
	}
	return rec, nil
}

// SaveKey stores r (a done key) unless a live record holds the key: one upsert,
// conditional on the existing record being expired or an abandoned claim. On
// PostgreSQL, meeting another unit of work's uncommitted row of the key, it waits
// for that unit to end. It goes with the writes waiting behind it (a create's
// history row and event), as one statement.
func (kt keyTx) SaveKey(ctx context.Context, r *idempotency.Record, now, staleBefore time.Time) (bool, error) {
	t := kt.table
	var saved bool
	keyID, body := kt.s.sealAnswer(t, r.Key, r.ResponseBody)
	err := kt.later(ctx, laterWrite{
		query: `INSERT INTO ` + t.name + ` (` + t.owner + `, operation, key, fingerprint, state,
		response_status, response_body, response_key, locked_at, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (` + t.owner + `, operation, key) DO UPDATE SET fingerprint = excluded.fingerprint, state = excluded.state,
			response_status = excluded.response_status, response_body = excluded.response_body, response_key = excluded.response_key,
			locked_at = excluded.locked_at, created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE ` + t.name + `.expires_at <= ? OR (` + t.name + `.state = ? AND ` + t.name + `.locked_at < ?)
		RETURNING true AS r`,
		args: []any{r.PartnerID, r.Operation, r.Key.Key, r.Fingerprint, r.State, r.ResponseStatus, body, keyID,
			r.LockedAt, r.CreatedAt, r.ExpiresAt, now, idempotency.InProgress, staleBefore},
		done: func(_ context.Context, rows int64, _ bool) error {
			saved = rows == 1
			return nil
		},
	})
	if err == nil {
		err = kt.flush(ctx)
	}
	return saved, err
}

func (t keyTable) purge(db *gorm.DB, before time.Time) (int64, error) {
	res := db.Table(t.name).Where("expires_at < ?", before).Delete(map[string]any{})
	return res.RowsAffected, res.Error
}
