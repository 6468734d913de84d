package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm/clause"

	"partnerd/internal/apikeys"
	"partnerd/internal/audit"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/partnerusers"
)

// The unit of work as the account, key, audit, refund-task and partner-user
// services see it: each method is the Store's statement of the same name bound
// to the transaction (Tx.store), so a use case hands its unit of work on and
// every read in it sees the unit's own writes.
var (
	_ audit.Tx          = (*Tx)(nil)
	_ apikeys.Tx        = (*Tx)(nil)
	_ partners.Tx       = (*Tx)(nil)
	_ operators.Tx      = (*Tx)(nil)
	_ refunds.ResolveTx = (*Tx)(nil)
	_ partnerusers.Tx   = (*Tx)(nil)
)

// InsertAudit is Store.InsertAudit in the unit of work.
func (tx *Tx) InsertAudit(ctx context.Context, e *audit.Entry) error {
	return tx.store().InsertAudit(ctx, e)
}

// SetOperatorRoles is Store.SetOperatorRoles in the unit of work.
func (tx *Tx) SetOperatorRoles(ctx context.Context, id uuid.UUID, roles []operators.Role) error {
	return tx.store().SetOperatorRoles(ctx, id, roles)
}

// InsertAPIKey is Store.InsertAPIKey in the unit of work.
func (tx *Tx) InsertAPIKey(ctx context.Context, k *apikeys.Key) error {
	return tx.store().InsertAPIKey(ctx, k)
}

// APIKey is Store.APIKey in the unit of work.
func (tx *Tx) APIKey(ctx context.Context, owner apikeys.Owner, ownerID, id uuid.UUID) (*apikeys.Key, error) {
	return tx.store().APIKey(ctx, owner, ownerID, id)
}

// UpdateAPIKey is Store.UpdateAPIKey in the unit of work.
func (tx *Tx) UpdateAPIKey(ctx context.Context, k *apikeys.Key) error {
	return tx.store().UpdateAPIKey(ctx, k)
}

// CreatePartner is Store.CreatePartner in the unit of work.
func (tx *Tx) CreatePartner(ctx context.Context, p *partners.Partner) error {
	return tx.store().CreatePartner(ctx, p)
}

// PartnerByID is Store.PartnerByID in the unit of work.
func (tx *Tx) PartnerByID(ctx context.Context, id uuid.UUID) (*partners.Partner, error) {
	return tx.store().PartnerByID(ctx, id)
}

// CreateOperator is Store.CreateOperator in the unit of work.
func (tx *Tx) CreateOperator(ctx context.Context, o *operators.Operator) error {
	return tx.store().CreateOperator(ctx, o)
}

// OperatorByID is Store.OperatorByID in the unit of work.
func (tx *Tx) OperatorByID(ctx context.Context, id uuid.UUID) (*operators.Operator, error) {
	return tx.store().OperatorByID(ctx, id)
}

// Transaction is Store.Transaction in the unit of work.
func (tx *Tx) Transaction(ctx context.Context, id uuid.UUID) (*lifecycle.Transaction, error) {
	return tx.store().Transaction(ctx, id)
}

// FillsOf is Store.FillsOf in the unit of work.
func (tx *Tx) FillsOf(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*lifecycle.Fill, error) {
	return tx.store().FillsOf(ctx, ids)
}

// UnmatchedDeposit is Store.UnmatchedDeposit in the unit of work.
func (tx *Tx) UnmatchedDeposit(ctx context.Context, id uuid.UUID) (*lifecycle.RefundTask, error) {
	return tx.store().UnmatchedDeposit(ctx, id)
}

// ResolveUnmatchedDeposit is Store.ResolveUnmatchedDeposit in the unit of work.
func (tx *Tx) ResolveUnmatchedDeposit(ctx context.Context, id uuid.UUID, r lifecycle.TaskResolution) (bool, error) {
	return tx.store().ResolveUnmatchedDeposit(ctx, id, r)
}

// InsertPartnerUser is Store.InsertPartnerUser in the unit of work.
func (tx *Tx) InsertPartnerUser(ctx context.Context, u *partnerusers.User) error {
	return tx.store().InsertPartnerUser(ctx, u)
}

// PartnerUser is Store.PartnerUser in the unit of work.
func (tx *Tx) PartnerUser(ctx context.Context, partnerID, id uuid.UUID) (*partnerusers.User, error) {
	return tx.store().PartnerUser(ctx, partnerID, id)
}

// PartnerUserByEmail is Store.PartnerUserByEmail in the unit of work.
func (tx *Tx) PartnerUserByEmail(ctx context.Context, partnerID uuid.UUID, key string) (*partnerusers.User, error) {
	return tx.store().PartnerUserByEmail(ctx, partnerID, key)
}

// PartnerUsers is Store.PartnerUsers in the unit of work.
func (tx *Tx) PartnerUsers(ctx context.Context, partnerID uuid.UUID) ([]*partnerusers.User, error) {
	return tx.store().PartnerUsers(ctx, partnerID)
}

// UpdatePartnerUser is Store.UpdatePartnerUser in the unit of work.
func (tx *Tx) UpdatePartnerUser(ctx context.Context, u *partnerusers.User) error {
	return tx.store().UpdatePartnerUser(ctx, u)
}

// InsertPartnerInvitation is Store.InsertPartnerInvitation in the unit of work.
func (tx *Tx) InsertPartnerInvitation(ctx context.Context, inv *partnerusers.Invitation) error {
	return tx.store().InsertPartnerInvitation(ctx, inv)
}

// UsePartnerInvitation is Store.UsePartnerInvitation in the unit of work.
func (tx *Tx) UsePartnerInvitation(ctx context.Context, id uuid.UUID, at time.Time) (bool, error) {
	return tx.store().UsePartnerInvitation(ctx, id, at)
}

// DeletePartnerInvitations is Store.DeletePartnerInvitations in the unit of work.
func (tx *Tx) DeletePartnerInvitations(ctx context.Context, userID uuid.UUID) error {
	return tx.store().DeletePartnerInvitations(ctx, userID)
}

// ReplacePartnerRecoveryCodes is Store.ReplacePartnerRecoveryCodes in the unit of work.
func (tx *Tx) ReplacePartnerRecoveryCodes(ctx context.Context, userID uuid.UUID, hashes []string, at time.Time) error {
	return tx.store().ReplacePartnerRecoveryCodes(ctx, userID, hashes, at)
}

// LockPartnerTeam makes the unit of work the only one changing partnerID's team
// until it ends: a change that must see the whole team (keeping an active
// admin) decides on the team as it is, not on a snapshot another unit of work
// is changing, so two admins demoting each other at once leave one. On
// PostgreSQL the partner's row is locked (SELECT … FOR UPDATE, waited for); on
// SQLite the one writer runs the units of work one after the other already.
// Errors: apperr NotFound (no such partner).
func (tx *Tx) LockPartnerTeam(ctx context.Context, partnerID uuid.UUID) error {
	q := tx.db.WithContext(ctx).Table("partners").Select("id").Where("id = ?", partnerID)
	if tx.s.eng.locksRows() {
		q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	var row struct{ ID uuid.UUID }
	if err := q.Take(&row).Error; err != nil {
		return notFound(err, "partner")
	}
	return nil
}
