// Package actions holds the operators' state-changing use cases: the actions on a
// transaction (fill, settle, payout, fail, refund, accept), resolving refund
// tasks and unmatched deposits, batch payouts and fills, and the accounts and
// their API keys. Each begins its unit of work itself, through the uow.Runner its
// caller picked (uow.Plain, or the operator's Idempotency-Key: idempotency.Keyed): the domain
// change, its audit row and the stored answer commit together or not at all,
// and the action's log line is written once it has committed. The operator API
// (and through it the console) only translates requests to these calls and their
// results to answers.
package actions

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/apikeys"
	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/pricing/money"
)

// Tx is the unit of work of an action (store.Tx): the lifecycle's change, the
// batch, the refund task, the account or key it writes, its audit row and what
// its answer reads all go through it, so they see one another and commit as one.
type Tx interface {
	batches.Tx
	refunds.ResolveTx
	partners.Tx
	operators.Tx
	apikeys.Tx
	// FillsOf returns the fills of the transactions ids as the unit sees them.
	FillsOf(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*lifecycle.Fill, error)
}

// Service runs the operators' actions.
type Service struct {
	begin     uow.Begin[Tx]
	lifecycle *lifecycle.Engine
	audit     *audit.Log
	unmatched *refunds.Service
	batches   *batches.Service
	partners  *partners.Service
	operators *operators.Service
	keys      *apikeys.Service
	fills     Fills
	screening RefundScreen
	webhooks  Backlog
	log       *slog.Logger
}

// Backlog sends a partner's waiting webhook events now (webhook.Log.Resend).
type Backlog interface {
	Resend(ctx context.Context, by actor.Actor, partnerID uuid.UUID) (int, error)
}

// RefundScreen screens a refund's destinations before money goes back on chain
// (screening.Service.CheckRefund): a named address is refused, and one no
// screener could answer for waits.
type RefundScreen interface {
	CheckRefund(ctx context.Context, network string, addresses []string) error
}

// Fills reads the fills of transactions (the store).
type Fills interface {
	FillsOf(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*lifecycle.Fill, error)
}

// Acted is a transaction as an action left it, with what an answer about it
// shows beside it (its fill, its partner's name), read in the action's unit of
// work: the caller renders its answer from this alone, with no database.
type Acted struct {
	Transaction *lifecycle.Transaction
	Fill        *lifecycle.Fill
	PartnerName string
}

// Deps are the services the actions call. Audit may be nil (no audit rows).
// Begin opens an action's unit of work (the store's WithTx as Tx).
type Deps struct {
	Begin     uow.Begin[Tx]
	Lifecycle *lifecycle.Engine
	Audit     *audit.Log
	Unmatched *refunds.Service
	Batches   *batches.Service
	Partners  *partners.Service
	Operators *operators.Service
	Keys      *apikeys.Service
	Fills     Fills
	// Screening checks refunds' destinations; nil when screening is off.
	Screening RefundScreen
	// Webhooks resends partners' webhook backlogs.
	Webhooks Backlog
	Logger   *slog.Logger
}

// New returns the actions service.
func New(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Service{begin: d.Begin, lifecycle: d.Lifecycle, audit: d.Audit, unmatched: d.Unmatched, batches: d.Batches,
		partners: d.Partners, operators: d.Operators, keys: d.Keys, fills: d.Fills, screening: d.Screening,
		webhooks: d.Webhooks, log: log}
}

// Fill records operator's executed sale of transaction id.
func (s *Service) Fill(ctx context.Context, run uow.Runner[*Acted, Tx], by actor.Actor, id uuid.UUID, rate, fiat decimal.Decimal, reference string) (*Acted, error) {
	return s.act(ctx, run, by, audit.Fill, id, reference, func(ctx context.Context, tx lifecycle.Tx, by actor.Actor) (*lifecycle.Transaction, error) {
		return s.lifecycle.FillOrder(ctx, tx, id, by, rate, fiat, reference)
	})
}

// Settle records the sale's settlement.
func (s *Service) Settle(ctx context.Context, run uow.Runner[*Acted, Tx], by actor.Actor, id uuid.UUID, reference string) (*Acted, error) {
	return s.act(ctx, run, by, audit.Settle, id, reference, func(ctx context.Context, tx lifecycle.Tx, by actor.Actor) (*lifecycle.Transaction, error) {
		return s.lifecycle.SettleOrder(ctx, tx, id, by, reference)
	})
}

