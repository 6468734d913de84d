package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/partnerusers"
)

var _ partnerusers.Store = For(nil, func(tx *Tx) partnerusers.Tx { return tx })

type partnerUserRow struct {
	ID                uuid.UUID `gorm:"primaryKey"`
	PartnerID         uuid.UUID
	Email             string
	EmailKey          string
	Role              string
	Status            string
	PasswordHash      *string
	TOTPSecret        *string    `gorm:"column:totp_secret"`
	TOTPSecretKey     *string    `gorm:"column:totp_secret_key"`
	TOTPEnabledAt     *time.Time `gorm:"column:totp_enabled_at"`
	TOTPLastStep      *int64     `gorm:"column:totp_last_step"`
	SessionEpoch      int64
	CreatedAt         time.Time
	UpdatedAt         time.Time
	DisabledAt        *time.Time
	PasswordChangedAt *time.Time
}

func (partnerUserRow) TableName() string { return "partner_users" }

// userDomain is the user of row r, its TOTP secret opened.
func (s *Store) userDomain(r *partnerUserRow) (*partnerusers.User, error) {
	secret, err := s.open(r.TOTPSecretKey, r.TOTPSecret, totpContext(r.ID))
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", r.ID, err)
	}
	u := &partnerusers.User{ID: r.ID, PartnerID: r.PartnerID, Email: r.Email, Role: partnerusers.Role(r.Role),
		Status: partnerusers.Status(r.Status), TOTPSecret: secret, TOTPEnabledAt: utcPtr(r.TOTPEnabledAt),
		TOTPLastStep: r.TOTPLastStep, SessionEpoch: r.SessionEpoch, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		DisabledAt: utcPtr(r.DisabledAt), PasswordChangedAt: utcPtr(r.PasswordChangedAt)}
	if r.PasswordHash != nil {
		u.PasswordHash = *r.PasswordHash
	}
	return u, nil
}

// userColumns are the columns UpdatePartnerUser writes (the TOTP secret sealed).
func (s *Store) userColumns(u *partnerusers.User) map[string]any {
	var hash *string
	if u.PasswordHash != "" {
		hash = &u.PasswordHash
	}
	keyID, secret := s.seal(u.TOTPSecret, totpContext(u.ID))
	return map[string]any{"email": u.Email, "email_key": partnerusers.EmailKey(u.Email), "role": string(u.Role),
		"status": string(u.Status), "password_hash": hash, "totp_secret": secret, "totp_secret_key": keyID, "totp_enabled_at": u.TOTPEnabledAt,
		"totp_last_step": u.TOTPLastStep, "session_epoch": u.SessionEpoch, "updated_at": u.UpdatedAt,
		"disabled_at": u.DisabledAt, "password_changed_at": u.PasswordChangedAt}
}

func errUserExists() error {
	return apperr.Field(apperr.InvalidRequest, "This address is already a user of the partner.", "/email", "an address not yet on the team")
}

// InsertPartnerUser stores u; an address already on the partner's team (in any
// case) is apperr InvalidRequest on /email.
func (s *Store) InsertPartnerUser(ctx context.Context, u *partnerusers.User) error {
	keyID, secret := s.seal(u.TOTPSecret, totpContext(u.ID))
	row := partnerUserRow{ID: u.ID, PartnerID: u.PartnerID, Email: u.Email, EmailKey: partnerusers.EmailKey(u.Email),
		Role: string(u.Role), Status: string(u.Status), TOTPSecret: secret, TOTPSecretKey: keyID, TOTPEnabledAt: u.TOTPEnabledAt,
		TOTPLastStep: u.TOTPLastStep, SessionEpoch: u.SessionEpoch, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt,
		DisabledAt: u.DisabledAt, PasswordChangedAt: u.PasswordChangedAt}
	if u.PasswordHash != "" {
		row.PasswordHash = &u.PasswordHash
	}
	err := s.write(ctx).Create(&row).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return errUserExists()
	}
	return err
}

