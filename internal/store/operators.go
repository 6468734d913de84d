package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"partnerd/internal/apperr"
	"partnerd/internal/cursor"
	"partnerd/internal/idempotency"
	"partnerd/internal/lifecycle"
	"partnerd/internal/operators"
	"partnerd/internal/transactions"
	"partnerd/internal/unmatched"
)

type operatorRow struct {
	ID        uuid.UUID `gorm:"primaryKey"`
	Name      string
	KeyHash   string
	CreatedAt time.Time
}

func (operatorRow) TableName() string { return "operators" }

// CreateOperator inserts o.
func (s *Store) CreateOperator(ctx context.Context, o *operators.Operator) error {
	return s.conn(ctx).Create(&operatorRow{ID: o.ID, Name: o.Name, KeyHash: o.KeyHash, CreatedAt: o.CreatedAt}).Error
}

// OperatorByKeyHash returns the operator whose key hashes to hash, or apperr NotFound.
func (s *Store) OperatorByKeyHash(ctx context.Context, hash string) (*operators.Operator, error) {
	var row operatorRow
	if err := s.conn(ctx).Where("key_hash = ?", hash).Take(&row).Error; err != nil {
		return nil, notFound(err, "operator")
	}
	return &operators.Operator{ID: row.ID, Name: row.Name, KeyHash: row.KeyHash, CreatedAt: row.CreatedAt.UTC()}, nil
}

// OperatorKeys is the idempotency store of operator requests: the partner keys'
// queries on the operator_idempotency_keys table, where Key.PartnerID holds the
// operator's id.
type OperatorKeys struct{ s *Store }

// OperatorKeys returns the idempotency store of operator requests.
func (s *Store) OperatorKeys() OperatorKeys { return OperatorKeys{s} }

var _ idempotency.Store = OperatorKeys{}

const operatorKeysTable = "operator_idempotency_keys"

func (k OperatorKeys) table(ctx context.Context) *gorm.DB {
	return k.s.conn(ctx).Table(operatorKeysTable)
}

func opKeyWhere(key idempotency.Key) (string, []any) {
	return "operator_id = ? AND operation = ? AND key = ?", []any{key.PartnerID, key.Operation, key.Key}
}