// PayOut records the NGN payout of transaction id, paid on its own: one bank
// transfer, so a payout of one (batches.PayOne) that the partner finds among its
// payouts; the action's audit row names it.
func (s *Service) PayOut(ctx context.Context, run uow.Runner[*Acted, Tx], by actor.Actor, id uuid.UUID, reference string) (*Acted, error) {
	a, err := run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*Acted, error) {
		t, b, err := s.batches.PayOne(ctx, tx, by, id, reference)
		if err != nil {
			return nil, err
		}
		return s.done(ctx, tx, by, audit.Payout, t, reference, &b.ID)
	})
	if err != nil {
		s.refused(ctx, by, string(audit.Payout), reference, err, "transaction_id", id.String())
	}
	return a, err
}

// Fail fails transaction id for reason.
func (s *Service) Fail(ctx context.Context, run uow.Runner[*Acted, Tx], by actor.Actor, id uuid.UUID, reason string) (*Acted, error) {
	return s.act(ctx, run, by, audit.Fail, id, reason, func(ctx context.Context, tx lifecycle.Tx, by actor.Actor) (*lifecycle.Transaction, error) {
		return s.lifecycle.FailBy(ctx, tx, id, by, reason)
	})
}

// Refund records the refund of transaction id's deposit (chain transaction txHash).
func (s *Service) Refund(ctx context.Context, run uow.Runner[*Acted, Tx], by actor.Actor, id uuid.UUID, txHash string) (*Acted, error) {
	return s.act(ctx, run, by, audit.Refund, id, txHash, func(ctx context.Context, tx lifecycle.Tx, by actor.Actor) (*lifecycle.Transaction, error) {
		t, err := tx.TransactionForUpdate(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := lifecycle.Check(t, lifecycle.ActionRefund); err != nil {
			return nil, err
		}
		if err := s.checkRefund(ctx, t.Network, lifecycle.RefundDestinations(t)...); err != nil {
			return nil, err
		}
		return s.lifecycle.RefundBy(ctx, tx, id, by, txHash)
	})
}

// Review records an operator's decision on a transaction held by screening, with
// its note (required): release lets it proceed, block fails it for good. The
// decision and its audit row commit with the change. Errors: InvalidRequest (no
// note), NotFound, InvalidStateTransition (not under review).
func (s *Service) Review(ctx context.Context, run uow.Runner[*Acted, Tx], by actor.Actor, id uuid.UUID, decision lifecycle.ReviewDecision, note string) (*Acted, error) {
	if strings.TrimSpace(note) == "" {
		return nil, apperr.Field(apperr.InvalidRequest, "A decision needs a note saying why.", "/note", "required")
	}
	action := audit.ScreeningReleased
	if decision == lifecycle.Block {
		action = audit.ScreeningBlocked
	}
	return s.act(ctx, run, by, action, id, note, func(ctx context.Context, tx lifecycle.Tx, by actor.Actor) (*lifecycle.Transaction, error) {
		return s.lifecycle.Review(ctx, tx, id, by, decision, note)
	})
}

// checkRefund screens a refund's destinations (nothing when screening is off).
func (s *Service) checkRefund(ctx context.Context, network string, to ...string) error {
	if s.screening == nil {
		return nil
	}
	return s.screening.CheckRefund(ctx, network, to)
}

// Accept lets an expired, short-paid transaction proceed on what was received.
func (s *Service) Accept(ctx context.Context, run uow.Runner[*Acted, Tx], by actor.Actor, id uuid.UUID, reason string) (*Acted, error) {
	return s.act(ctx, run, by, audit.Accept, id, reason, func(ctx context.Context, tx lifecycle.Tx, by actor.Actor) (*lifecycle.Transaction, error) {
		return s.lifecycle.Accept(ctx, tx, id, by, reason)
	})
}

// act runs one audited transaction action in its unit of work and logs it once
// it committed (the history entry carries the same facts).
func (s *Service) act(ctx context.Context, run uow.Runner[*Acted, Tx], by actor.Actor, action audit.Action, id uuid.UUID, reference string,
	fn func(ctx context.Context, tx lifecycle.Tx, by actor.Actor) (*lifecycle.Transaction, error)) (*Acted, error) {
	a, err := run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*Acted, error) {
		t, err := fn(ctx, tx, by)
		if err != nil {
			return nil, err
		}
		return s.done(ctx, tx, by, action, t, reference, nil)
	})
	if err != nil {
		s.refused(ctx, by, string(action), reference, err, "transaction_id", id.String())
	}
	return a, err
}

