package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"partnerd/internal/audit"
	"partnerd/internal/backoffice/approvals"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/kit/cursor"
)

var _ approvals.Store = (*Store)(nil)

type approvalRow struct {
	ID             uuid.UUID `gorm:"primaryKey"`
	Action         string
	Operation      string
	Method         string
	Path           string
	Body           string
	Summary        string
	RequiredRole   string
	Status         string
	ProposedBy     uuid.UUID
	IdempotencyKey string
	Fingerprint    string
	ProposedAt     time.Time
	ExpiresAt      time.Time
	DecidedBy      *uuid.UUID
	DecidedAt      *time.Time
	Note           *string
	Failure        *string
	Result         *string
}

func (approvalRow) TableName() string { return "approvals" }

// approvalListRow is a proposal with its operators' names.
type approvalListRow struct {
	ID             uuid.UUID
	Action         string
	Operation      string
	Method         string
	Path           string
	Body           string
	Summary        string
	RequiredRole   string
	Status         string
	ProposedBy     uuid.UUID
	IdempotencyKey string
	Fingerprint    string
	ProposedAt     time.Time
	ExpiresAt      time.Time
	DecidedBy      *uuid.UUID
	DecidedAt      *time.Time
	Note           *string
	Failure        *string
	Result         *string
	ProposerName   string
	DeciderName    *string
}

// oneApproval scans the one proposal db selects, or apperr NotFound.
func oneApproval(db *gorm.DB) (*approvals.Approval, error) {
	var rows []approvalListRow
	if err := db.Limit(1).Scan(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, notFound(gorm.ErrRecordNotFound, "proposal")
	}
	return rows[0].domain(), nil
}

func (r *approvalListRow) domain() *approvals.Approval {
	a := &approvals.Approval{ID: r.ID, Action: approvals.Action(r.Action), Operation: r.Operation, Method: r.Method, Path: r.Path,
		Body: []byte(r.Body), Summary: r.Summary, RequiredRole: operators.Role(r.RequiredRole), Status: approvals.Status(r.Status),
		ProposedBy: r.ProposedBy, ProposerName: r.ProposerName, IdempotencyKey: r.IdempotencyKey, Fingerprint: r.Fingerprint,
		ProposedAt: r.ProposedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), DecidedBy: r.DecidedBy, Note: r.Note}
	if r.DecidedAt != nil {
		t := r.DecidedAt.UTC()
		a.DecidedAt = &t
	}
	if r.DeciderName != nil {
		a.DeciderName = *r.DeciderName
	}
	if r.Failure != nil {
		a.Failure = []byte(*r.Failure)
	}
	if r.Result != nil {
		a.Result = []byte(*r.Result)
	}
	return a
}

// InsertApproval writes a and its audit row e in one unit of work, unless the
// proposer already made one for the operation under the same key (false).
func (s *Store) InsertApproval(ctx context.Context, a *approvals.Approval, e *audit.Entry) (bool, error) {
	var inserted bool
	err := s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		db := tx.store().write(ctx)
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&approvalRow{ID: a.ID, Action: string(a.Action),
			Operation: a.Operation, Method: a.Method, Path: a.Path, Body: string(a.Body), Summary: a.Summary,
			RequiredRole: string(a.RequiredRole), Status: string(a.Status), ProposedBy: a.ProposedBy, IdempotencyKey: a.IdempotencyKey,
			Fingerprint: a.Fingerprint, ProposedAt: a.ProposedAt, ExpiresAt: a.ExpiresAt})
		if res.Error != nil {
			return res.Error
		}
		if inserted = res.RowsAffected == 1; !inserted {
			return nil
		}
		return insertAudit(db, e)
	})
	return inserted, err
}

// approvalsQuery selects proposals with their operators' names.
func (s *Store) approvalsQuery(ctx context.Context) *gorm.DB {
	return s.read(ctx).Table("approvals AS a").Select("a.*, p.name AS proposer_name, d.name AS decider_name").
		Joins("JOIN operators p ON p.id = a.proposed_by").
		Joins("LEFT JOIN operators d ON d.id = a.decided_by")
}

// ApprovalByKey returns the proposer's proposal of operation under key, or apperr NotFound.
func (s *Store) ApprovalByKey(ctx context.Context, proposer uuid.UUID, operation, key string) (*approvals.Approval, error) {
	return oneApproval(s.approvalsQuery(ctx).Where("a.proposed_by = ? AND a.operation = ? AND a.idempotency_key = ?", proposer, operation, key))
}