// UpdatePartnerUser writes u's address, role, status, secrets, epoch and times.
func (s *Store) UpdatePartnerUser(ctx context.Context, u *partnerusers.User) error {
	err := s.write(ctx).Model(&partnerUserRow{}).Where("id = ?", u.ID).Updates(s.userColumns(u)).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return errUserExists()
	}
	return err
}

// PartnerUser returns user id of partner, or apperr NotFound (another partner's
// user included).
func (s *Store) PartnerUser(ctx context.Context, partnerID, id uuid.UUID) (*partnerusers.User, error) {
	var row partnerUserRow
	if err := s.read(ctx).Where("partner_id = ? AND id = ?", partnerID, id).Take(&row).Error; err != nil {
		return nil, notFound(err, "user")
	}
	return s.userDomain(&row)
}

// PartnerUserByID returns user id of any partner, or apperr NotFound.
func (s *Store) PartnerUserByID(ctx context.Context, id uuid.UUID) (*partnerusers.User, error) {
	var row partnerUserRow
	if err := s.read(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, notFound(err, "user")
	}
	return s.userDomain(&row)
}

// PartnerUserByEmail returns the partner's user whose address folds to key
// (partnerusers.EmailKey), or apperr NotFound.
func (s *Store) PartnerUserByEmail(ctx context.Context, partnerID uuid.UUID, key string) (*partnerusers.User, error) {
	var row partnerUserRow
	if err := s.read(ctx).Where("partner_id = ? AND email_key = ?", partnerID, key).Take(&row).Error; err != nil {
		return nil, notFound(err, "user")
	}
	return s.userDomain(&row)
}

// PartnerUsersByEmail returns every partner's user whose address folds to key,
// oldest first.
func (s *Store) PartnerUsersByEmail(ctx context.Context, key string) ([]*partnerusers.User, error) {
	return s.partnerUsers(s.read(ctx).Where("email_key = ?", key))
}

// PartnerUsers returns the partner's users, oldest first.
func (s *Store) PartnerUsers(ctx context.Context, partnerID uuid.UUID) ([]*partnerusers.User, error) {
	return s.partnerUsers(s.read(ctx).Where("partner_id = ?", partnerID))
}

func (s *Store) partnerUsers(db *gorm.DB) ([]*partnerusers.User, error) {
	var rows []partnerUserRow
	if err := db.Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*partnerusers.User, len(rows))
	for i := range rows {
		u, err := s.userDomain(&rows[i])
		if err != nil {
			return nil, err
		}
		out[i] = u
	}
	return out, nil
}

// AdvancePartnerTOTPStep records step as the user's last accepted TOTP step when
// it is later than the recorded one (a conditional write: of two sign-ins with
// one code, one wins), and reports whether it was.
func (s *Store) AdvancePartnerTOTPStep(ctx context.Context, userID uuid.UUID, step int64) (bool, error) {
	res := s.write(ctx).Model(&partnerUserRow{}).Where("id = ? AND (totp_last_step IS NULL OR totp_last_step < ?)", userID, step).
		Update("totp_last_step", step)
	return res.RowsAffected == 1, res.Error
}

type partnerInvitationRow struct {
	ID            uuid.UUID `gorm:"primaryKey"`
	UserID        uuid.UUID
	TokenHash     string
	CreatedByKind string
	CreatedBy     *uuid.UUID
	ExpiresAt     time.Time
	UsedAt        *time.Time
	CreatedAt     time.Time
}

func (partnerInvitationRow) TableName() string { return "partner_invitations" }

// InsertPartnerInvitation stores inv (its token's hash, never the token).
func (s *Store) InsertPartnerInvitation(ctx context.Context, inv *partnerusers.Invitation) error {
	row := partnerInvitationRow{ID: inv.ID, UserID: inv.UserID, TokenHash: inv.TokenHash, CreatedByKind: string(inv.By.Kind),
		ExpiresAt: inv.ExpiresAt, UsedAt: inv.UsedAt, CreatedAt: inv.CreatedAt}
	if inv.By.Kind != partnerusers.ByCLI {
		row.CreatedBy = &inv.By.ID
	}
	return s.write(ctx).Create(&row).Error
}