// done audits the action that left t (batch: the batch it recorded, if any), logs
// it once the unit of work committed, and reads the action's answer in it.
func (s *Service) done(ctx context.Context, tx Tx, by actor.Actor, action audit.Action, t *lifecycle.Transaction, reference string, batch *uuid.UUID) (*Acted, error) {
	if s.audit != nil {
		tid, ref := t.ID, reference
		if err := s.audit.Record(ctx, tx, by, audit.Entry{Action: action, TransactionID: &tid, BatchID: batch, Reference: &ref}); err != nil {
			return nil, err
		}
	}
	tx.AfterCommit(func() {
		s.log.InfoContext(ctx, "operator action", "operator_id", by.OperatorID().String(), "action", string(action), "transaction_id", t.ID.String(),
			"partner_id", t.PartnerID.String(), "reference", reference, "status", string(t.Status))
	})
	return s.acted(ctx, tx, t)
}

// acted reads what an answer about t shows beside it, in the action's unit of work.
func (s *Service) acted(ctx context.Context, tx Tx, t *lifecycle.Transaction) (*Acted, error) {
	a := &Acted{Transaction: t}
	if s.partners != nil {
		p, err := tx.PartnerByID(ctx, t.PartnerID)
		if err != nil {
			return nil, err
		}
		a.PartnerName = p.Name
	}
	if s.fills != nil {
		fills, err := tx.FillsOf(ctx, []uuid.UUID{t.ID})
		if err != nil {
			return nil, err
		}
		a.Fill = fills[t.ID]
	}
	return a, nil
}

// refused logs an action the rules refused (replays of stored answers aside).
func (s *Service) refused(ctx context.Context, by actor.Actor, action, reference string, err error, attrs ...any) {
	if _, replayed := idempotency.ReplayOf(err); replayed {
		return
	}
	s.log.InfoContext(ctx, "operator action refused", append([]any{"operator_id", by.OperatorID().String(), "action", action,
		"reference", reference, "error_code", string(apperr.CodeOf(err))}, attrs...)...)
}

// Resolution is how an operator closes a refund task or an unmatched deposit.
type Resolution struct {
	Action lifecycle.TaskStatus
	// TxHash is the refund's chain transaction (required to refund a short payment).
	TxHash *string
	Note   *string
}

func (r Resolution) reference() string {
	if r.TxHash != nil {
		return *r.TxHash
	}
	return ""
}

// ResolveDeposit closes open unmatched deposit id.
func (s *Service) ResolveDeposit(ctx context.Context, run uow.Runner[*lifecycle.RefundTask, Tx], by actor.Actor, id uuid.UUID, r Resolution) (*lifecycle.RefundTask, error) {
	return run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*lifecycle.RefundTask, error) {
		if err := s.screenTask(ctx, tx, id, r); err != nil {
			return nil, err
		}
		d, err := s.unmatched.ResolveUnmatched(ctx, tx, id, by.OperatorID(), r.Action, r.TxHash, r.Note)
		if err != nil {
			return nil, err
		}
		if s.audit != nil {
			did := d.ID
			if err := s.audit.Record(ctx, tx, by, audit.Entry{Action: audit.Action("resolve_" + string(r.Action)),
				UnmatchedDepositID: &did, Reference: r.TxHash}); err != nil {
				return nil, err
			}
		}
		tx.AfterCommit(func() {
			s.log.InfoContext(ctx, "operator action", "operator_id", by.OperatorID().String(), "action", "resolve_"+string(r.Action),
				"unmatched_deposit_id", d.ID.String(), "reference", r.reference())
		})
		return d, nil
	})
}

