// Package partnerusers owns the people of a partner who sign in to the dashboard
// (API keys stay for servers): their invitations, passwords, second factor and
// roles. An operator (or the partnerd command) invites a partner's first admin,
// an admin the rest; an invitation is a one-time link, valid InvitationTTL, whose
// token is shown once to whoever invited and stored only as its SHA-256 hash. The
// invited person sets a password there (CheckPassword's rules, argon2id) and then
// signs in with it and, once enrolled, a TOTP code (RFC 6238) or a one-time
// recovery code. Each user carries a session epoch that grows when the password
// changes or the user is disabled: sessions made under an older epoch end.
package partnerusers

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/textrule"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partners"
)

// Role is what a user may do on the dashboard; every role reads transactions.
type Role string

// The roles.
const (
	Admin     Role = "admin"     // the team, API keys, webhooks
	Developer Role = "developer" // webhooks, logs, the sandbox
	Finance   Role = "finance"   // transactions, payouts, exports, revenue
)

// Roles lists every role (the operator contract's PartnerUserRole lists the same).
var Roles = []Role{Admin, Developer, Finance}

// ParseRole returns the role named s. Errors: InvalidRequest on /role.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", apperr.Field(apperr.InvalidRequest, "The role is not one of admin, developer, finance.", "/role", "admin, developer or finance")
}

// Status is where a user is in their life.
type Status string

// The statuses.
const (
	Invited  Status = "invited"  // no password yet: the invitation is pending
	Active   Status = "active"   // may sign in
	Disabled Status = "disabled" // may not sign in; their sessions ended
)

// InvitationTTL is how long an invitation link works.
const InvitationTTL = 72 * time.Hour

// InvitePath is where an invitation's token is accepted, on the dashboard.
const InvitePath = "/dashboard/invite/"

// User is a partner's user as stored (PasswordHash and TOTPSecret never leave
// this package's callers' servers).
type User struct {
	ID        uuid.UUID
	PartnerID uuid.UUID
	Email     string // as given
	Role      Role
	Status    Status
	// PasswordHash is the argon2id PHC string; empty until the invitation is accepted.
	PasswordHash string
	// TOTPSecret is the base32 secret of the second factor, set at enrolment;
	// TOTPEnabledAt is set once a first code confirmed it.
	TOTPSecret    *string
	TOTPEnabledAt *time.Time
	// TOTPLastStep is the last time step whose code was accepted (replays refused).
	TOTPLastStep *int64
	// SessionEpoch grows when the password changes or the user is disabled.
	SessionEpoch      int64
	CreatedAt         time.Time
	UpdatedAt         time.Time
	DisabledAt        *time.Time
	PasswordChangedAt *time.Time
}

// TOTPEnabled reports whether sign-in asks for a second factor.
func (u *User) TOTPEnabled() bool { return u.TOTPEnabledAt != nil }

// EmailKey is the form an address is unique in per partner: trimmed, lower case
// (folded in Go, whatever the database's lower() knows).
func EmailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// InviterKind is who invited.
type InviterKind string

// The inviters.
const (
	ByOperator    InviterKind = "operator"     // through the operator API or the console
	ByCLI         InviterKind = "cli"          // the partnerd command on a server
	ByPartnerUser InviterKind = "partner_user" // an admin of the partner, on the dashboard
)

// Inviter names who invited: an operator, the command line (no ID), or a partner user.
type Inviter struct {
	Kind InviterKind
	ID   uuid.UUID
}

// inviterOf is how an invitation records by, who made it.
func inviterOf(by actor.Actor) Inviter {
	switch by.Kind {
	case actor.Operator:
		return Inviter{Kind: ByOperator, ID: by.ID}
	case actor.PartnerUser:
		return Inviter{Kind: ByPartnerUser, ID: by.ID}
	}
	return Inviter{Kind: ByCLI}
}

// Invitation is a stored invitation (never its token).
type Invitation struct {
	ID        uuid.UUID
	UserID    uuid.UUID
	TokenHash string
	By        Inviter
	ExpiresAt time.Time
	UsedAt    *time.Time
	CreatedAt time.Time
}

// NewInvitation is an invitation just made, with its token (shown once).
type NewInvitation struct {
	User       *User
	Invitation *Invitation
	Token      string
}

// Path is the invitation link's path on the dashboard: InvitePath and the token.
func (i *NewInvitation) Path() string { return InvitePath + i.Token }

