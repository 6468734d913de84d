package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"partnerd/internal/audit"
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/payouts"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
	"partnerd/internal/webhook"
)

var (
	_ batches.Tx           = (*Tx)(nil)
	_ batches.Store        = For(nil, func(tx *Tx) batches.Tx { return tx })
	_ audit.Store          = (*Store)(nil)
	_ backoffice.Store     = (*Store)(nil)
	_ payouts.BalanceStore = (*Store)(nil)
)

type batchRow struct {
	ID           uuid.UUID `gorm:"primaryKey"`
	Kind         string
	PartnerID    *uuid.UUID
	Reference    string
	Rate         decimal.NullDecimal
	FiatAmount   decimal.Decimal
	CryptoAmount decimal.Decimal
	OperatorID   *uuid.UUID // NULL for a payout the service recorded (simulated, automatic)
	CreatedAt    time.Time
}

func (batchRow) TableName() string { return "operator_batches" }

type batchItemRow struct {
	BatchID       uuid.UUID `gorm:"primaryKey"`
	Kind          string
	TransactionID uuid.UUID `gorm:"primaryKey"`
	Position      int
}

func (batchItemRow) TableName() string { return "operator_batch_items" }

// InsertBatch writes b and its items; a batch of no operator (the nil UUID, a
// payout the service recorded) is written without one.
func (tx *Tx) InsertBatch(ctx context.Context, b *batches.Batch) error {
	row := batchRow{ID: b.ID, Kind: string(b.Kind), PartnerID: b.PartnerID, Reference: b.Reference,
		FiatAmount: b.FiatAmount, CryptoAmount: b.CryptoAmount, CreatedAt: b.CreatedAt}
	if b.OperatorID != uuid.Nil {
		op := b.OperatorID
		row.OperatorID = &op
	}
	if b.Rate != nil {
		row.Rate = decimal.NewNullDecimal(*b.Rate)
	}
	db := tx.db.WithContext(ctx)
	if err := db.Create(&row).Error; err != nil {
		return err
	}
	items := make([]batchItemRow, len(b.TransactionIDs))
	for i, id := range b.TransactionIDs {
		items[i] = batchItemRow{BatchID: b.ID, Kind: string(b.Kind), TransactionID: id, Position: i}
	}
	return db.Create(&items).Error
}

// InsertSystemPayout records p, a simulated or automatic payout, as a payout of
// one that no operator recorded.
func (tx *Tx) InsertSystemPayout(ctx context.Context, p *lifecycle.SystemPayout) error {
	partner := p.PartnerID
	return tx.InsertBatch(ctx, &batches.Batch{ID: p.ID, Kind: batches.Payout, PartnerID: &partner, Reference: p.Reference,
		FiatAmount: p.FiatAmount, CryptoAmount: p.CryptoAmount, TransactionIDs: []uuid.UUID{p.TransactionID}, CreatedAt: p.CreatedAt})
}