// PartnerInvitationByHash returns the invitation whose token hashes to hash, or
// apperr NotFound.
func (s *Store) PartnerInvitationByHash(ctx context.Context, hash string) (*partnerusers.Invitation, error) {
	var row partnerInvitationRow
	if err := s.read(ctx).Where("token_hash = ?", hash).Take(&row).Error; err != nil {
		return nil, notFound(err, "invitation")
	}
	inv := &partnerusers.Invitation{ID: row.ID, UserID: row.UserID, TokenHash: row.TokenHash,
		By:        partnerusers.Inviter{Kind: partnerusers.InviterKind(row.CreatedByKind)},
		ExpiresAt: row.ExpiresAt.UTC(), UsedAt: utcPtr(row.UsedAt), CreatedAt: row.CreatedAt.UTC()}
	if row.CreatedBy != nil {
		inv.By.ID = *row.CreatedBy
	}
	return inv, nil
}

// UsePartnerInvitation marks invitation id used at at when it is unused and
// unexpired then (a conditional write: a token works once however many use it at
// once), and reports whether it did.
func (s *Store) UsePartnerInvitation(ctx context.Context, id uuid.UUID, at time.Time) (bool, error) {
	res := s.write(ctx).Model(&partnerInvitationRow{}).Where("id = ? AND used_at IS NULL AND expires_at > ?", id, at).
		Update("used_at", at)
	return res.RowsAffected == 1, res.Error
}

// DeletePartnerInvitations deletes the user's unused invitations (a new link
// replaces them, or the user was disabled).
func (s *Store) DeletePartnerInvitations(ctx context.Context, userID uuid.UUID) error {
	return s.write(ctx).Where("user_id = ? AND used_at IS NULL", userID).Delete(&partnerInvitationRow{}).Error
}

type recoveryCodeRow struct {
	ID        uuid.UUID `gorm:"primaryKey"`
	UserID    uuid.UUID
	CodeHash  string
	UsedAt    *time.Time
	CreatedAt time.Time
}

func (recoveryCodeRow) TableName() string { return "partner_user_recovery_codes" }

// ReplacePartnerRecoveryCodes replaces the user's recovery codes with the codes
// hashing to hashes, in one unit of work.
func (s *Store) ReplacePartnerRecoveryCodes(ctx context.Context, userID uuid.UUID, hashes []string, at time.Time) error {
	return s.Transact(ctx, func(ctx context.Context, tx *Tx) error {
		s := tx.store()
		if err := s.write(ctx).Where("user_id = ?", userID).Delete(&recoveryCodeRow{}).Error; err != nil {
			return err
		}
		if len(hashes) == 0 {
			return nil
		}
		rows := make([]recoveryCodeRow, len(hashes))
		for i, h := range hashes {
			rows[i] = recoveryCodeRow{ID: uuid.New(), UserID: userID, CodeHash: h, CreatedAt: at}
		}
		return s.write(ctx).Create(&rows).Error
	})
}

// UsePartnerRecoveryCode marks the user's unused code hashing to hash used at at
// (a conditional write: a code works once), and reports whether there was one.
func (s *Store) UsePartnerRecoveryCode(ctx context.Context, userID uuid.UUID, hash string, at time.Time) (bool, error) {
	res := s.write(ctx).Model(&recoveryCodeRow{}).Where("user_id = ? AND code_hash = ? AND used_at IS NULL", userID, hash).
		Update("used_at", at)
	return res.RowsAffected == 1, res.Error
}

// PartnerRecoveryCodesLeft counts the user's unused recovery codes.
func (s *Store) PartnerRecoveryCodesLeft(ctx context.Context, userID uuid.UUID) (int, error) {
	var n int64
	err := s.read(ctx).Model(&recoveryCodeRow{}).Where("user_id = ? AND used_at IS NULL", userID).Count(&n).Error
	return int(n), err
}
