// Package refunds keeps the operators' refund tasks: money to give back or decide
// on. The first kind is the unmatched deposit: a transfer to an address no
// transaction owns, or to the address of a transaction that no longer takes
// deposits. The others come from the payment rules of package lifecycle: the
// excess of an overpaid transaction, the partial total of one that expired short,
// and dust below the minimum deposit. The chain watcher and the lifecycle record
// them (Record, idempotent per kind and transfer); an operator lists them and
// resolves each one, by refunding it on chain or crediting it another way.
package refunds

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
)

// The refund tasks are the lifecycle's records (lifecycle.RefundTask), written
// where it finds the money; this package lists and resolves them.

// Filter selects refund tasks: Open (or resolved), and optionally one kind, partner
// and network.
type Filter struct {
	Open bool
	// Resolved narrows the resolved tasks to one resolution (the unmatched view's
	// status filter); empty for both.
	Resolved  lifecycle.TaskStatus
	Kind      *lifecycle.TaskKind
	PartnerID *uuid.UUID
	Network   *string
}

// Store persists refund tasks.
type Store interface {
	// InsertUnmatchedDeposit inserts d unless a task with its (kind, network,
	// tx_hash, log_index) exists, and returns the stored one.
	InsertUnmatchedDeposit(ctx context.Context, d *lifecycle.RefundTask) (*lifecycle.RefundTask, error)
	// UnmatchedDeposit returns task id, or apperr NotFound.
	UnmatchedDeposit(ctx context.Context, id uuid.UUID) (*lifecycle.RefundTask, error)
	// ListRefundTasks returns up to limit tasks matching f, newest first
	// (created_at, id descending), after pos when set.
	ListRefundTasks(ctx context.Context, f Filter, after *cursor.Position, limit int) ([]*lifecycle.RefundTask, error)
	// DeleteOpenUnmatchedDeposit deletes the transfer's open unmatched or dust task.
	DeleteOpenUnmatchedDeposit(ctx context.Context, network, txHash string, logIndex int) error
	// DeleteOpenRefundTasks deletes transaction id's open tasks of kind.
	DeleteOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind lifecycle.TaskKind) error
	// ResolveOpenRefundTasks closes transaction id's open tasks of kind with r.
	ResolveOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind lifecycle.TaskKind, r lifecycle.TaskResolution) error
}

// ResolveTx is the unit of work an operator closes a task in (store.Tx), with
// the action's audit row: the task is read and closed as that unit sees it.
type ResolveTx interface {
	// UnmatchedDeposit returns task id, or apperr NotFound.
	UnmatchedDeposit(ctx context.Context, id uuid.UUID) (*lifecycle.RefundTask, error)
	// ResolveUnmatchedDeposit closes task id if it is still open, reporting whether it did.
	ResolveUnmatchedDeposit(ctx context.Context, id uuid.UUID, r lifecycle.TaskResolution) (bool, error)
}

// Service records, lists and resolves unmatched deposits.
type Service struct {
	store Store
	// codec signs the list cursors.
	codec *cursor.Codec
	// now dates a recorded task and an operator's resolution.
	now func() time.Time
}

// NewService returns a Service signing list cursors with codec.
func NewService(store Store, codec *cursor.Codec, now func() time.Time) *Service {
	return &Service{store: store, codec: codec, now: now}
}

// Record stores an unmatched transfer as open and returns it; recording the same
// transfer again returns the first record unchanged (the watcher may rescan blocks).
func (s *Service) Record(ctx context.Context, tx lifecycle.TaskTx, d lifecycle.RefundTask) (*lifecycle.RefundTask, error) {
	d.ID = uuid.New()
	if d.Kind == "" {
		d.Kind = lifecycle.TaskUnmatched
	}
	d.Status = lifecycle.TaskOpen
	d.CreatedAt = s.now()
	d.ResolutionTxHash, d.ResolutionNote, d.ResolvedBy, d.ResolvedAt = nil, nil, nil, nil
	return tx.InsertUnmatchedDeposit(ctx, &d)
}

// Forget removes the open record of a transfer whose block was reorganised away
// (nothing arrived); a resolved one is kept, for its audit trail.
func (s *Service) Forget(ctx context.Context, tx lifecycle.TaskTx, network, txHash string, logIndex int) error {
	return tx.DeleteOpenUnmatchedDeposit(ctx, network, txHash, logIndex)
}

// DropOpen deletes transaction id's open task of kind: one superseded by a newer
// record of the same money.
func (s *Service) DropOpen(ctx context.Context, tx lifecycle.TaskTx, transactionID uuid.UUID, kind lifecycle.TaskKind) error {
	return tx.DeleteOpenRefundTasks(ctx, transactionID, kind)
}

// CloseOpen resolves transaction id's open tasks of kind with the transaction: as
// Refunded in chain transaction txHash when it is given, else as Credited (the
// money stayed with the transaction), with note, by operatorID when an operator
// decided (nil: the system).
func (s *Service) CloseOpen(ctx context.Context, tx lifecycle.TaskTx, transactionID uuid.UUID, kind lifecycle.TaskKind, operatorID *uuid.UUID, txHash, note string) error {
	r := lifecycle.TaskResolution{Status: lifecycle.TaskCredited, Note: &note, At: s.now()}
	if txHash != "" {
		r.Status, r.TxHash = lifecycle.TaskRefunded, &txHash
	}
	if operatorID != nil {
		r.OperatorID = *operatorID
	}
	return tx.ResolveOpenRefundTasks(ctx, transactionID, kind, r)
}