// Approval returns proposal id, or apperr NotFound.
func (s *Store) Approval(ctx context.Context, id uuid.UUID) (*approvals.Approval, error) {
	return oneApproval(s.approvalsQuery(ctx).Where("a.id = ?", id))
}

// ListApprovals returns up to limit proposals matching f at now, newest first,
// after pos (pending and expired are the stored pending, before or after their
// expiry).
func (s *Store) ListApprovals(ctx context.Context, f approvals.Filter, now time.Time, pos *cursor.Position, limit int) ([]*approvals.Approval, error) {
	db := s.approvalsQuery(ctx)
	if f.Status != nil {
		switch *f.Status {
		case approvals.Pending:
			db = db.Where("a.status = ? AND a.expires_at > ?", string(approvals.Pending), now.UTC())
		case approvals.Expired:
			db = db.Where("a.status = ? AND a.expires_at <= ?", string(approvals.Pending), now.UTC())
		default:
			db = db.Where("a.status = ?", string(*f.Status))
		}
	}
	if f.Action != nil {
		db = db.Where("a.action = ?", string(*f.Action))
	}
	db, err := afterPosition(db, "a.proposed_at", "a.id", pos)
	if err != nil {
		return nil, err
	}
	var rows []approvalListRow
	if err := db.Order("a.proposed_at DESC, a.id DESC").Limit(limit).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*approvals.Approval, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// ClaimApproval moves proposal id from pending (not expired at now) to approving
// by decider, a conditional update correct under concurrency: of two approvers
// racing, one gets true.
func (s *Store) ClaimApproval(ctx context.Context, id, decider uuid.UUID, now time.Time) (bool, error) {
	res := s.write(ctx).Model(&approvalRow{}).Where("id = ? AND status = ? AND expires_at > ?", id, string(approvals.Pending), now.UTC()).
		Updates(map[string]any{"status": string(approvals.Approving), "decided_by": decider, "decided_at": now.UTC()})
	return res.RowsAffected == 1, res.Error
}

// FinishApproval records an approving proposal's outcome and its audit row e
// (nil for none) in one unit of work.
func (s *Store) FinishApproval(ctx context.Context, id uuid.UUID, status approvals.Status, result, failure []byte, now time.Time, e *audit.Entry) error {
	return s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		db := tx.store().write(ctx)
		set := map[string]any{"status": string(status), "decided_at": now.UTC()}
		if result != nil {
			set["result"] = string(result)
		}
		if failure != nil {
			set["failure"] = string(failure)
		}
		if err := db.Model(&approvalRow{}).Where("id = ? AND status = ?", id, string(approvals.Approving)).Updates(set).Error; err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		return insertAudit(db, e)
	})
}

// RejectApproval closes pending proposal id (not expired at now) as rejected by
// decider with note, with its audit row e, reporting whether it did.
func (s *Store) RejectApproval(ctx context.Context, id, decider uuid.UUID, note string, now time.Time, e *audit.Entry) (bool, error) {
	var ok bool
	err := s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		db := tx.store().write(ctx)
		res := db.Model(&approvalRow{}).Where("id = ? AND status = ? AND expires_at > ?", id, string(approvals.Pending), now.UTC()).
			Updates(map[string]any{"status": string(approvals.Rejected), "decided_by": decider, "decided_at": now.UTC(), "note": note})
		if res.Error != nil {
			return res.Error
		}
		if ok = res.RowsAffected == 1; !ok {
			return nil
		}
		return insertAudit(db, e)
	})
	return ok, err
}

// PendingApprovals counts the proposals pending and not expired at now, and
// returns the oldest one's proposal time (nil for none).
func (s *Store) PendingApprovals(ctx context.Context, now time.Time) (int, *time.Time, error) {
	var rows []approvalRow
	err := s.read(ctx).Model(&approvalRow{}).Select("proposed_at").
		Where("status = ? AND expires_at > ?", string(approvals.Pending), now.UTC()).Order("proposed_at").Find(&rows).Error
	if err != nil || len(rows) == 0 {
		return len(rows), nil, err
	}
	t := rows[0].ProposedAt.UTC()
	return len(rows), &t, nil
}