// ListBatches returns up to q.Limit batches of q.Kind (of q.PartnerID and within
// q.From and q.To when set), newest first, after q.After.
func (s *Store) ListBatches(ctx context.Context, q batches.Query) ([]*batches.Batch, error) {
	db := s.read(ctx).Where("kind = ?", string(q.Kind))
	db = whereEq(db, "partner_id", q.PartnerID)
	db = within(db, "created_at", q.From, q.To)
	db, err := afterPosition(db, "created_at", "id", q.After)
	if err != nil {
		return nil, err
	}
	var rows []batchRow
	if err := db.Order("created_at DESC, id DESC").Limit(q.Limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	if q.CountOnly {
		return s.batchesCounted(ctx, rows)
	}
	return s.batchesOf(ctx, rows)
}

// Batch returns batch id (of any kind and partner), or apperr NotFound.
func (s *Store) Batch(ctx context.Context, id uuid.UUID) (*batches.Batch, error) {
	var rows []batchRow
	if err := s.read(ctx).Where("id = ?", id).Find(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, apperr.New(apperr.NotFound, "No such batch.")
	}
	out, err := s.batchesOf(ctx, rows)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// BatchOf returns the batch of kind holding transaction id, or nil.
func (s *Store) BatchOf(ctx context.Context, kind batches.Kind, id uuid.UUID) (*batches.Batch, error) {
	var rows []batchRow
	err := s.read(ctx).Where("id IN (SELECT batch_id FROM operator_batch_items WHERE transaction_id = ? AND kind = ?)", id, string(kind)).
		Find(&rows).Error
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	out, err := s.batchesOf(ctx, rows)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// batchOf is a batch as its row holds it, without its transactions (the nil
// UUID as the operator of a payout the service recorded).
func batchOf(r batchRow) *batches.Batch {
	b := &batches.Batch{ID: r.ID, Kind: batches.Kind(r.Kind), PartnerID: r.PartnerID, Reference: r.Reference,
		FiatAmount: r.FiatAmount, CryptoAmount: r.CryptoAmount, CreatedAt: r.CreatedAt.UTC()}
	if r.OperatorID != nil {
		b.OperatorID = *r.OperatorID
	}
	if r.Rate.Valid {
		v := r.Rate.Decimal
		b.Rate = &v
	}
	return b
}

func (s *Store) batchesOf(ctx context.Context, rows []batchRow) ([]*batches.Batch, error) {
	out := make([]*batches.Batch, len(rows))
	ids := make([]uuid.UUID, len(rows))
	byID := map[uuid.UUID]*batches.Batch{}
	for i, r := range rows {
		b := batchOf(r)
		out[i], ids[i], byID[r.ID] = b, r.ID, b
	}
	if len(ids) == 0 {
		return out, nil
	}
	var items []batchItemRow
	if err := s.read(ctx).Where("batch_id IN ?", ids).Order("batch_id, position").Find(&items).Error; err != nil {
		return nil, err
	}
	for _, it := range items {
		byID[it.BatchID].TransactionIDs = append(byID[it.BatchID].TransactionIDs, it.TransactionID)
	}
	return out, nil
}

// batchesCounted is batchesOf with each batch's transactions counted, in one
// grouped statement, rather than their ids read.
func (s *Store) batchesCounted(ctx context.Context, rows []batchRow) ([]*batches.Batch, error) {
	out := make([]*batches.Batch, len(rows))
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		out[i], ids[i] = batchOf(r), r.ID
	}
	if len(ids) == 0 {
		return out, nil
	}
	var counts []struct {
		BatchID uuid.UUID
		N       int
	}
	if err := s.read(ctx).Model(&batchItemRow{}).Select("batch_id, COUNT(*) AS n").Where("batch_id IN ?", ids).
		Group("batch_id").Scan(&counts).Error; err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]int, len(counts))
	for _, c := range counts {
		byID[c.BatchID] = c.N
	}
	for _, b := range out {
		b.TransactionCount = byID[b.ID]
	}
	return out, nil
}

// BatchTransactions returns the transactions of partnerID in each of the batches
// ids, in each batch's order, keyed by batch: one statement for them all, a
// payout's detail page or a page of the payouts export, however many
// transactions the batches paid. The transactions carry no deposit (a payout
// shows what was paid, not how it arrived); those of another partner are left
// out.
func (s *Store) BatchTransactions(ctx context.Context, partnerID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID][]*lifecycle.Transaction, error) {
	out := make(map[uuid.UUID][]*lifecycle.Transaction, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.read(ctx).Raw("SELECT i.batch_id, "+qualified("t", transactionColumns)+
		" FROM operator_batch_items i JOIN transactions t ON t.id = i.transaction_id"+
		" WHERE i.batch_id IN ? AND t.partner_id = ? ORDER BY i.batch_id, i.position", ids, partnerID).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var batch uuid.UUID
		var r transactionRow
		if err := rows.Scan(append([]any{&batch}, r.fields()...)...); err != nil {
			return nil, err
		}
		out[batch] = append(out[batch], r.domain())
	}
	return out, rows.Err()
}

type auditRow struct {
	ID                 uuid.UUID `gorm:"primaryKey"`
	Actor              string
	OperatorID         *uuid.UUID // NULL for a change no operator made (the command line's, a partner user's)
	PartnerUserID      *uuid.UUID // the partner's user who acted (actor partner_user), else NULL
	ProposerID         *uuid.UUID // the proposer of an action another operator approved, else NULL
	CLIUser            *string    `gorm:"column:cli_user"`
	Action             string
	TransactionID      *uuid.UUID
	UnmatchedDepositID *uuid.UUID
	BatchID            *uuid.UUID
	SubjectID          *uuid.UUID
	Reference          *string
	CreatedAt          time.Time
}