// HashToken is the stored form of an invitation token or recovery code: its
// SHA-256 in hex. Both are 128 bits or more of randomness or short-lived and
// single-use, where a slow hash adds nothing (API keys are stored the same way).
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Tx is the unit of work of a team change (store.Tx): the users, invitations,
// recovery codes and audit row it writes, and what it reads of them, go through
// it, so the change sees its own writes and commits as one.
type Tx interface {
	// A keyed request's answer is stored in it (idempotency.Run).
	idempotency.Keeper
	// AfterCommit runs f once the unit of work has committed.
	AfterCommit(f func())
	// The change's audit row is written in it.
	audit.Tx
	// PartnerByID returns partner id, or apperr NotFound.
	PartnerByID(ctx context.Context, id uuid.UUID) (*partners.Partner, error)
	InsertPartnerUser(ctx context.Context, u *User) error
	PartnerUser(ctx context.Context, partnerID, id uuid.UUID) (*User, error)
	PartnerUserByEmail(ctx context.Context, partnerID uuid.UUID, key string) (*User, error)
	PartnerUsers(ctx context.Context, partnerID uuid.UUID) ([]*User, error)
	// LockPartnerTeam holds partner's team for the rest of the unit of work, so
	// changes that count its admins run one after the other (apperr NotFound:
	// no such partner).
	LockPartnerTeam(ctx context.Context, partnerID uuid.UUID) error
	UpdatePartnerUser(ctx context.Context, u *User) error
	InsertPartnerInvitation(ctx context.Context, inv *Invitation) error
	UsePartnerInvitation(ctx context.Context, id uuid.UUID, at time.Time) (bool, error)
	DeletePartnerInvitations(ctx context.Context, userID uuid.UUID) error
	ReplacePartnerRecoveryCodes(ctx context.Context, userID uuid.UUID, hashes []string, at time.Time) error
}

// Store persists users, invitations and recovery codes: its methods are the
// statements outside any unit of work (a sign-in's reads, a TOTP step), WithTx
// opens one for a change, whose statements go through its Tx.
type Store interface {
	// WithTx runs fn in a unit of work.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// InsertPartnerUser stores u; a second user of a partner with the same
	// EmailKey is gorm's duplicated-key error.
	InsertPartnerUser(ctx context.Context, u *User) error
	// PartnerUser returns user id of partner, or apperr NotFound.
	PartnerUser(ctx context.Context, partnerID, id uuid.UUID) (*User, error)
	// PartnerUserByID returns user id of any partner, or apperr NotFound.
	PartnerUserByID(ctx context.Context, id uuid.UUID) (*User, error)
	// PartnerUserByEmail returns partner's user with EmailKey key, or apperr NotFound.
	PartnerUserByEmail(ctx context.Context, partnerID uuid.UUID, key string) (*User, error)
	// PartnerUsersByEmail returns every partner's user with EmailKey key.
	PartnerUsersByEmail(ctx context.Context, key string) ([]*User, error)
	// PartnerUsers returns partner's users, oldest first.
	PartnerUsers(ctx context.Context, partnerID uuid.UUID) ([]*User, error)
	// UpdatePartnerUser writes u's role, status, secrets, epoch and times.
	UpdatePartnerUser(ctx context.Context, u *User) error
	// InsertPartnerInvitation stores inv.
	InsertPartnerInvitation(ctx context.Context, inv *Invitation) error
	// PartnerInvitationByHash returns the invitation whose token hashes to hash, or apperr NotFound.
	PartnerInvitationByHash(ctx context.Context, hash string) (*Invitation, error)
	// UsePartnerInvitation marks invitation id used at at if it is unused and
	// unexpired then, and reports whether it did.
	UsePartnerInvitation(ctx context.Context, id uuid.UUID, at time.Time) (bool, error)
	// DeletePartnerInvitations deletes the unused invitations of a user.
	DeletePartnerInvitations(ctx context.Context, userID uuid.UUID) error
	// ReplacePartnerRecoveryCodes replaces a user's recovery codes with hashes.
	ReplacePartnerRecoveryCodes(ctx context.Context, userID uuid.UUID, hashes []string, at time.Time) error
	// UsePartnerRecoveryCode marks the user's unused code hashing to hash used and
	// reports whether there was one.
	UsePartnerRecoveryCode(ctx context.Context, userID uuid.UUID, hash string, at time.Time) (bool, error)
	// PartnerRecoveryCodesLeft counts the user's unused recovery codes.
	PartnerRecoveryCodesLeft(ctx context.Context, userID uuid.UUID) (int, error)
	// AdvancePartnerTOTPStep records step as the user's last accepted TOTP step if
	// it is later than the one recorded, and reports whether it was.
	AdvancePartnerTOTPStep(ctx context.Context, userID uuid.UUID, step int64) (bool, error)
}