// Direct sets where transaction id's open tasks of kind are to be refunded: the
// address its partner asked for (lifecycle.Engine.RequestRefund).
func (s *Service) Direct(ctx context.Context, tx lifecycle.TaskTx, transactionID uuid.UUID, kind lifecycle.TaskKind, address string) error {
	return tx.DirectOpenRefundTasks(ctx, transactionID, kind, address)
}

// Page is one page of unmatched deposits.
type Page = cursor.Page[*lifecycle.RefundTask]

// List returns a page of the unmatched deposits in status, newest first (open, or
// resolved as refunded or credited). Errors: InvalidCursor.
func (s *Service) List(ctx context.Context, status lifecycle.TaskStatus, limit int, after string) (*Page, error) {
	kind := lifecycle.TaskUnmatched
	return s.list(ctx, fmt.Sprintf(`{"list":"unmatched_deposits","status":%q}`, status),
		Filter{Open: status == lifecycle.TaskOpen, Kind: &kind, Resolved: status}, limit, after)
}

// Tasks returns a page of the refund tasks f selects, newest first. Errors: InvalidCursor.
func (s *Service) Tasks(ctx context.Context, f Filter, limit int, after string) (*Page, error) {
	scope := cursor.Scope(map[string]any{"list": "refund_tasks", "open": f.Open, "kind": f.Kind, "partner_id": f.PartnerID, "network": f.Network})
	return s.list(ctx, scope, f, limit, after)
}

func (s *Service) list(ctx context.Context, scope string, f Filter, limit int, after string) (*Page, error) {
	return cursor.Read(s.codec, scope, after, limit, func(pos *cursor.Position, n int) ([]*lifecycle.RefundTask, error) {
		return s.store.ListRefundTasks(ctx, f, pos, n)
	}, func(d *lifecycle.RefundTask) cursor.Position {
		return cursor.Position{Time: d.CreatedAt, ID: d.ID.String()}
	})
}

// Task returns refund task id. Errors: NotFound.
func (s *Service) Task(ctx context.Context, id uuid.UUID) (*lifecycle.RefundTask, error) {
	return s.store.UnmatchedDeposit(ctx, id)
}

// Resolve closes an open task of any kind as refunded (txHash required: the refund's chain
// transaction) or credited (note required). Errors: NotFound, InvalidRequest,
// InvalidStateTransition when it is no longer open. The task is closed in tx.
func (s *Service) Resolve(ctx context.Context, tx ResolveTx, id uuid.UUID, operatorID uuid.UUID, action lifecycle.TaskStatus, txHash, note *string) (*lifecycle.RefundTask, error) {
	return s.resolve(ctx, tx, id, nil, operatorID, action, txHash, note)
}

// ResolveUnmatched is Resolve for unmatched deposits only: a task of another kind
// is NotFound (the unmatched deposits' view).
func (s *Service) ResolveUnmatched(ctx context.Context, tx ResolveTx, id uuid.UUID, operatorID uuid.UUID, action lifecycle.TaskStatus, txHash, note *string) (*lifecycle.RefundTask, error) {
	kind := lifecycle.TaskUnmatched
	return s.resolve(ctx, tx, id, &kind, operatorID, action, txHash, note)
}

func (s *Service) resolve(ctx context.Context, tx ResolveTx, id uuid.UUID, kind *lifecycle.TaskKind, operatorID uuid.UUID, action lifecycle.TaskStatus, txHash, note *string) (*lifecycle.RefundTask, error) {
	switch action {
	case lifecycle.TaskRefunded:
		if txHash == nil {
			return nil, apperr.Field(apperr.InvalidRequest, "A refund needs the refund's chain transaction.", "/tx_hash", "is required when action is refunded")
		}
	case lifecycle.TaskCredited:
		if note == nil {
			return nil, apperr.Field(apperr.InvalidRequest, "A credit needs a note saying how it was credited.", "/note", "is required when action is credited")
		}
	default:
		return nil, apperr.Field(apperr.InvalidRequest, "Unknown action.", "/action", "refunded or credited")
	}
	d, err := tx.UnmatchedDeposit(ctx, id)
	if err != nil {
		return nil, err
	}
	if kind != nil && d.Kind != *kind {
		return nil, apperr.New(apperr.NotFound, "The unmatched deposit was not found.")
	}
	if d.Status != lifecycle.TaskOpen {
		return nil, apperr.New(apperr.InvalidStateTransition, fmt.Sprintf("The deposit is already %s.", d.Status))
	}
	ok, err := tx.ResolveUnmatchedDeposit(ctx, id, lifecycle.TaskResolution{Status: action, TxHash: txHash, Note: note, OperatorID: operatorID, At: s.now()})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.New(apperr.InvalidStateTransition, "The deposit was resolved concurrently.")
	}
	return tx.UnmatchedDeposit(ctx, id)
}
