// Package approvals is four eyes: an action that moves money, releases funds or
// changes who may do so is proposed by one operator and takes effect only when a
// second approves it. A proposal keeps the request exactly as sent; approving
// runs it again as the approver, against the state at that moment (the operator
// API replays it through its own routes, so the action is the one use case it
// always is). Which actions need a second operator is a setting (APPROVALS).
package approvals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
)

// Action is a kind of action that may need a second operator, as APPROVALS and
// the contract's ApprovalAction name it.
type Action string

// The actions.
const (
	Payout          Action = "payout"
	Fill            Action = "fill"
	Settle          Action = "settle"
	Refund          Action = "refund"
	ScreeningReview Action = "screening_review"
	Operator        Action = "operator"
	PartnerKey      Action = "partner_key"
)

// Actions lists every action (the contract's ApprovalAction enum; a test keeps
// them equal).
var Actions = []Action{Payout, Fill, Settle, Refund, ScreeningReview, Operator, PartnerKey}

// Set is the actions that need a second operator.
type Set map[Action]bool

// ParseSet reads APPROVALS: comma-separated action names, "" or "none" for
// none. An unknown name is an error (the server refuses to start rather than let
// money move on one pair of eyes by a typo).
func ParseSet(s string) (Set, error) {
	out := Set{}
	if strings.TrimSpace(s) == "none" {
		return out, nil
	}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(Actions, Action(n)) {
			return nil, fmt.Errorf("unknown action %q: want names among %s", n, strings.Join(names(Actions), ","))
		}
		out[Action(n)] = true
	}
	return out, nil
}

// All is every action: production's default.
func All() string { return strings.Join(names(Actions), ",") }

func names(as []Action) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a)
	}
	return out
}

// String is the set as APPROVALS spells it, in the order of Actions.
func (s Set) String() string {
	var out []Action
	for _, a := range Actions {
		if s[a] {
			out = append(out, a)
		}
	}
	return strings.Join(names(out), ",")
}

// Status is where a proposal stands.
type Status string

// The statuses. Expired is never stored: a pending proposal past its expiry reads so.
const (
	Pending Status = "pending"
	// Approving is claimed by an approver whose run of the action has not finished
	// (the same approver approving again finishes it).
	Approving Status = "approving"
	Approved  Status = "approved"
	Rejected  Status = "rejected"
	Failed    Status = "failed"
	Expired   Status = "expired"
)

// Statuses lists every status (the contract's ApprovalStatus).
var Statuses = []Status{Pending, Approving, Approved, Rejected, Failed, Expired}

// Approval is one proposed action.
type Approval struct {
	ID     uuid.UUID
	Action Action
	// Operation, Method, Path and Body are the request as sent: Operation its
	// operationId, Path under the operator API's base, Body its JSON.
	Operation, Method, Path string
	Body                    []byte
	// Summary is the action in words, for the person who approves it.
	Summary      string
	RequiredRole operators.Role
	Status       Status
	ProposedBy   uuid.UUID
	ProposerName string // filled by reads
	// IdempotencyKey and Fingerprint make a retried proposal the same proposal.
	IdempotencyKey, Fingerprint string
	ProposedAt, ExpiresAt       time.Time
	DecidedBy                   *uuid.UUID
	DeciderName                 string // filled by reads
	DecidedAt                   *time.Time
	Note                        *string
	// Failure is the action's error (the contract's ErrorInfo, JSON) when it was
	// refused at approval; Result its answer's body once approved.
	Failure, Result []byte
}

// StatusAt is a's status at now: a pending proposal past its expiry is Expired.
func (a *Approval) StatusAt(now time.Time) Status {
	if a.Status == Pending && !now.Before(a.ExpiresAt) {
		return Expired
	}
	return a.Status
}

// Filter selects proposals; zero fields select every one.
type Filter struct {
	Status *Status
	Action *Action
}