type operatorKeyRow struct {
	OperatorID     uuid.UUID `gorm:"primaryKey"`
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

func (operatorKeyRow) TableName() string { return operatorKeysTable }

// InsertKey inserts r unless the key exists, reporting whether it did.
func (k OperatorKeys) InsertKey(ctx context.Context, r *idempotency.Record) (bool, error) {
	row := operatorKeyRow{OperatorID: r.PartnerID, Operation: r.Operation, Key: r.Key.Key, Fingerprint: r.Fingerprint,
		State: r.State, LockedAt: r.LockedAt, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
	res := k.s.conn(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	return res.RowsAffected == 1, res.Error
}

// GetKey returns the key's record, or apperr NotFound.
func (k OperatorKeys) GetKey(ctx context.Context, key idempotency.Key) (*idempotency.Record, error) {
	var row operatorKeyRow
	q, args := opKeyWhere(key)
	if err := k.table(ctx).Where(q, args...).Take(&row).Error; err != nil {
		return nil, notFound(err, "idempotency key")
	}
	rec := &idempotency.Record{Key: key, Fingerprint: row.Fingerprint, State: row.State, ResponseBody: row.ResponseBody,
		LockedAt: row.LockedAt.UTC(), CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}
	if row.ResponseStatus != nil {
		rec.ResponseStatus = *row.ResponseStatus
	}
	return rec, nil
}

// RelockKey takes over a stale in-progress claim.
func (k OperatorKeys) RelockKey(ctx context.Context, key idempotency.Key, old, now time.Time) (bool, error) {
	q, args := opKeyWhere(key)
	res := k.table(ctx).Where(q, args...).Where("state = ? AND locked_at = ?", idempotency.InProgress, old).Update("locked_at", now)
	return res.RowsAffected == 1, res.Error
}

// ReplaceExpiredKey overwrites an expired record of the key with r.
func (k OperatorKeys) ReplaceExpiredKey(ctx context.Context, r *idempotency.Record, now time.Time) (bool, error) {
	q, args := opKeyWhere(r.Key)
	res := k.table(ctx).Where(q, args...).Where("expires_at <= ?", now).Updates(map[string]any{
		"fingerprint": r.Fingerprint, "state": r.State, "response_status": nil, "response_body": nil,
		"locked_at": r.LockedAt, "created_at": r.CreatedAt, "expires_at": r.ExpiresAt,
	})
	return res.RowsAffected == 1, res.Error
}

// CompleteKey stores the response and marks the key done.
func (k OperatorKeys) CompleteKey(ctx context.Context, key idempotency.Key, status int, body []byte) error {
	q, args := opKeyWhere(key)
	return k.table(ctx).Where(q, args...).Updates(map[string]any{"state": idempotency.Done, "response_status": status, "response_body": body}).Error
}

// DeleteKey removes an in-progress claim.
func (k OperatorKeys) DeleteKey(ctx context.Context, key idempotency.Key) error {
	q, args := opKeyWhere(key)
	return k.s.conn(ctx).Where(q, args...).Where("state = ?", idempotency.InProgress).Delete(&operatorKeyRow{}).Error
}

// PurgeKeys deletes keys that expired before t.
func (k OperatorKeys) PurgeKeys(ctx context.Context, t time.Time) (int64, error) {
	res := k.s.conn(ctx).Where("expires_at < ?", t).Delete(&operatorKeyRow{})
	return res.RowsAffected, res.Error
}

// ListStage returns a page of every partner's transactions in q's stage, newest
// first, with their deposits. The stage's status condition and the keyset match the
// (status, created_at DESC, id DESC) index.
func (s *Store) ListStage(ctx context.Context, q transactions.StageQuery) ([]*transactions.Transaction, error) {
	db := s.conn(ctx).Model(&transactionRow{})
	switch q.Stage {
	case transactions.AwaitingFill:
		db = db.Where("status = ?", string(lifecycle.DepositConfirming)).
			Where("EXISTS (SELECT 1 FROM deposits d WHERE d.transaction_id = transactions.id AND d.status = ?)", transactions.DepositConfirmed)
	case transactions.AwaitingSettlement:
		db = db.Where("status = ?", string(lifecycle.OrderFilled))
	case transactions.AwaitingPayout:
		db = db.Where("status = ? AND payout_settled_at IS NULL", string(lifecycle.Completed))
	case transactions.StageFailed:
		db = db.Where("status = ?", string(lifecycle.Failed))
	default:
		return nil, apperr.Field(apperr.InvalidRequest, "Unknown stage.", "stage", "not a stage")
	}
	db = whereEq(db, "partner_id", q.PartnerID)
	db = whereEq(db, "network", q.Network)
	db = within(db, "created_at", q.From, q.To)
	db, err := afterPosition(db, "created_at", "id", q.After)
	if err != nil {
		return nil, err
	}
	var rows []transactionRow
	if err := db.Order("created_at DESC, id DESC").Limit(q.Limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*transactions.Transaction, len(rows))
	ids := make([]uuid.UUID, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
		ids[i] = rows[i].ID
	}
	if len(ids) == 0 {
		return out, nil
	}
	var deps []depositRow
	if err := s.conn(ctx).Where("transaction_id IN ?", ids).Find(&deps).Error; err != nil {
		return nil, fmt.Errorf("load deposits: %w", err)
	}
	byID := make(map[uuid.UUID]*depositRow, len(deps))
	for i := range deps {
		byID[deps[i].TransactionID] = &deps[i]
	}
	for _, t := range out {
		if d := byID[t.ID]; d != nil {
			t.Deposit = d.domain()
		}
	}
	return out, nil
}

type unmatchedRow struct {
	ID               uuid.UUID `gorm:"primaryKey"`
	Network          string
	TxHash           string
	LogIndex         int
	ToAddress        string
	Amount           decimal.Decimal
	RawAmount        string
	BlockNumber      int64
	TransactionID    *uuid.UUID
	Status           string
	ResolutionTxHash *string
	ResolutionNote   *string
	ResolvedBy       *uuid.UUID
	ResolvedAt       *time.Time
	CreatedAt        time.Time
}

func (unmatchedRow) TableName() string { return "unmatched_deposits" }

func (r *unmatchedRow) domain() *unmatched.Deposit {
	return &unmatched.Deposit{
		ID: r.ID, Network: r.Network, TxHash: r.TxHash, LogIndex: r.LogIndex, ToAddress: r.ToAddress,
		Amount: r.Amount, RawAmount: r.RawAmount, BlockNumber: r.BlockNumber, TransactionID: r.TransactionID,
		Status: unmatched.Status(r.Status), ResolutionTxHash: r.ResolutionTxHash, ResolutionNote: r.ResolutionNote,
		ResolvedBy: r.ResolvedBy, ResolvedAt: utcPtr(r.ResolvedAt), CreatedAt: r.CreatedAt.UTC(),
	}
}

// InsertUnmatchedDeposit inserts d unless its (network, tx_hash, log_index) is
// recorded already, and returns the stored deposit.
func (s *Store) InsertUnmatchedDeposit(ctx context.Context, d *unmatched.Deposit) (*unmatched.Deposit, error) {
	row := unmatchedRow{
		ID: d.ID, Network: d.Network, TxHash: d.TxHash, LogIndex: d.LogIndex, ToAddress: d.ToAddress,
		Amount: d.Amount, RawAmount: d.RawAmount, BlockNumber: d.BlockNumber, TransactionID: d.TransactionID,
		Status: string(d.Status), CreatedAt: d.CreatedAt,
	}
	if err := s.conn(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return nil, err
	}
	var got unmatchedRow
	if err := s.conn(ctx).Where("network = ? AND tx_hash = ? AND log_index = ?", d.Network, d.TxHash, d.LogIndex).Take(&got).Error; err != nil {
		return nil, notFound(err, "unmatched deposit")
	}
	return got.domain(), nil
}

// UnmatchedDeposit returns deposit id, or apperr NotFound.
func (s *Store) UnmatchedDeposit(ctx context.Context, id uuid.UUID) (*unmatched.Deposit, error) {
	var row unmatchedRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, notFound(err, "unmatched deposit")
	}
	return row.domain(), nil
}

// ListUnmatchedDeposits returns up to limit deposits in status, newest first, after pos.
func (s *Store) ListUnmatchedDeposits(ctx context.Context, status unmatched.Status, pos *cursor.Position, limit int) ([]*unmatched.Deposit, error) {
	db, err := afterPosition(s.conn(ctx).Where("status = ?", string(status)), "created_at", "id", pos)
	if err != nil {
		return nil, err
	}
	var rows []unmatchedRow
	if err := db.Order("created_at DESC, id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*unmatched.Deposit, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// ResolveUnmatchedDeposit closes deposit id if still open (a conditional update,
// correct under concurrency on both databases), reporting whether it did.
func (s *Store) ResolveUnmatchedDeposit(ctx context.Context, id uuid.UUID, r unmatched.Resolution) (bool, error) {
	res := s.conn(ctx).Model(&unmatchedRow{}).Where("id = ? AND status = ?", id, string(unmatched.Open)).Updates(map[string]any{
		"status": string(r.Status), "resolution_tx_hash": r.TxHash, "resolution_note": r.Note,
		"resolved_by": r.OperatorID, "resolved_at": r.At,
	})
	if res.Error != nil && !errors.Is(res.Error, gorm.ErrRecordNotFound) {
		return false, res.Error
	}
	return res.RowsAffected == 1, nil
}

type fillRow struct {
	TransactionID uuid.UUID `gorm:"primaryKey"`
	Rate          decimal.Decimal
	FiatAmount    decimal.Decimal
	Reference     string
	OperatorID    uuid.UUID
	FilledAt      time.Time
}

func (fillRow) TableName() string { return "order_fills" }

// InsertFill records an operator's executed sale.
func (s *Store) InsertFill(ctx context.Context, f *transactions.Fill) error {
	return s.conn(ctx).Create(&fillRow{TransactionID: f.TransactionID, Rate: f.Rate, FiatAmount: f.FiatAmount,
		Reference: f.Reference, OperatorID: f.OperatorID, FilledAt: f.FilledAt}).Error
}

// FillsOf returns the fills of ids that have one.
func (s *Store) FillsOf(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*transactions.Fill, error) {
	out := map[uuid.UUID]*transactions.Fill{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []fillRow
	if err := s.conn(ctx).Where("transaction_id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.TransactionID] = &transactions.Fill{TransactionID: r.TransactionID, Rate: r.Rate, FiatAmount: r.FiatAmount,
			Reference: r.Reference, OperatorID: r.OperatorID, FilledAt: r.FilledAt.UTC()}
	}
	return out, nil
}