// ResolveTask closes open refund task id of any kind. A short task of a
// transaction is the transaction's money: refunded goes through the lifecycle (an
// expired transaction is refunded in the same unit of work, so the returned money
// cannot be counted or accepted later); credited is refused (an expired short
// payment is credited by accepting the transaction). Other kinds close on their own.
func (s *Service) ResolveTask(ctx context.Context, run uow.Runner[*lifecycle.RefundTask, Tx], by actor.Actor, id uuid.UUID, r Resolution) (*lifecycle.RefundTask, error) {
	return run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*lifecycle.RefundTask, error) {
		d, err := s.resolveTask(ctx, tx, by, id, r)
		if err != nil {
			return nil, err
		}
		if s.audit != nil {
			did := d.ID
			if err := s.audit.Record(ctx, tx, by, audit.Entry{Action: audit.Action("resolve_" + string(r.Action)),
				TransactionID: d.TransactionID, UnmatchedDepositID: &did, Reference: r.TxHash}); err != nil {
				return nil, err
			}
		}
		tx.AfterCommit(func() {
			s.log.InfoContext(ctx, "operator action", "operator_id", by.OperatorID().String(), "action", "resolve_"+string(r.Action),
				"refund_task_id", d.ID.String(), "kind", string(d.Kind), "reference", r.reference())
		})
		return d, nil
	})
}

// screenTask screens the destination of a refund task resolved as refunded (the
// address its partner asked for, else its sender), and refuses one whose transaction's funds are held or blocked.
func (s *Service) screenTask(ctx context.Context, tx Tx, id uuid.UUID, r Resolution) error {
	if r.Action != lifecycle.TaskRefunded {
		return nil
	}
	d, err := tx.UnmatchedDeposit(ctx, id)
	if err != nil {
		return err
	}
	if d.TransactionID != nil {
		t, err := tx.TransactionForUpdate(ctx, *d.TransactionID)
		if err != nil {
			return err
		}
		if !t.Screening.Proceeds() {
			return apperr.New(apperr.InvalidStateTransition, "The transaction's funds are held for review or blocked; nothing is sent back until the review ends.")
		}
	}
	to := d.FromAddress
	if d.RefundTo != nil {
		to = *d.RefundTo
	}
	return s.checkRefund(ctx, d.Network, to)
}

func (s *Service) resolveTask(ctx context.Context, tx Tx, by actor.Actor, id uuid.UUID, r Resolution) (*lifecycle.RefundTask, error) {
	if err := s.screenTask(ctx, tx, id, r); err != nil {
		return nil, err
	}
	d, err := tx.UnmatchedDeposit(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.Kind != lifecycle.TaskShort || d.TransactionID == nil || d.Status != lifecycle.TaskOpen {
		return s.unmatched.Resolve(ctx, tx, id, by.OperatorID(), r.Action, r.TxHash, r.Note)
	}
	switch {
	case r.Action == lifecycle.TaskCredited:
		return nil, apperr.New(apperr.InvalidStateTransition,
			"A short payment is not credited through its refund task; accept the transaction (POST /transactions/{id}/accept) or refund it.")
	case r.TxHash == nil:
		return nil, apperr.Field(apperr.InvalidRequest, "A refund needs the refund's chain transaction.", "/tx_hash", "is required when action is refunded")
	}
	if _, err := s.lifecycle.RefundShort(ctx, tx, *d.TransactionID, by, *r.TxHash); err != nil {
		return nil, err
	}
	return tx.UnmatchedDeposit(ctx, id)
}

// BatchPayout records one bank transfer of fiat to partner for the transactions ids.
func (s *Service) BatchPayout(ctx context.Context, run uow.Runner[*batches.Batch, Tx], by actor.Actor, partner uuid.UUID, ids []uuid.UUID, reference string, fiat decimal.Decimal) (*batches.Batch, error) {
	b, err := run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*batches.Batch, error) {
		b, err := s.batches.CreatePayout(ctx, tx, by, partner, ids, reference, fiat)
		if err == nil {
			s.batchLogged(ctx, tx, by, b)
		}
		return b, err
	})
	if err != nil {
		s.refused(ctx, by, "batch_payout", reference, err)
	}
	return b, err
}

// BatchFill records one liquidity order at rate for the transactions ids.
func (s *Service) BatchFill(ctx context.Context, run uow.Runner[*batches.Batch, Tx], by actor.Actor, ids []uuid.UUID, rate decimal.Decimal, reference string) (*batches.Batch, error) {
	b, err := run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*batches.Batch, error) {
		b, err := s.batches.CreateFill(ctx, tx, by, ids, rate, reference)
		if err == nil {
			s.batchLogged(ctx, tx, by, b)
		}
		return b, err
	})
	if err != nil {
		s.refused(ctx, by, "batch_fill", reference, err)
	}
	return b, err
}