func (auditRow) TableName() string { return "operator_audit" }

// auditListRow is an audit row with its operator's name (NULL without one).
type auditListRow struct {
	ID                 uuid.UUID
	Actor              string
	OperatorID         *uuid.UUID
	OperatorName       *string
	PartnerUserID      *uuid.UUID
	PartnerUserEmail   *string
	ProposerID         *uuid.UUID
	ProposerName       *string
	CLIUser            *string `gorm:"column:cli_user"`
	Action             string
	TransactionID      *uuid.UUID
	UnmatchedDepositID *uuid.UUID
	BatchID            *uuid.UUID
	SubjectID          *uuid.UUID
	Reference          *string
	CreatedAt          time.Time
}

// InsertAudit writes e (Tx.InsertAudit in a unit of work); its actor follows
// from its partner user and operator (Entry.Acting), the operator NULL unless an
// operator acted.
func (s *Store) InsertAudit(ctx context.Context, e *audit.Entry) error {
	return insertAudit(s.write(ctx), e)
}

func insertAudit(db *gorm.DB, e *audit.Entry) error {
	actor := e.Acting()
	var operator *uuid.UUID
	if actor == audit.ByOperator {
		operator = &e.OperatorID
	}
	// A column left NULL is not named, as in a row written before it existed.
	var cliUser *string
	var omit []string
	if e.CLIUser != "" {
		cliUser = &e.CLIUser
	} else {
		omit = append(omit, "cli_user")
	}
	if e.ProposerID == nil {
		omit = append(omit, "proposer_id")
	}
	if len(omit) > 0 {
		db = db.Omit(omit...)
	}
	return db.Create(&auditRow{ID: e.ID, Actor: string(actor), OperatorID: operator, PartnerUserID: e.PartnerUserID,
		ProposerID: e.ProposerID, CLIUser: cliUser, Action: string(e.Action), TransactionID: e.TransactionID,
		UnmatchedDepositID: e.UnmatchedDepositID, BatchID: e.BatchID, SubjectID: e.SubjectID, Reference: e.Reference, CreatedAt: e.CreatedAt}).Error
}

// ListAudit returns up to limit entries matching f, newest first, after pos; an
// entry no operator made (the command line's) is listed too, without a name, and
// a partner user's with their address.
func (s *Store) ListAudit(ctx context.Context, f audit.Filter, pos *cursor.Position, limit int) ([]*audit.Entry, error) {
	db := s.read(ctx).Table("operator_audit AS a").Select("a.*, o.name AS operator_name, pu.email AS partner_user_email, po.name AS proposer_name").
		Joins("LEFT JOIN operators o ON o.id = a.operator_id").
		Joins("LEFT JOIN operators po ON po.id = a.proposer_id").
		Joins("LEFT JOIN partner_users pu ON pu.id = a.partner_user_id")
	db = whereEq(db, "a.operator_id", f.OperatorID)
	db = whereEq(db, "pu.partner_id", f.UsersOf)
	db = whereEq(db, "a.transaction_id", f.TransactionID)
	if f.Action != nil {
		db = db.Where("a.action = ?", string(*f.Action))
	}
	db = within(db, "a.created_at", f.From, f.To)
	db, err := afterPosition(db, "a.created_at", "a.id", pos)
	if err != nil {
		return nil, err
	}
	var rows []auditListRow
	if err := db.Order("a.created_at DESC, a.id DESC").Limit(limit).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*audit.Entry, len(rows))
	for i, r := range rows {
		var operator uuid.UUID // audit.CLI when no operator acted
		var name string
		if r.OperatorID != nil {
			operator = *r.OperatorID
		}
		if r.OperatorName != nil {
			name = *r.OperatorName
		}
		var email string
		if r.PartnerUserEmail != nil {
			email = *r.PartnerUserEmail
		}
		var proposer, cliUser string
		if r.ProposerName != nil {
			proposer = *r.ProposerName
		}
		if r.CLIUser != nil {
			cliUser = *r.CLIUser
		}
		out[i] = &audit.Entry{ID: r.ID, Actor: audit.ActorKind(r.Actor), OperatorID: operator, OperatorName: name,
			PartnerUserID: r.PartnerUserID, PartnerUserEmail: email, ProposerID: r.ProposerID, ProposerName: proposer, CLIUser: cliUser,
			Action:        audit.Action(r.Action),
			TransactionID: r.TransactionID, UnmatchedDepositID: r.UnmatchedDepositID, BatchID: r.BatchID, SubjectID: r.SubjectID,
			Reference: r.Reference, CreatedAt: r.CreatedAt.UTC()}
	}
	return out, nil
}

