package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"partnerd/internal/apikeys"
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/jobs"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
)

type operatorRow struct {
	ID        uuid.UUID `gorm:"primaryKey"`
	Name      string
	KeyHash   string
	Roles     string // comma-separated (operators.JoinRoles)
	CreatedAt time.Time
}

func (operatorRow) TableName() string { return "operators" }

// domain is the row as the operators package knows it (KeyHash aside); a role the
// code no longer knows is dropped, never granted.
func (r *operatorRow) domain() *operators.Operator {
	var roles []operators.Role
	for _, n := range strings.Split(r.Roles, ",") {
		if slices.Contains(operators.Roles, operators.Role(n)) {
			roles = append(roles, operators.Role(n))
		}
	}
	return &operators.Operator{ID: r.ID, Name: r.Name, Roles: roles, CreatedAt: r.CreatedAt.UTC()}
}

// SetOperatorRoles replaces operator id's roles (apperr NotFound for no such operator).
func (s *Store) SetOperatorRoles(ctx context.Context, id uuid.UUID, roles []operators.Role) error {
	res := s.write(ctx).Model(&operatorRow{}).Where("id = ?", id).Update("roles", operators.JoinRoles(roles))
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return notFound(gorm.ErrRecordNotFound, "operator")
	}
	return nil
}

// CreateOperator inserts o and its first API key (o.KeyHash, o.KeyPrefix), whose id
// is the account's own (as for the keys the migration carried over).
func (s *Store) CreateOperator(ctx context.Context, o *operators.Operator) error {
	return s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		s := tx.store()
		db := s.write(ctx)
		if len(o.Roles) == 0 {
			// No roles given: the column's default (an account as old as roles is an
			// admin; the operators service never creates one without roles).
			db = db.Omit("roles")
		}
		if err := db.Create(&operatorRow{ID: o.ID, Name: o.Name, KeyHash: o.KeyHash, Roles: operators.JoinRoles(o.Roles), CreatedAt: o.CreatedAt}).Error; err != nil {
			return err
		}
		return s.InsertAPIKey(ctx, &apikeys.Key{ID: o.ID, Owner: apikeys.Operator, OwnerID: o.ID, Hash: o.KeyHash, Prefix: o.KeyPrefix, CreatedAt: o.CreatedAt})
	})
}

// OperatorByKeyHash returns the operator whose working key hashes to hash (not
// revoked, not expired), or apperr NotFound; it records the key's use. KeyHash is
// the hash of the key that authenticated.
func (s *Store) OperatorByKeyHash(ctx context.Context, hash string) (*operators.Operator, error) {
	var row operatorRow
	now := Now()
	err := s.read(ctx).Table("api_keys AS k").Select("o.*").Joins("JOIN operators o ON o.id = k.owner_id").
		Where(usableKey, hash, string(apikeys.Operator), now).Take(&row).Error
	if err != nil {
		return nil, notFound(err, "operator")
	}
	if err := s.touchKey(ctx, hash, now); err != nil {
		return nil, err
	}
	o := row.domain()
	o.KeyHash = hash
	return o, nil
}