// Store keeps proposals. Each change runs in a unit of work of its own with its
// audit row.
type Store interface {
	// InsertApproval writes a and its audit row, unless the proposer already made
	// one for the operation with the same key: then it writes nothing and returns
	// false.
	InsertApproval(ctx context.Context, a *Approval, e *audit.Entry) (bool, error)
	// ApprovalByKey is the proposer's proposal of operation under key, or apperr NotFound.
	ApprovalByKey(ctx context.Context, proposer uuid.UUID, operation, key string) (*Approval, error)
	// Approval returns proposal id with its operators' names, or apperr NotFound.
	Approval(ctx context.Context, id uuid.UUID) (*Approval, error)
	// ListApprovals returns up to limit proposals matching f at now, newest first, after pos.
	ListApprovals(ctx context.Context, f Filter, now time.Time, after *cursor.Position, limit int) ([]*Approval, error)
	// ClaimApproval moves proposal id from pending (not expired at now) to
	// approving by decider; false when it was not pending.
	ClaimApproval(ctx context.Context, id, decider uuid.UUID, now time.Time) (bool, error)
	// FinishApproval records the outcome of an approving proposal (Approved with
	// its result, Failed with its failure) and its audit row (nil for none).
	FinishApproval(ctx context.Context, id uuid.UUID, status Status, result, failure []byte, now time.Time, e *audit.Entry) error
	// RejectApproval closes a pending proposal (not expired at now) as rejected by
	// decider with note, and its audit row; false when it was not pending.
	RejectApproval(ctx context.Context, id, decider uuid.UUID, note string, now time.Time, e *audit.Entry) (bool, error)
	// PendingApprovals counts the pending proposals not expired at now and returns
	// the oldest one's proposal time (nil for none).
	PendingApprovals(ctx context.Context, now time.Time) (int, *time.Time, error)
}

// Service proposes, decides and lists.
type Service struct {
	store Store
	codec *cursor.Codec
	set   Set
	ttl   time.Duration
	now   func() time.Time
}

// NewService returns a Service for the actions of set, each proposal expiring ttl
// after it is made.
func NewService(store Store, codec *cursor.Codec, set Set, ttl time.Duration, now func() time.Time) *Service {
	return &Service{store: store, codec: codec, set: set, ttl: ttl, now: now}
}

// Needs reports whether action a needs a second operator.
func (s *Service) Needs(a Action) bool { return s != nil && s.set[a] }

// Set is the actions that need a second operator.
func (s *Service) Set() Set { return s.set }

// Proposal is a request to hold for a second operator.
type Proposal struct {
	Action                  Action
	Operation, Method, Path string
	Body                    []byte
	Summary                 string
	RequiredRole            operators.Role
	IdempotencyKey          string
}

// Fingerprint is what tells a retried proposal from another request under the
// same key: its method, path and body.
func Fingerprint(method, path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method + " " + path + "\n"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Propose records p as by's proposal and its audit row. A retry (the same
// operation and key) returns the first proposal and true; the same key with
// another request is IdempotencyKeyReused.
func (s *Service) Propose(ctx context.Context, by *operators.Operator, p Proposal) (*Approval, bool, error) {
	now := s.now().UTC()
	a := &Approval{ID: uuid.New(), Action: p.Action, Operation: p.Operation, Method: p.Method, Path: p.Path, Body: p.Body,
		Summary: p.Summary, RequiredRole: p.RequiredRole, Status: Pending, ProposedBy: by.ID, ProposerName: by.Name,
		IdempotencyKey: p.IdempotencyKey, Fingerprint: Fingerprint(p.Method, p.Path, p.Body), ProposedAt: now, ExpiresAt: now.Add(s.ttl)}
	ok, err := s.store.InsertApproval(ctx, a, entry(actor.OfOperator(by.ID, by.Name), audit.ApprovalProposed, a, now))
	if err != nil {
		return nil, false, err
	}
	if ok {
		return a, false, nil
	}
	first, err := s.store.ApprovalByKey(ctx, by.ID, p.Operation, p.IdempotencyKey)
	if err != nil {
		return nil, false, err
	}
	if first.Fingerprint != a.Fingerprint {
		return nil, false, apperr.Field(apperr.IdempotencyKeyReused, "This Idempotency-Key was used with a different request.", "Idempotency-Key", "reused with a different request")
	}
	return first, true, nil
}

// Get returns proposal id. Errors: NotFound.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (*Approval, error) {
	return s.store.Approval(ctx, id)
}

// Now is the service's clock (the operator API reads proposals' status at it).
func (s *Service) Now() time.Time { return s.now() }

// closed is the refusal to decide a proposal no longer pending, saying why.
func closed(a *Approval, now time.Time) error {
	return apperr.New(apperr.ApprovalClosed, fmt.Sprintf("The proposal is %s, no longer pending.", a.StatusAt(now)))
}

