// Package audit is the record of who did what: one row per successful operator
// action (one per transaction of a batch), per account or key change made with the
// partnerd command on a server, and per team or key change a partner's user made
// on the dashboard, written in the change's own unit of work so the row exists
// exactly when the change does. Refused actions leave no row; their log line says
// why.
package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/cursor"
)

// Action is what an operator did.
type Action string

// The actions.
const (
	Fill            Action = "fill"
	Settle          Action = "settle"
	Payout          Action = "payout"
	Fail            Action = "fail"
	Refund          Action = "refund"
	Accept          Action = "accept"
	ResolveRefunded Action = "resolve_refunded"
	ResolveCredited Action = "resolve_credited"
	BatchPayout     Action = "batch_payout"
	BatchFill       Action = "batch_fill"
	PartnerCreated  Action = "partner_created"
	OperatorCreated Action = "operator_created"
	KeyCreated      Action = "key_created"
	KeyRolled       Action = "key_rolled"
	KeyRevoked      Action = "key_revoked"
	// PartnerUserInvited is an invitation to a partner's team (the subject is the user).
	PartnerUserInvited Action = "partner_user_invited"
	// PartnerUserRoleChanged gives a partner's user another role (the subject is
	// the user, the reference the new role).
	PartnerUserRoleChanged Action = "partner_user_role_changed"
	// PartnerUserDisabled stops a partner's user signing in (the subject is the user).
	PartnerUserDisabled Action = "partner_user_disabled"
	// WebhookEndpointUpdated registers or changes the partner's webhook endpoint
	// (the reference is its URL).
	WebhookEndpointUpdated Action = "webhook_endpoint_updated"
	// WebhookSecretRotated replaces the endpoint's signing secret.
	WebhookSecretRotated Action = "webhook_secret_rotated"
	// WebhookEventReplayed sends an event again (the subject is the event).
	WebhookEventReplayed Action = "webhook_event_replayed"
	// WebhookTestSent sends a test event (the subject is the event).
	WebhookTestSent Action = "webhook_test_sent"
	// SandboxSimulated plays a chain or desk event on a sandbox transaction (the
	// reference is the event's type).
	SandboxSimulated Action = "sandbox_simulated"
	// ScreeningReleased and ScreeningBlocked are an operator's decisions on a
	// transaction held by screening (the note as reference).
	ScreeningReleased Action = "screening_released"
	ScreeningBlocked  Action = "screening_blocked"
	// ApprovalProposed, ApprovalApproved and ApprovalRejected are four eyes: a
	// proposal (the subject) made, approved or rejected (its action the reference).
	ApprovalProposed Action = "approval_proposed"
	ApprovalApproved Action = "approval_approved"
	ApprovalRejected Action = "approval_rejected"
	// OperatorRolesChanged gives an operator (the subject) new roles (the reference).
	OperatorRolesChanged Action = "operator_roles_changed"
	// ScreeningListImported is a screening list imported with the partnerd command
	// (the reference: the source and its publication date).
	ScreeningListImported Action = "screening_list_imported"
	// SecretsRotated re-seals the stored secrets under the newest sealing key.
	SecretsRotated Action = "secrets_rotated"
	// WebhookBacklogResent sends a partner's waiting webhook events now (the
	// partner as subject, the number of events queued as reference).
	WebhookBacklogResent Action = "webhook_backlog_resent"
	// SettlementAccountSet sets a partner's (the subject's) settlement account
	// (the reference: the bank code and the account number's last four digits).
	SettlementAccountSet Action = "settlement_account_set"
)