// Operators returns every operator, oldest first.
func (s *Store) Operators(ctx context.Context) ([]*operators.Operator, error) {
	var rows []operatorRow
	if err := s.read(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*operators.Operator, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// OperatorByID returns operator id, or apperr NotFound.
func (s *Store) OperatorByID(ctx context.Context, id uuid.UUID) (*operators.Operator, error) {
	var row operatorRow
	if err := s.read(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, notFound(err, "operator")
	}
	return row.domain(), nil
}

// ListStage returns a page of every partner's transactions in q's stage (of every
// status without one) matching q, newest first (oldest with q.Oldest), with their
// deposits. The stage's status condition and the keyset match the (status,
// created_at DESC, id DESC) index.
func (s *Store) ListStage(ctx context.Context, q backoffice.StageQuery) ([]*lifecycle.Transaction, error) {
	db, err := stageWhere(s.read(ctx).Model(&transactionRow{}), q.Stage, q.StuckBefore)
	if err != nil {
		return nil, err
	}
	db = whereEq(db, "partner_id", q.PartnerID)
	db = whereEq(db, "network", q.Network)
	db = within(db, "created_at", q.From, q.To)
	if q.Search != nil {
		db = search(db, *q.Search, *q.SearchKey)
	}
	order := "created_at DESC, id DESC"
	if q.Oldest {
		order = "created_at, id"
		db, err = beforePosition(db, "created_at", "id", q.After)
	} else {
		db, err = afterPosition(db, "created_at", "id", q.After)
	}
	if err != nil {
		return nil, err
	}
	var rows []transactionRow
	if err := db.Order(order).Limit(q.Limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*lifecycle.Transaction, len(rows))
	ids := make([]uuid.UUID, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
		ids[i] = rows[i].ID
	}
	if len(ids) == 0 {
		return out, nil
	}
	var deps []depositRow
	if err := s.read(ctx).Where("transaction_id IN ?", ids).Find(&deps).Error; err != nil {
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

// proceeding are the screening states whose money may be sold (lifecycle's
// Screening.Proceeds).
var proceeding = []string{string(lifecycle.ScreeningNone), string(lifecycle.ScreeningClear), string(lifecycle.ScreeningReleased)}

// awaitingPayout is the awaiting-payout stage's condition, written with its
// values in the text as the partial index transactions_awaiting_payout_idx is
// (a condition with parameters does not match a partial index's predicate in a
// plan made for any value, nor on SQLite).
var awaitingPayout = "status = '" + string(lifecycle.Completed) + "' AND payout_settled_at IS NULL"

// failedStage is the failed stage's condition, in the text for the same reason:
// its partial index transactions_failed_idx holds the amounts, so the overview
// counts and sums every failed transaction from the index alone (reading each
// one's row was most of a second on two million transactions).
var failedStage = "status = '" + string(lifecycle.Failed) + "'"

// stageWhere narrows a query on transactions to stage ("" leaves it whole): the
// one definition of each stage, shared by the lists and the overview's totals.
func stageWhere(db *gorm.DB, stage backoffice.Stage, stuckBefore time.Time) (*gorm.DB, error) {
	const deposit = "EXISTS (SELECT 1 FROM deposits d WHERE d.transaction_id = transactions.id AND d.status = ?"
	switch stage {
	case "":
		return db, nil
	case backoffice.AwaitingFill: // lifecycle.AwaitingFill
		return db.Where("status = ? AND screening IN ?", string(lifecycle.DepositConfirming), proceeding).
			Where(deposit+")", lifecycle.DepositStatusConfirmed), nil
	case backoffice.AwaitingSettlement:
		return db.Where("status = ?", string(lifecycle.OrderFilled)), nil
	case backoffice.AwaitingPayout: // lifecycle.AwaitingPayout
		return db.Where(awaitingPayout), nil
	case backoffice.StageFailed:
		return db.Where(failedStage), nil
	case backoffice.ConfirmingTooLong:
		return db.Where("status = ?", string(lifecycle.DepositConfirming)).
			Where(deposit+" AND d.received_at <= ?)", lifecycle.DepositStatusConfirming, stuckBefore.UTC()), nil
	default:
		return nil, apperr.Field(apperr.InvalidRequest, "Unknown stage.", "stage", "not a stage")
	}
}

// search narrows a query on transactions to those a support ticket's text q
// names: the merchant reference (folded to key), the deposit address, a deposit's
// chain hash (either as recorded or as a chain transfer), or the id, each
// compared case-insensitively as the address and hashes are. Each is an exact
// lookup through its own index (the lower-case forms are the generated columns
// address_key and hash_key, stored with the row), and their union names the
// transactions: an OR of the conditions would leave the database no index to
// serve it, and it would read every transaction, deposit and chain transfer.
func search(db *gorm.DB, q, key string) *gorm.DB {
	lower := strings.ToLower(q)
	ids := "SELECT id FROM transactions WHERE reference_key = ?" +
		" UNION SELECT id FROM transactions WHERE address_key = ?" +
		" UNION SELECT transaction_id FROM deposits WHERE hash_key = ?" +
		" UNION SELECT transaction_id FROM chain_transfers WHERE hash_key = ?"
	args := []any{key, lower, lower, lower}
	if id, err := uuid.Parse(q); err == nil {
		ids += " UNION SELECT id FROM transactions WHERE id = ?"
		args = append(args, id)
	}
	return db.Where("transactions.id IN ("+ids+")", args...)
}

// StageTotal counts stage's transactions and sums their token and NGN amounts
// exactly, in one statement over the stage's index where the database sums
// decimals (engine.countSums).
func (s *Store) StageTotal(ctx context.Context, stage backoffice.Stage, stuckBefore time.Time) (backoffice.StageTotal, error) {
	out := backoffice.StageTotal{Stage: stage}
	db, err := stageWhere(s.read(ctx).Model(&transactionRow{}), stage, stuckBefore)
	if err != nil {
		return out, err
	}
	n, sums, err := s.eng.countSums(db, "crypto_amount", "fiat_amount")
	if err != nil {
		return out, err
	}
	out.Count, out.Crypto, out.Fiat = int(n), sums[0], sums[1]
	return out, nil
}

type unmatchedRow struct {
	ID               uuid.UUID `gorm:"primaryKey"`
	Kind             string
	Network          string
	TxHash           string
	LogIndex         int
	FromAddress      string
	ToAddress        string
	RefundTo         *string
	Amount           decimal.Decimal
	RawAmount        string
	BlockNumber      int64
	TransactionID    *uuid.UUID
	PartnerID        *uuid.UUID
	Status           string
	ResolutionTxHash *string
	ResolutionNote   *string
	ResolvedBy       *uuid.UUID
	ResolvedAt       *time.Time
	CreatedAt        time.Time
}

// TableName: unmatched deposits are one kind of refund task.
func (unmatchedRow) TableName() string { return "refund_tasks" }

func (r *unmatchedRow) domain() *lifecycle.RefundTask {
	return &lifecycle.RefundTask{
		ID: r.ID, Kind: lifecycle.TaskKind(r.Kind), Network: r.Network, TxHash: r.TxHash, LogIndex: r.LogIndex,
		FromAddress: r.FromAddress, ToAddress: r.ToAddress, RefundTo: r.RefundTo,
		Amount: r.Amount, RawAmount: r.RawAmount, BlockNumber: r.BlockNumber, TransactionID: r.TransactionID, PartnerID: r.PartnerID,
		Status: lifecycle.TaskStatus(r.Status), ResolutionTxHash: r.ResolutionTxHash, ResolutionNote: r.ResolutionNote,
		ResolvedBy: r.ResolvedBy, ResolvedAt: utcPtr(r.ResolvedAt), CreatedAt: r.CreatedAt.UTC(),
	}
}

// InsertUnmatchedDeposit inserts refund task d unless its (kind, network, tx_hash,
// log_index) is recorded already, and returns the stored task. A short task is a
// transaction's running total named by its last transfer, not one transfer: when
// one with the same identity exists (resolved by a payment that a reorganisation
// since took back) it is re-opened with d's amount and sender instead, so the money
// is never left without an open task.
func (s *Store) InsertUnmatchedDeposit(ctx context.Context, d *lifecycle.RefundTask) (*lifecycle.RefundTask, error) {
	row := unmatchedRow{
		ID: d.ID, Kind: string(d.Kind), Network: d.Network, TxHash: d.TxHash, LogIndex: d.LogIndex,
		FromAddress: d.FromAddress, ToAddress: d.ToAddress, RefundTo: d.RefundTo,
		Amount: d.Amount, RawAmount: d.RawAmount, BlockNumber: d.BlockNumber, TransactionID: d.TransactionID, PartnerID: d.PartnerID,
		Status: string(d.Status), CreatedAt: d.CreatedAt,
	}
	onConflict := clause.OnConflict{DoNothing: true}
	if d.Kind == lifecycle.TaskShort {
		onConflict = clause.OnConflict{
			Columns: []clause.Column{{Name: "kind"}, {Name: "network"}, {Name: "tx_hash"}, {Name: "log_index"}},
			DoUpdates: clause.Assignments(map[string]any{
				"amount": d.Amount, "raw_amount": d.RawAmount, "from_address": d.FromAddress, "block_number": d.BlockNumber,
				"transaction_id": d.TransactionID, "partner_id": d.PartnerID, "status": string(d.Status), "refund_to": d.RefundTo,
				"resolution_tx_hash": nil, "resolution_note": nil, "resolved_by": nil, "resolved_at": nil,
			}),
		}
	}
	if err := s.write(ctx).Clauses(onConflict).Create(&row).Error; err != nil {
		return nil, err
	}
	var got unmatchedRow
	if err := s.write(ctx).Where("kind = ? AND network = ? AND tx_hash = ? AND log_index = ?", string(d.Kind), d.Network, d.TxHash, d.LogIndex).Take(&got).Error; err != nil {
		return nil, notFound(err, "refund task")
	}
	return got.domain(), nil
}

// UnmatchedDeposit returns refund task id, or apperr NotFound.
func (s *Store) UnmatchedDeposit(ctx context.Context, id uuid.UUID) (*lifecycle.RefundTask, error) {
	var row unmatchedRow
	if err := s.read(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, notFound(err, "refund task")
	}
	return row.domain(), nil
}

// ListRefundTasks returns up to limit tasks matching f, newest first, after pos.
func (s *Store) ListRefundTasks(ctx context.Context, f refunds.Filter, pos *cursor.Position, limit int) ([]*lifecycle.RefundTask, error) {
	db := s.read(ctx)
	switch {
	case f.Open:
		db = db.Where("status = ?", string(lifecycle.TaskOpen))
	case f.Resolved != "":
		db = db.Where("status = ?", string(f.Resolved))
	default:
		// In the text, as the partial index refund_tasks_resolved_idx's condition
		// is: a page of the resolved tasks, newest first, reads that page alone
		// (with a parameter, every resolved task was read and sorted).
		db = db.Where("status <> '" + string(lifecycle.TaskOpen) + "'")
	}
	if f.Kind != nil {
		db = db.Where("kind = ?", string(*f.Kind))
	}
	db = whereEq(db, "partner_id", f.PartnerID)
	db = whereEq(db, "network", f.Network)
	db, err := afterPosition(db, "created_at", "id", pos)
	if err != nil {
		return nil, err
	}
	var rows []unmatchedRow
	if err := db.Order("created_at DESC, id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*lifecycle.RefundTask, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// ResolveUnmatchedDeposit closes task id if still open (a conditional update,
// correct under concurrency on both databases), reporting whether it did.
func (s *Store) ResolveUnmatchedDeposit(ctx context.Context, id uuid.UUID, r lifecycle.TaskResolution) (bool, error) {
	res := s.write(ctx).Model(&unmatchedRow{}).Where("id = ? AND status = ?", id, string(lifecycle.TaskOpen)).Updates(resolution(r))
	if res.Error != nil && !errors.Is(res.Error, gorm.ErrRecordNotFound) {
		return false, res.Error
	}
	return res.RowsAffected == 1, nil
}

// ResolveOpenRefundTasks closes transaction id's open tasks of kind with r.
func (s *Store) ResolveOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind lifecycle.TaskKind, r lifecycle.TaskResolution) error {
	return s.write(ctx).Model(&unmatchedRow{}).Where("transaction_id = ? AND kind = ? AND status = ?",
		transactionID, string(kind), string(lifecycle.TaskOpen)).Updates(resolution(r)).Error
}

// DirectOpenRefundTasks sets where transaction id's open tasks of kind are refunded.
func (s *Store) DirectOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind lifecycle.TaskKind, address string) error {
	return s.write(ctx).Model(&unmatchedRow{}).Where("transaction_id = ? AND kind = ? AND status = ?",
		transactionID, string(kind), string(lifecycle.TaskOpen)).Update("refund_to", address).Error
}

// DeleteOpenRefundTasks deletes transaction id's open tasks of kind.
func (s *Store) DeleteOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind lifecycle.TaskKind) error {
	return s.write(ctx).Where("transaction_id = ? AND kind = ? AND status = ?",
		transactionID, string(kind), string(lifecycle.TaskOpen)).Delete(&unmatchedRow{}).Error
}

func resolution(r lifecycle.TaskResolution) map[string]any {
	var by *uuid.UUID
	if r.OperatorID != uuid.Nil {
		by = &r.OperatorID
	}
	return map[string]any{
		"status": string(r.Status), "resolution_tx_hash": r.TxHash, "resolution_note": r.Note,
		"resolved_by": by, "resolved_at": r.At,
	}
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
func (tx *Tx) InsertFill(ctx context.Context, f *lifecycle.Fill) error {
	return tx.db.WithContext(ctx).Create(&fillRow{TransactionID: f.TransactionID, Rate: f.Rate, FiatAmount: f.FiatAmount,
		Reference: f.Reference, OperatorID: f.OperatorID, FilledAt: f.FilledAt}).Error
}

// FillsOf returns the fills of ids that have one.
func (s *Store) FillsOf(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*lifecycle.Fill, error) {
	out := map[uuid.UUID]*lifecycle.Fill{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []fillRow
	if err := s.read(ctx).Where("transaction_id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.TransactionID] = &lifecycle.Fill{TransactionID: r.TransactionID, Rate: r.Rate, FiatAmount: r.FiatAmount,
			Reference: r.Reference, OperatorID: r.OperatorID, FilledAt: r.FilledAt.UTC()}
	}
	return out, nil
}

// ScheduleStep inserts the job of an automatic settlement step, due at at.
func (tx *Tx) ScheduleStep(ctx context.Context, id uuid.UUID, step string, at time.Time) error {
	return tx.Enqueue(ctx, jobs.SettlementStepArgs{TransactionID: id, Step: step}, &river.InsertOpts{ScheduledAt: at})
}

// DeleteOpenUnmatchedDeposit deletes the transfer's unmatched (or dust) task while
// it is open (its block was reorganised away).
func (s *Store) DeleteOpenUnmatchedDeposit(ctx context.Context, network, txHash string, logIndex int) error {
	return s.write(ctx).Where("kind IN ? AND network = ? AND tx_hash = ? AND log_index = ? AND status = ?",
		[]string{string(lifecycle.TaskUnmatched), string(lifecycle.TaskDust)}, network, txHash, logIndex, string(lifecycle.TaskOpen)).Delete(&unmatchedRow{}).Error
}

// Refund tasks recorded or closed in the unit of work of the change that found the
// money (lifecycle.TaskTx), one line over the Store's statements bound to it.

// InsertUnmatchedDeposit is Store.InsertUnmatchedDeposit in the unit of work.
func (tx *Tx) InsertUnmatchedDeposit(ctx context.Context, d *lifecycle.RefundTask) (*lifecycle.RefundTask, error) {
	return tx.store().InsertUnmatchedDeposit(ctx, d)
}

// DeleteOpenUnmatchedDeposit is Store.DeleteOpenUnmatchedDeposit in the unit of work.
func (tx *Tx) DeleteOpenUnmatchedDeposit(ctx context.Context, network, txHash string, logIndex int) error {
	return tx.store().DeleteOpenUnmatchedDeposit(ctx, network, txHash, logIndex)
}

// DeleteOpenRefundTasks is Store.DeleteOpenRefundTasks in the unit of work.
func (tx *Tx) DeleteOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind lifecycle.TaskKind) error {
	return tx.store().DeleteOpenRefundTasks(ctx, transactionID, kind)
}

// DirectOpenRefundTasks is Store.DirectOpenRefundTasks in the unit of work.
func (tx *Tx) DirectOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind lifecycle.TaskKind, address string) error {
	return tx.store().DirectOpenRefundTasks(ctx, transactionID, kind, address)
}

// ResolveOpenRefundTasks is Store.ResolveOpenRefundTasks in the unit of work.
func (tx *Tx) ResolveOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind lifecycle.TaskKind, r lifecycle.TaskResolution) error {
	return tx.store().ResolveOpenRefundTasks(ctx, transactionID, kind, r)
}