// Claim makes by the approver of pending proposal a: by must not be its proposer
// and must hold its role (Forbidden). It returns true when by should run the
// action now: a pending proposal claimed, or one by already claimed whose run did
// not finish; false, with a, when by already approved it (the answer is the
// approval). Errors: Forbidden, ApprovalClosed.
func (s *Service) Claim(ctx context.Context, by *operators.Operator, a *Approval) (bool, error) {
	now := s.now()
	mine := a.DecidedBy != nil && *a.DecidedBy == by.ID
	switch a.StatusAt(now) {
	case Approved:
		if mine {
			return false, nil
		}
		return false, closed(a, now)
	case Approving:
		if mine {
			return true, nil
		}
		return false, closed(a, now)
	case Pending:
	default:
		return false, closed(a, now)
	}
	if a.ProposedBy == by.ID {
		return false, apperr.New(apperr.Forbidden, "A proposal needs a second operator: its proposer cannot approve it.")
	}
	if !by.Has(a.RequiredRole) {
		return false, operators.Forbidden(a.RequiredRole)
	}
	ok, err := s.store.ClaimApproval(ctx, a.ID, by.ID, now)
	if err != nil {
		return false, err
	}
	if !ok {
		fresh, err := s.store.Approval(ctx, a.ID)
		if err != nil {
			return false, err
		}
		return false, closed(fresh, now)
	}
	return true, nil
}

// Finish records the run of the action by, the approver: its answer's body when
// it succeeded, or its error (ErrorInfo JSON) when it was refused, which fails the
// proposal.
func (s *Service) Finish(ctx context.Context, by *operators.Operator, a *Approval, result, failure []byte) (*Approval, error) {
	now := s.now().UTC()
	status, act := Approved, audit.ApprovalApproved
	var e *audit.Entry
	if failure != nil {
		status = Failed
	} else {
		e = entry(actor.OfOperator(by.ID, by.Name).Approved(a.ProposedBy), act, a, now)
	}
	if err := s.store.FinishApproval(ctx, a.ID, status, result, failure, now, e); err != nil {
		return nil, err
	}
	return s.store.Approval(ctx, a.ID)
}

// Reject closes pending proposal a with note: by must hold its role or be its
// proposer (a withdrawal). Errors: Forbidden, ApprovalClosed.
func (s *Service) Reject(ctx context.Context, by *operators.Operator, a *Approval, note string) (*Approval, error) {
	now := s.now().UTC()
	if a.StatusAt(now) != Pending {
		return nil, closed(a, now)
	}
	if a.ProposedBy != by.ID && !by.Has(a.RequiredRole) {
		return nil, operators.Forbidden(a.RequiredRole)
	}
	ok, err := s.store.RejectApproval(ctx, a.ID, by.ID, note, now, entry(actor.OfOperator(by.ID, by.Name), audit.ApprovalRejected, a, now))
	if err != nil {
		return nil, err
	}
	fresh, err := s.store.Approval(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, closed(fresh, now)
	}
	return fresh, nil
}

// entry is the audit row of a decision on a by by.
func entry(by actor.Actor, act audit.Action, a *Approval, now time.Time) *audit.Entry {
	id, ref := a.ID, string(a.Action)
	e := audit.Entry{ID: uuid.New(), Action: act, SubjectID: &id, Reference: &ref, CreatedAt: now}.By(by)
	return &e
}

// Page is one page of proposals.
type Page struct {
	Items      []*Approval
	HasMore    bool
	Limit      int
	NextCursor *string
}

// List returns one page of proposals matching f, newest first. Errors: InvalidCursor.
func (s *Service) List(ctx context.Context, f Filter, limit int, after string) (*Page, error) {
	limit = cursor.Limit(limit)
	b, _ := json.Marshal(struct {
		List   string  `json:"list"`
		Status *Status `json:"status"`
		Action *Action `json:"action"`
	}{"approvals", f.Status, f.Action})
	scope := string(b)
	pos, err := s.codec.After(after, scope)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListApprovals(ctx, f, s.now(), pos, limit+1)
	if err != nil {
		return nil, err
	}
	p := &Page{Limit: limit}
	p.Items, p.HasMore, p.NextCursor = cursor.Trim(s.codec, scope, rows, limit, func(a *Approval) cursor.Position {
		return cursor.Position{Time: a.ProposedAt, ID: a.ID.String()}
	})
	return p, nil
}

// Waiting counts the proposals waiting for a second operator and how long the
// oldest has waited (0 for none): the metrics and their alert read it.
func (s *Service) Waiting(ctx context.Context) (int, time.Duration, error) {
	now := s.now()
	n, oldest, err := s.store.PendingApprovals(ctx, now)
	if err != nil || oldest == nil {
		return n, 0, err
	}
	return n, now.Sub(*oldest), nil
}