func (s *Service) batchLogged(ctx context.Context, tx Tx, by actor.Actor, b *batches.Batch) {
	tx.AfterCommit(func() {
		s.log.InfoContext(ctx, "operator action", "operator_id", by.OperatorID().String(), "action", "batch_"+string(b.Kind),
			"batch_id", b.ID.String(), "transactions", len(b.TransactionIDs), "reference", b.Reference,
			"fiat_amount", money.FormatFiat(b.FiatAmount))
	})
}

// NewPartner is a created partner and its first key's secret (shown once).
type NewPartner struct {
	Partner *partners.Partner
	Secret  string
}

// CreatePartner creates a partner named name and its first key.
func (s *Service) CreatePartner(ctx context.Context, run uow.Runner[NewPartner, Tx], by actor.Actor, name string) (NewPartner, error) {
	return run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (NewPartner, error) {
		p, key, err := s.partners.Create(ctx, tx, name)
		if err != nil {
			return NewPartner{}, err
		}
		return NewPartner{Partner: p, Secret: key}, s.audited(ctx, tx, by, audit.PartnerCreated, p.ID, p.Name)
	})
}

// NewOperator is a created operator and their first key's secret (shown once).
type NewOperator struct {
	Operator *operators.Operator
	Secret   string
}

// CreateOperator creates an operator named name and their first key.
func (s *Service) CreateOperator(ctx context.Context, run uow.Runner[NewOperator, Tx], by actor.Actor, name string, roles []operators.Role) (NewOperator, error) {
	return run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (NewOperator, error) {
		o, key, err := s.operators.Create(ctx, tx, name, roles)
		if err != nil {
			return NewOperator{}, err
		}
		return NewOperator{Operator: o, Secret: key}, s.audited(ctx, tx, by, audit.OperatorCreated, o.ID, o.Name)
	})
}

// SetRoles gives operator id roles, audited (the new roles as reference). An
// operator cannot change their own roles (Forbidden): another admin does.
// Errors: NotFound, InvalidRequest for no roles, Forbidden.
func (s *Service) SetRoles(ctx context.Context, run uow.Runner[*operators.Operator, Tx], by actor.Actor, id uuid.UUID, roles []operators.Role) (*operators.Operator, error) {
	if by.Kind == actor.Operator && by.ID == id {
		return nil, apperr.New(apperr.Forbidden, "An operator cannot change their own roles: another admin does.")
	}
	if len(roles) == 0 {
		return nil, apperr.Field(apperr.InvalidRequest, "At least one role is required.", "roles", "one or more of viewer, support, treasury, compliance, admin")
	}
	return run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*operators.Operator, error) {
		if _, err := tx.OperatorByID(ctx, id); err != nil {
			return nil, err
		}
		if err := tx.SetOperatorRoles(ctx, id, roles); err != nil {
			return nil, err
		}
		o, err := tx.OperatorByID(ctx, id)
		if err != nil {
			return nil, err
		}
		return o, s.audited(ctx, tx, by, audit.OperatorRolesChanged, o.ID, operators.JoinRoles(roles))
	})
}

// MintFor resolves account id of kind owner to the way its keys are minted
// (apperr NotFound for no such account), outside any unit of work.
func (s *Service) MintFor(ctx context.Context, owner apikeys.Owner, id uuid.UUID) (func() (string, error), error) {
	return mintFor(ctx, owner, id, s.partners.Get, s.operators.Get)
}

// mintFor is MintFor reading the account with partner or operator: the
// services outside a unit of work, the unit's own reads inside one.
func mintFor(ctx context.Context, owner apikeys.Owner, id uuid.UUID,
	partner func(context.Context, uuid.UUID) (*partners.Partner, error),
	operator func(context.Context, uuid.UUID) (*operators.Operator, error)) (func() (string, error), error) {
	if owner == apikeys.Partner {
		p, err := partner(ctx, id)
		if err != nil {
			return nil, err
		}
		return func() (string, error) { return partners.NewKey(p.Environment) }, nil
	}
	if _, err := operator(ctx, id); err != nil {
		return nil, err
	}
	return operators.NewKey, nil
}

// mintIn is MintFor in the unit of work tx.
func mintIn(ctx context.Context, tx Tx, owner apikeys.Owner, id uuid.UUID) (func() (string, error), error) {
	return mintFor(ctx, owner, id, tx.PartnerByID, tx.OperatorByID)
}