// Partners finds partners (partners.Service).
type Partners interface {
	// Get returns partner id, or apperr NotFound.
	Get(ctx context.Context, id uuid.UUID) (*partners.Partner, error)
}

// Deps are what the service needs. Audit may be nil (no audit rows); Issuer is
// the name authenticator apps show beside the account ("partnerd" when empty).
type Deps struct {
	Store    Store
	Partners Partners
	Audit    *audit.Log
	Now      func() time.Time
	Issuer   string
	Logger   *slog.Logger
}

// Service runs the partner users' use cases.
type Service struct {
	store    Store
	partners Partners
	audit    *audit.Log
	now      func() time.Time
	issuer   string
	log      *slog.Logger
}

// New returns a Service.
func New(d Deps) *Service {
	s := &Service{store: d.Store, partners: d.Partners, audit: d.Audit, now: d.Now, issuer: d.Issuer, log: d.Logger}
	if s.issuer == "" {
		s.issuer = "partnerd"
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// checkEmail returns the address as given, trimmed. Errors: InvalidRequest on /email.
func checkEmail(email string) (string, error) {
	email = strings.TrimSpace(email)
	a, err := mail.ParseAddress(email)
	if err != nil || textrule.Has(email) || a.Address != email || a.Name != "" || len(email) > 254 || !strings.Contains(email[strings.LastIndex(email, "@")+1:], ".") {
		return "", apperr.Field(apperr.InvalidRequest, "The email is not an address.", "/email", "an address such as ada@example.com")
	}
	return email, nil
}

// newToken returns 256 random bits in unpadded base64url.
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", errors.Join(errors.New("read random token"), err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Invite invites email to partnerID's team with role, on behalf of by, and
// returns the user and the invitation's token (shown once; only its hash is
// stored). Inviting the address of a user still invited replaces their pending
// invitation (and role): the way to send a new link. Every invitation is audited
// (partner_user_invited, naming the operator, the command line or the partner's
// user) in the same unit of work. Errors: NotFound (no such
// partner, or an inviting user not of it), InvalidRequest (the email, the role,
// an address already active or disabled on the team), Unauthorized (an inviting
// user who is not an active admin).
//
// run is how its caller has it run: uow.Plain, or under its request's
// Idempotency-Key (idempotency.Keyed).
func (s *Service) Invite(ctx context.Context, run uow.Runner[*NewInvitation, Tx], partnerID uuid.UUID, email string, role Role, by actor.Actor) (*NewInvitation, error) {
	email, err := checkEmail(email)
	if err != nil {
		return nil, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return nil, err
	}
	return run.Run(ctx, s.store.WithTx, func(ctx context.Context, tx Tx) (*NewInvitation, error) {
		if _, err := tx.PartnerByID(ctx, partnerID); err != nil {
			return nil, err
		}
		if err := s.mayManage(ctx, tx, partnerID, by, "invites users"); err != nil {
			return nil, err
		}
		now := s.now()
		u, err := tx.PartnerUserByEmail(ctx, partnerID, EmailKey(email))
		switch {
		case apperr.CodeOf(err) == apperr.NotFound:
			u = &User{ID: uuid.New(), PartnerID: partnerID, Email: email, Role: role, Status: Invited, CreatedAt: now, UpdatedAt: now}
			if err := tx.InsertPartnerUser(ctx, u); err != nil {
				return nil, err
			}
		case err != nil:
			return nil, err
		case u.Status != Invited:
			return nil, apperr.Field(apperr.InvalidRequest, "This address is already a user of the partner ("+string(u.Status)+").",
				"/email", "an address not yet on the team")
		default: // still invited: a new link replaces the pending one
			u.Role, u.Email, u.UpdatedAt = role, email, now
			if err := tx.UpdatePartnerUser(ctx, u); err != nil {
				return nil, err
			}
			if err := tx.DeletePartnerInvitations(ctx, u.ID); err != nil {
				return nil, err
			}
		}
		token, err := newToken()
		if err != nil {
			return nil, err
		}
		inv := &Invitation{ID: uuid.New(), UserID: u.ID, TokenHash: HashToken(token), By: inviterOf(by), ExpiresAt: now.Add(InvitationTTL), CreatedAt: now}
		if err := tx.InsertPartnerInvitation(ctx, inv); err != nil {
			return nil, err
		}
		if err := s.record(ctx, tx, by, audit.PartnerUserInvited, u, u.Email); err != nil {
			return nil, err
		}
		tx.AfterCommit(func() {
			s.log.InfoContext(ctx, "partner user invited", "actor", string(by.Kind), "by", by.ID.String(), "partner_id", partnerID.String(),
				"user_id", u.ID.String(), "role", string(u.Role), "expires_at", inv.ExpiresAt)
		})
		return &NewInvitation{User: u, Invitation: inv, Token: token}, nil
	})
}

// mayManage refuses a partner's user acting on partnerID's team unless they are
// an active admin of it (operators and the command line may). Errors: NotFound
// (a user of another partner), Unauthorized.
func (s *Service) mayManage(ctx context.Context, tx Tx, partnerID uuid.UUID, by actor.Actor, what string) error {
	if by.Kind != actor.PartnerUser {
		return nil
	}
	u, err := tx.PartnerUser(ctx, partnerID, by.ID)
	if err != nil {
		return err
	}
	if u.Status != Active || u.Role != Admin {
		return apperr.New(apperr.Unauthorized, "Only an active admin of the partner "+what+".")
	}
	return nil
}

// record writes the audit row of action by on user u, in tx (nothing for a
// service without an audit log).
func (s *Service) record(ctx context.Context, tx Tx, by actor.Actor, action audit.Action, u *User, reference string) error {
	if s.audit == nil {
		return nil
	}
	return s.audit.Record(ctx, tx, by, audit.Entry{Action: action, SubjectID: &u.ID, Reference: &reference})
}

// Invitation returns the pending invitation of token and its user, for the page
// that asks for the password. Errors: NotFound (no such link),
// InvalidStateTransition (used, or expired).
func (s *Service) Invitation(ctx context.Context, token string) (*Invitation, *User, error) {
	inv, err := s.store.PartnerInvitationByHash(ctx, HashToken(token))
	if apperr.CodeOf(err) == apperr.NotFound {
		return nil, nil, apperr.New(apperr.NotFound, "This invitation link is not valid; ask for a new one.")
	}
	if err != nil {
		return nil, nil, err
	}
	if err := s.pending(inv); err != nil {
		return nil, nil, err
	}
	u, err := s.store.PartnerUserByID(ctx, inv.UserID)
	if err != nil {
		return nil, nil, err
	}
	return inv, u, nil
}

// pending refuses an invitation that was used or has expired.
func (s *Service) pending(inv *Invitation) error {
	if inv.UsedAt != nil {
		return apperr.New(apperr.InvalidStateTransition, "This invitation was already used; sign in, or ask for a new one.")
	}
	if !s.now().Before(inv.ExpiresAt) {
		return apperr.New(apperr.InvalidStateTransition,
			"This invitation expired at "+inv.ExpiresAt.UTC().Format(time.RFC3339)+"; ask for a new one.")
	}
	return nil
}

// Accept sets the password of the user invited with token and activates them;
// the token works once. Errors: NotFound (no such link), InvalidStateTransition
// (used, expired, or the user disabled meanwhile), InvalidRequest (the password
// rules, CheckPassword).
func (s *Service) Accept(ctx context.Context, token, password string) (*User, error) {
	inv, u, err := s.Invitation(ctx, token)
	if err != nil {
		return nil, err
	}
	if err := CheckPassword(password, u.Email, s.partnerName(ctx, u.PartnerID)); err != nil {
		return nil, err
	}
	release, err := hashSlot(ctx)
	if err != nil {
		return nil, err
	}
	hash, err := HashPassword(password)
	release()
	if err != nil {
		return nil, err
	}
	return uow.Run(ctx, s.store.WithTx, func(ctx context.Context, tx Tx) (*User, error) {
		now := s.now()
		ok, err := tx.UsePartnerInvitation(ctx, inv.ID, now)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, apperr.New(apperr.InvalidStateTransition, "This invitation was already used or has expired; ask for a new one.")
		}
		u, err := tx.PartnerUser(ctx, u.PartnerID, u.ID)
		if err != nil {
			return nil, err
		}
		if u.Status != Invited {
			return nil, apperr.New(apperr.InvalidStateTransition, "This user is "+string(u.Status)+"; the invitation no longer applies.")
		}
		u.Status, u.PasswordHash, u.PasswordChangedAt, u.UpdatedAt = Active, hash, &now, now
		if err := tx.UpdatePartnerUser(ctx, u); err != nil {
			return nil, err
		}
		return u, nil
	})
}

// errSignIn is every failed sign-in: which part was wrong is not told.
func errSignIn() error {
	return apperr.New(apperr.Unauthorized, "The email or password is wrong.")
}

// Authenticate returns the active users with address email whose password is
// password: one, or several when the address is on several partners' teams with
// the same password (the caller then asks which partner). It costs the same one
// argon2id verification per candidate for an unknown address (a dummy hash), a
// user not yet active, a disabled one and a wrong password, so the time taken
// does not tell which. It does not check the second factor (VerifyTOTP,
// UseRecoveryCode). The check runs in a hash slot (HashSlots). Errors:
// Unauthorized, ServiceUnavailable (ErrBusy: no slot came free).
func (s *Service) Authenticate(ctx context.Context, email, password string) ([]*User, error) {
	users, err := s.store.PartnerUsersByEmail(ctx, EmailKey(email))
	if err != nil {
		return nil, err
	}
	release, err := hashSlot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if len(password) > 4*MaxPasswordLength { // longer than any password can be: no user's
		users = nil
	}
	if len(users) == 0 {
		_, _ = VerifyPassword(dummyHash(), password[:min(len(password), 4*MaxPasswordLength)])
		return nil, errSignIn()
	}
	var out []*User
	for _, u := range users {
		hash := u.PasswordHash
		if hash == "" {
			hash = dummyHash()
		}
		ok, err := VerifyPassword(hash, password)
		if err != nil {
			return nil, fmt.Errorf("user %s: %w", u.ID, err)
		}
		if ok && u.Status == Active && u.PasswordHash != "" {
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		return nil, errSignIn()
	}
	return out, nil
}

// Get returns partner's user id. Errors: NotFound (another partner's user included).
func (s *Service) Get(ctx context.Context, partnerID, id uuid.UUID) (*User, error) {
	return s.store.PartnerUser(ctx, partnerID, id)
}

// UserByID returns user id of whichever partner: for a sign-in between its
// password and its second factor, which knows the user, not yet a partner.
// Errors: NotFound.
func (s *Service) UserByID(ctx context.Context, id uuid.UUID) (*User, error) {
	return s.store.PartnerUserByID(ctx, id)
}

// partnerName is the name of partner id, which a new password must not be made
// of (empty when it cannot be read: the other rules still hold).
func (s *Service) partnerName(ctx context.Context, id uuid.UUID) string {
	p, err := s.partners.Get(ctx, id)
	if err != nil {
		return ""
	}
	return p.Name
}

// List returns partner's users, oldest first. Errors: NotFound (no such partner).
func (s *Service) List(ctx context.Context, partnerID uuid.UUID) ([]*User, error) {
	if _, err := s.partners.Get(ctx, partnerID); err != nil {
		return nil, err
	}
	return s.store.PartnerUsers(ctx, partnerID)
}

// change runs fn on partner's user id in a unit of work (fn is handed it) and
// writes the user. The team is locked first (Tx.LockPartnerTeam), and the user
// read under the lock: a change's rule that counts the team's admins
// (keepsAnAdmin) sees every change committed before it, so parallel demotions
// or disablings of the last admins leave one.
func (s *Service) change(ctx context.Context, partnerID, id uuid.UUID, fn func(ctx context.Context, tx Tx, u *User, now time.Time) error) (*User, error) {
	return uow.Run(ctx, s.store.WithTx, func(ctx context.Context, tx Tx) (*User, error) {
		if err := tx.LockPartnerTeam(ctx, partnerID); err != nil {
			if apperr.CodeOf(err) == apperr.NotFound {
				return nil, apperr.New(apperr.NotFound, "The user was not found.")
			}
			return nil, err
		}
		u, err := tx.PartnerUser(ctx, partnerID, id)
		if err != nil {
			return nil, err
		}
		now := s.now()
		if err := fn(ctx, tx, u, now); err != nil {
			return nil, err
		}
		u.UpdatedAt = now
		if err := tx.UpdatePartnerUser(ctx, u); err != nil {
			return nil, err
		}
		return u, nil
	})
}

// keepsAnAdmin refuses a change that would leave partner without an active admin
// (u stops being one).
func (s *Service) keepsAnAdmin(ctx context.Context, tx Tx, u *User) error {
	if u.Role != Admin || u.Status != Active {
		return nil
	}
	users, err := tx.PartnerUsers(ctx, u.PartnerID)
	if err != nil {
		return err
	}
	for _, o := range users {
		if o.ID != u.ID && o.Role == Admin && o.Status == Active {
			return nil
		}
	}
	return apperr.New(apperr.InvalidStateTransition, "This is the partner's last active admin; make another user admin first.")
}

// ChangeRoleBy gives partner's user id role on behalf of by, audited
// (partner_user_role_changed, the new role as reference) when the role changes.
// Errors: NotFound, InvalidRequest (the role), InvalidStateTransition (a
// disabled user, or the last active admin), Unauthorized (by a user who is not
// an active admin of the partner).
func (s *Service) ChangeRoleBy(ctx context.Context, partnerID, id uuid.UUID, role Role, by actor.Actor) (*User, error) {
	if _, err := ParseRole(string(role)); err != nil {
		return nil, err
	}
	return s.change(ctx, partnerID, id, func(ctx context.Context, tx Tx, u *User, _ time.Time) error {
		if err := s.mayManage(ctx, tx, partnerID, by, "changes roles"); err != nil {
			return err
		}
		if u.Status == Disabled {
			return apperr.New(apperr.InvalidStateTransition, "This user is disabled.")
		}
		if role != Admin {
			if err := s.keepsAnAdmin(ctx, tx, u); err != nil {
				return err
			}
		}
		if u.Role == role {
			return nil
		}
		u.Role = role
		return s.record(ctx, tx, by, audit.PartnerUserRoleChanged, u, string(role))
	})
}

// DisableBy stops partner's user id signing in on behalf of by and ends their
// sessions (the epoch grows); their pending invitation goes; audited
// (partner_user_disabled). Disabling a disabled user changes nothing. Errors:
// NotFound, InvalidStateTransition (the last active admin), Unauthorized (by a
// user who is not an active admin of the partner).
func (s *Service) DisableBy(ctx context.Context, partnerID, id uuid.UUID, by actor.Actor) (*User, error) {
	return s.change(ctx, partnerID, id, func(ctx context.Context, tx Tx, u *User, now time.Time) error {
		if err := s.mayManage(ctx, tx, partnerID, by, "disables users"); err != nil {
			return err
		}
		if u.Status == Disabled {
			return nil
		}
		if err := s.keepsAnAdmin(ctx, tx, u); err != nil {
			return err
		}
		u.Status, u.DisabledAt = Disabled, &now
		u.SessionEpoch++
		if err := tx.DeletePartnerInvitations(ctx, u.ID); err != nil {
			return err
		}
		return s.record(ctx, tx, by, audit.PartnerUserDisabled, u, u.Email)
	})
}

// ChangePassword replaces the password of partner's active user id after
// checking the current one, and ends every session of theirs (the epoch grows;
// the caller starts a new one under the new epoch). Errors: NotFound,
// Unauthorized (the current password is wrong), InvalidRequest (the rules),
// InvalidStateTransition (not active).
func (s *Service) ChangePassword(ctx context.Context, partnerID, id uuid.UUID, current, password string) (*User, error) {
	u, err := s.store.PartnerUser(ctx, partnerID, id)
	if err != nil {
		return nil, err
	}
	if u.Status != Active {
		return nil, apperr.New(apperr.InvalidStateTransition, "This user is "+string(u.Status)+".")
	}
	release, err := hashSlot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if ok, err := VerifyPassword(u.PasswordHash, current); err != nil || !ok {
		return nil, apperr.New(apperr.Unauthorized, "The current password is wrong.")
	}
	if err := CheckPassword(password, u.Email, s.partnerName(ctx, u.PartnerID)); err != nil {
		return nil, err
	}
	hash, err := HashPassword(password)
	if err != nil {
		return nil, err
	}
	return s.change(ctx, partnerID, id, func(_ context.Context, _ Tx, u *User, now time.Time) error {
		if u.Status != Active {
			return apperr.New(apperr.InvalidStateTransition, "This user is "+string(u.Status)+".")
		}
		u.PasswordHash, u.PasswordChangedAt = hash, &now
		u.SessionEpoch++
		return nil
	})
}