// Actions lists every action the audit log records (the contract's AuditAction
// lists the same; a test keeps them equal).
var Actions = []Action{Fill, Settle, Payout, Accept, Fail, Refund, ResolveRefunded, ResolveCredited, BatchPayout, BatchFill,
	PartnerCreated, OperatorCreated, KeyCreated, KeyRolled, KeyRevoked, PartnerUserInvited, PartnerUserRoleChanged, PartnerUserDisabled,
	WebhookEndpointUpdated, WebhookSecretRotated, WebhookEventReplayed, WebhookTestSent, SandboxSimulated,
	ScreeningReleased, ScreeningBlocked, ApprovalProposed, ApprovalApproved, ApprovalRejected, OperatorRolesChanged,
	ScreeningListImported, SecretsRotated, WebhookBacklogResent, SettlementAccountSet}

// Known reports whether a is one of Actions.
func Known(a Action) bool {
	for _, x := range Actions {
		if x == a {
			return true
		}
	}
	return false
}

// ActorKind is the kind of actor an entry records (actor.Actor is who acts, as
// the use cases take it; Entry.By turns one into the other).
type ActorKind string

// The kinds recorded (the contract's AuditActor lists the same; a test keeps them equal).
const (
	// ByOperator is an operator, through the operator API or the console.
	ByOperator ActorKind = "operator"
	// ByCLI is the partnerd command run on a server: a shell there is trusted
	// without an operator key, so no operator is recorded.
	ByCLI ActorKind = "cli"
	// ByPartnerUser is a partner's user on the dashboard (PartnerUserID names
	// them): their team and key changes are audited like an operator's.
	ByPartnerUser ActorKind = "partner_user"
)

// Actors lists every kind recorded.
var Actors = []ActorKind{ByOperator, ByCLI, ByPartnerUser}

// CLI is the operator id the command line acts under: none (the nil UUID, as
// GET /audit shows it). An entry recorded with it is the command line's.
var CLI = uuid.Nil

// Entry is one action.
type Entry struct {
	ID uuid.UUID
	// Actor is filled by reads; it is written from PartnerUserID and OperatorID
	// (Acting).
	Actor ActorKind
	// OperatorID is the operator who acted, CLI (the nil UUID) for the command
	// line and for a partner's user.
	OperatorID   uuid.UUID
	OperatorName string // filled by reads; empty when no operator acted (see Who)
	// PartnerUserID is the partner's user who acted on the dashboard, nil for
	// anyone else; PartnerUserEmail (filled by reads) is their address.
	PartnerUserID    *uuid.UUID
	PartnerUserEmail string
	// ProposerID is the operator who proposed the action when OperatorID approved
	// it (four eyes); ProposerName (filled by reads) is their name.
	ProposerID   *uuid.UUID
	ProposerName string
	// CLIUser is the host's user who ran the partnerd command (actor cli), "" when
	// unknown or for anyone else.
	CLIUser            string
	Action             Action
	TransactionID      *uuid.UUID
	UnmatchedDepositID *uuid.UUID
	BatchID            *uuid.UUID
	// SubjectID is the partner, operator, key or partner user of an account or key action.
	SubjectID *uuid.UUID
	Reference *string
	CreatedAt time.Time
}

// Who names who acted, as the log shows it: the operator's name, the partner
// user's address, or the actor itself ("cli") for the command line.
func (e *Entry) Who() string {
	switch e.Actor {
	case ByOperator:
		return e.OperatorName
	case ByPartnerUser:
		if e.PartnerUserEmail != "" {
			return e.PartnerUserEmail
		}
	}
	return string(e.Actor)
}

// Acting is who acted in e as written: a partner's user when PartnerUserID is
// set, else ActorOf(OperatorID).
func (e *Entry) Acting() ActorKind {
	if e.PartnerUserID != nil {
		return ByPartnerUser
	}
	return ActorOf(e.OperatorID)
}

// Filter selects entries; zero fields select everything.
type Filter struct {
	OperatorID    *uuid.UUID
	TransactionID *uuid.UUID
	// UsersOf selects the actions of partner's users (actor partner_user): a
	// partner's activity on the dashboard.
	UsersOf  *uuid.UUID
	Action   *Action
	From, To *time.Time
}