// DepositTransfers returns the chain transfers of transaction id, oldest first.
func (s *Store) DepositTransfers(ctx context.Context, id uuid.UUID) ([]backoffice.DepositTransfer, error) {
	var rows []chainTransferRow
	if err := s.read(ctx).Where("transaction_id = ?", id).Order("created_at, block_number, log_index").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]backoffice.DepositTransfer, len(rows))
	for i, r := range rows {
		li, from, block := int(r.LogIndex), r.FromAddress, r.BlockNumber
		out[i] = backoffice.DepositTransfer{TxHash: r.TxHash, LogIndex: &li, FromAddress: &from, Amount: r.Amount,
			BlockNumber: &block, State: r.State, SeenAt: r.CreatedAt.UTC()}
	}
	return out, nil
}

// OpenRefundTasksByKind counts the open refund tasks of each kind (kinds with
// none are absent).
func (s *Store) OpenRefundTasksByKind(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		Kind string
		N    int
	}
	err := s.read(ctx).Table("refund_tasks").Select("kind, COUNT(*) AS n").Where("status = ?", "open").
		Group("kind").Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Kind] = r.N
	}
	return out, nil
}

// FailingWebhooks lists partners whose enabled endpoint has events that failed or
// are retrying after a failed attempt.
func (s *Store) FailingWebhooks(ctx context.Context) ([]backoffice.FailingWebhook, error) {
	var rows []struct {
		PartnerID     uuid.UUID
		PartnerName   string
		URL           string
		FailingEvents int
	}
	err := s.read(ctx).Table("webhook_endpoints AS w").
		Select("w.partner_id, p.name AS partner_name, w.url, COUNT(*) AS failing_events").
		Joins("JOIN partners p ON p.id = w.partner_id").
		Joins("JOIN events e ON e.partner_id = w.partner_id AND (e.publish_status = 'failed' OR (e.publish_status = 'pending' AND e.attempts > 0))").
		Where("w.enabled = ?", true).
		Group("w.partner_id, p.name, w.url").Order("p.name").Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make([]backoffice.FailingWebhook, len(rows))
	for i, r := range rows {
		out[i] = backoffice.FailingWebhook{PartnerID: r.PartnerID, PartnerName: r.PartnerName, URL: r.URL, FailingEvents: r.FailingEvents}
		if err := s.howItFails(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// failedAttempts are the failed attempts of a partner's failing events (the
// events_failing_idx predicate, as text so the partial index serves it): the
// attempts the overview reads, bounded by the partner's backlog, never its whole
// history. Its one parameter is the partner.
const failedAttempts = `FROM webhook_attempts a JOIN events e ON e.id = a.event_id
WHERE e.partner_id = ? AND (e.publish_status = 'failed' OR (e.publish_status = 'pending' AND e.attempts > 0))
AND a.error IS NOT NULL`

// howItFails fills in f's last failed attempt and since when its endpoint fails:
// the first failed attempt after its last success (the latest attempt of a
// delivered event, through events_delivered_idx).
func (s *Store) howItFails(ctx context.Context, f *backoffice.FailingWebhook) error {
	db := s.read(ctx)
	var last []struct {
		StatusCode *int
		Error      *string
	}
	if err := db.Raw("SELECT a.status_code, a.error "+failedAttempts+" ORDER BY a.attempted_at DESC, a.id DESC LIMIT 1", f.PartnerID).
		Scan(&last).Error; err != nil {
		return err
	}
	if len(last) == 1 {
		f.LastStatus = last[0].StatusCode
		if f.LastStatus == nil && last[0].Error != nil {
			brief := webhook.Brief(*last[0].Error)
			f.LastError = &brief
		}
	}
	var success []time.Time
	if err := db.Model(&webhookEventRow{}).Where("partner_id = ? AND publish_status = 'delivered' AND last_attempt_at IS NOT NULL", f.PartnerID).
		Order("last_attempt_at DESC").Limit(1).Pluck("last_attempt_at", &success).Error; err != nil {
		return err
	}
	q := "SELECT a.attempted_at " + failedAttempts
	args := []any{f.PartnerID}
	if len(success) == 1 {
		q += " AND a.attempted_at > ?"
		args = append(args, success[0])
	}
	var since []struct{ AttemptedAt time.Time }
	if err := db.Raw(q+" ORDER BY a.attempted_at, a.id LIMIT 1", args...).Scan(&since).Error; err != nil {
		return err
	}
	if len(since) == 1 {
		t := since[0].AttemptedAt.UTC()
		f.FailingSince = &t
	}
	return nil
}

// AuditParties returns, for each of the audit entries ids, the partner it
// concerns (its transaction's, refund task's or batch payout's, the partner acted
// on, the owner of the key acted on, the partner of the user acted on, or of the
// user who acted) and its
// subject's name (the partner's or operator's name, the key's prefix, or the
// user's address). Entries with neither are absent.
func (s *Store) AuditParties(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]backoffice.AuditParty, error) {
	out := map[uuid.UUID]backoffice.AuditParty{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID          uuid.UUID
		PartnerID   *uuid.UUID
		PartnerName *string
		SubjectName *string
	}
	err := s.read(ctx).Raw(`SELECT x.id, x.partner_id, p.name AS partner_name, x.subject_name FROM (
		SELECT a.id, COALESCE(t.partner_id, u.partner_id, b.partner_id, sp.id, kp.id, pu.partner_id, au.partner_id) AS partner_id,
			COALESCE(sp.name, so.name, k.prefix, pu.email) AS subject_name
		FROM operator_audit a
		LEFT JOIN transactions t ON t.id = a.transaction_id
		LEFT JOIN refund_tasks u ON u.id = a.unmatched_deposit_id
		LEFT JOIN operator_batches b ON b.id = a.batch_id
		LEFT JOIN partners sp ON sp.id = a.subject_id
		LEFT JOIN operators so ON so.id = a.subject_id
		LEFT JOIN api_keys k ON k.id = a.subject_id
		LEFT JOIN partners kp ON k.owner_kind = 'partner' AND kp.id = k.owner_id
		LEFT JOIN partner_users pu ON pu.id = a.subject_id
		LEFT JOIN partner_users au ON au.id = a.partner_user_id
		WHERE a.id IN ?) x
		LEFT JOIN partners p ON p.id = x.partner_id`, ids).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.PartnerID == nil && r.SubjectName == nil {
			continue
		}
		out[r.ID] = backoffice.AuditParty{PartnerID: r.PartnerID, PartnerName: r.PartnerName, SubjectName: r.SubjectName}
	}
	return out, nil
}

// PartnerBalance reads partnerID's balance (GET /balance) in one snapshot (a
// read-only REPEATABLE READ transaction on PostgreSQL; SQLite's transactions
// read one snapshot already): the completed transactions whose payout has not
// settled (through the awaiting-payout index), and the payouts created within
// [from, to) with their transactions. Sums are exact (engine.countSums).
func (s *Store) PartnerBalance(ctx context.Context, partnerID uuid.UUID, from, to time.Time) (payouts.Balance, error) {
	var out payouts.Balance
	var opts *sql.TxOptions
	if s.eng.locksRows() {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	err := s.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		n, sums, err := s.eng.countSums(db.Model(&transactionRow{}).Where("partner_id = ?", partnerID).Where(awaitingPayout), "fiat_amount")
		if err != nil {
			return fmt.Errorf("owed: %w", err)
		}
		out.Owed = payouts.Line{Amount: sums[0], Transactions: int(n)}
		paid := func() *gorm.DB {
			return db.Model(&batchRow{}).Where("kind = ? AND partner_id = ? AND created_at >= ? AND created_at < ?",
				string(batches.Payout), partnerID, from.UTC(), to.UTC())
		}
		n, sums, err = s.eng.countSums(paid(), "fiat_amount")
		if err != nil {
			return fmt.Errorf("paid out: %w", err)
		}
		out.Payouts = int(n)
		var items int64
		if err := db.Model(&batchItemRow{}).Where("batch_id IN (?)", paid().Select("id")).Count(&items).Error; err != nil {
			return fmt.Errorf("paid out transactions: %w", err)
		}
		out.PaidOut = payouts.Line{Amount: sums[0], Transactions: int(items)}
		return nil
	}, opts)
	return out, err
}