// IssueKey adds a key to account id of kind owner.
func (s *Service) IssueKey(ctx context.Context, run uow.Runner[*apikeys.Issued, Tx], by actor.Actor, owner apikeys.Owner, id uuid.UUID) (*apikeys.Issued, error) {
	return run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*apikeys.Issued, error) {
		mint, err := mintIn(ctx, tx, owner, id)
		if err != nil {
			return nil, err
		}
		k, err := s.keys.Issue(ctx, tx, owner, id, mint, partners.HashKey)
		if err != nil {
			return nil, err
		}
		return k, s.audited(ctx, tx, by, audit.KeyCreated, k.Key.ID, k.Key.Prefix)
	})
}

// RollKey replaces key keyID of account id with a new one; the old key works for
// overlap more.
func (s *Service) RollKey(ctx context.Context, run uow.Runner[*apikeys.Issued, Tx], by actor.Actor, owner apikeys.Owner, id, keyID uuid.UUID, overlap time.Duration) (*apikeys.Issued, error) {
	return run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*apikeys.Issued, error) {
		mint, err := mintIn(ctx, tx, owner, id)
		if err != nil {
			return nil, err
		}
		k, err := s.keys.Roll(ctx, tx, owner, id, keyID, overlap, mint, partners.HashKey)
		if err != nil {
			return nil, err
		}
		s.forget(ctx, tx, owner, id, keyID)
		return k, s.audited(ctx, tx, by, audit.KeyRolled, keyID, k.Key.Prefix)
	})
}

// RevokeKey revokes key keyID of account id.
func (s *Service) RevokeKey(ctx context.Context, run uow.Runner[*apikeys.Key, Tx], by actor.Actor, owner apikeys.Owner, id, keyID uuid.UUID) (*apikeys.Key, error) {
	return run.Run(ctx, s.begin, func(ctx context.Context, tx Tx) (*apikeys.Key, error) {
		if _, err := mintIn(ctx, tx, owner, id); err != nil {
			return nil, err
		}
		k, err := s.keys.Revoke(ctx, tx, owner, id, keyID)
		if err != nil {
			return nil, err
		}
		s.forget(ctx, tx, owner, id, keyID)
		return k, s.audited(ctx, tx, by, audit.KeyRevoked, keyID, k.Prefix)
	})
}

// forget drops a partner key from this instance's cache once the change committed,
// so its new expiry or revocation holds here at once.
func (s *Service) forget(ctx context.Context, tx Tx, owner apikeys.Owner, id, keyID uuid.UUID) {
	if owner != apikeys.Partner {
		return // operator keys are not cached
	}
	if k, err := tx.APIKey(ctx, owner, id, keyID); err == nil {
		tx.AfterCommit(func() { s.partners.Forget(k.Hash) })
	}
}

// audited records an account or key action on subject by by (an operator, the
// command line, or a partner's user on the dashboard), and logs it once the
// change committed.
// Recorded writes the audit row of a change made outside the actions (a
// screening list imported, secrets rotated, with the partnerd command), with
// reference, in a unit of work of its own once the change is done.
func (s *Service) Recorded(ctx context.Context, by actor.Actor, a audit.Action, reference string) error {
	_, err := uow.Plain[struct{}, Tx]().Run(ctx, s.begin, func(ctx context.Context, tx Tx) (struct{}, error) {
		if s.audit == nil {
			return struct{}{}, nil
		}
		return struct{}{}, s.audit.Record(ctx, tx, by, audit.Entry{Action: a, Reference: &reference})
	})
	return err
}

func (s *Service) audited(ctx context.Context, tx Tx, by actor.Actor, a audit.Action, subject uuid.UUID, reference string) error {
	if s.audit != nil {
		if err := s.audit.Record(ctx, tx, by, audit.Entry{Action: a, SubjectID: &subject, Reference: &reference}); err != nil {
			return err
		}
	}
	tx.AfterCommit(func() {
		attrs := []any{"action", string(a), "subject_id", subject.String(), "reference", reference}
		if by.Kind == actor.PartnerUser {
			s.log.InfoContext(ctx, "partner user action", append([]any{"actor", string(audit.ByPartnerUser), "partner_user_id", by.ID.String()}, attrs...)...)
			return
		}
		s.log.InfoContext(ctx, "operator action", append([]any{"actor", string(audit.ActorOf(by.OperatorID())), "operator_id", by.OperatorID().String()}, attrs...)...)
	})
	return nil
}