// Tx is the unit of work of the change an entry records (store.Tx): the row is
// written in it, so it exists exactly when the change does.
type Tx interface {
	// InsertAudit writes e in the unit of work.
	InsertAudit(ctx context.Context, e *Entry) error
}

// Store persists the log.
type Store interface {
	// ListAudit returns up to limit entries matching f, newest first (created_at,
	// id descending), after pos when set, with the operators' names and the
	// partner users' addresses.
	ListAudit(ctx context.Context, f Filter, after *cursor.Position, limit int) ([]*Entry, error)
}

// Log records and lists operator actions.
type Log struct {
	store Store
	codec *cursor.Codec
	now   func() time.Time
}

// New returns a Log.
func New(store Store, codec *cursor.Codec, now func() time.Time) *Log {
	return &Log{store: store, codec: codec, now: now}
}

// Record writes one action of by in tx, the action's unit of work (an entry
// whose OperatorID is CLI is not an operator's: the command line's, or a
// partner's user's).
func (l *Log) Record(ctx context.Context, tx Tx, by actor.Actor, e Entry) error {
	e = e.By(by)
	e.ID = uuid.New()
	e.CreatedAt = l.now()
	return tx.InsertAudit(ctx, &e)
}

// Page is one page of the log.
type Page struct {
	Items      []*Entry
	HasMore    bool
	Limit      int
	NextCursor *string
}

// List returns one page of entries matching f, newest first. Errors: InvalidCursor.
func (l *Log) List(ctx context.Context, f Filter, limit int, after string) (*Page, error) {
	limit = cursor.Limit(limit)
	b, _ := json.Marshal(struct {
		List     string     `json:"list"`
		Operator *uuid.UUID `json:"operator"`
		Tx       *uuid.UUID `json:"tx"`
		UsersOf  *uuid.UUID `json:"users_of,omitempty"`
		Action   *Action    `json:"action"`
		From     *time.Time `json:"from"`
		To       *time.Time `json:"to"`
	}{"audit", f.OperatorID, f.TransactionID, f.UsersOf, f.Action, cursor.UTC(f.From), cursor.UTC(f.To)})
	scope := string(b)
	pos, err := l.codec.After(after, scope)
	if err != nil {
		return nil, err
	}
	rows, err := l.store.ListAudit(ctx, f, pos, limit+1)
	if err != nil {
		return nil, err
	}
	p := &Page{Limit: limit}
	p.Items, p.HasMore, p.NextCursor = cursor.Trim(l.codec, scope, rows, limit, func(e *Entry) cursor.Position {
		return cursor.Position{Time: e.CreatedAt, ID: e.ID.String()}
	})
	return p, nil
}

// ActorOf is who acted under operator id: the command line for CLI, else that operator.
func ActorOf(operator uuid.UUID) ActorKind {
	if operator == CLI {
		return ByCLI
	}
	return ByOperator
}

// Writer writes an entry, in the unit of work it is (or the store's own).
type Writer interface {
	InsertAudit(ctx context.Context, e *Entry) error
}

// ByUser records e as the change of by through w, at now, when by is a
// partner's user (the dashboard's calls of the partner API); for anyone else it
// records nothing: the partner API's changes made with an API key are a
// server's, not a person's.
func ByUser(ctx context.Context, w Writer, by actor.Actor, now time.Time, e Entry) error {
	if by.Kind != actor.PartnerUser {
		return nil
	}
	e = e.By(by)
	e.ID, e.CreatedAt = uuid.New(), now
	return w.InsertAudit(ctx, &e)
}

// By returns e as by's change: the operator it names (CLI, the nil UUID, when
// no operator acted) and the partner's user, if by is one. It is the one place
// an actor becomes an audit row's columns.
func (e Entry) By(by actor.Actor) Entry {
	e.OperatorID, e.PartnerUserID = by.OperatorID(), by.PartnerUserID()
	e.ProposerID, e.CLIUser = by.ProposedBy, by.HostUser
	return e
}
