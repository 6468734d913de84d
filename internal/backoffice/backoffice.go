// Package backoffice assembles what the back office reads beyond a single table:
// a transaction's case file (its deposits with their senders, fill, settlement,
// payout and history with the operator of each action) and the overview (the
// queue's stages with counts and totals, the chain watcher's progress, the refund
// work and the failing webhook endpoints). The operator API and the console both
// read through it; it holds no SQL.
package backoffice

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/batches"
	"partnerd/internal/lifecycle"
	"partnerd/internal/transactions"
)

// DepositTransfer is one transfer seen to a deposit address.
type DepositTransfer struct {
	TxHash      string
	LogIndex    *int
	FromAddress *string
	Amount      decimal.Decimal
	BlockNumber *int64
	State       string
	SeenAt      time.Time
}

// NetworkProgress is how far the chain watcher read one network; nil is unknown.
type NetworkProgress struct {
	Network   string
	Head      *int64
	Scanned   *int64
	Finalized *int64
}

// Lag is Head − Scanned, or nil when either is unknown.
func (n NetworkProgress) Lag() *int64 {
	if n.Head == nil || n.Scanned == nil {
		return nil
	}
	l := *n.Head - *n.Scanned
	return &l
}

// FailingWebhook is a partner whose enabled endpoint has failing events.
type FailingWebhook struct {
	PartnerID     uuid.UUID
	PartnerName   string
	URL           string
	FailingEvents int
}

// Store is what the back office reads.
type Store interface {
	Transaction(ctx context.Context, id uuid.UUID) (*lifecycle.Transaction, error)
	History(ctx context.Context, id uuid.UUID) ([]lifecycle.HistoryEntry, error)
	FillsOf(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*lifecycle.Fill, error)
	// DepositTransfers returns the chain transfers of transaction id, oldest first.
	DepositTransfers(ctx context.Context, id uuid.UUID) ([]DepositTransfer, error)
	transactions.StageTotaller
	// ScannedBlocks returns each network's last processed block.
	ScannedBlocks(ctx context.Context) (map[string]int64, error)
	// OpenUnmatchedDeposits counts the unmatched deposits still open.
	OpenUnmatchedDeposits(ctx context.Context) (int, error)
	// FailingWebhooks lists partners whose enabled endpoint has events that failed
	// or are retrying after a failed attempt.
	FailingWebhooks(ctx context.Context) ([]FailingWebhook, error)
}

// ChainProgress tells the chain watcher's last reading of a network: its head and
// finalized blocks (nil when unknown).
type ChainProgress interface {
	Progress(network string) (head, finalized *int64)
}

// Service reads for the back office.
type Service struct {
	store    Store
	stages   *transactions.StageLister
	batches  *batches.Service
	networks []string
	progress ChainProgress
}

// New returns a Service reporting on networks; progress (may be nil) gives the
// overview each network's head and finalized blocks.
func New(store Store, stages *transactions.StageLister, b *batches.Service, networks []string, progress ChainProgress) *Service {
	return &Service{store: store, stages: stages, batches: b, networks: networks, progress: progress}
}

// Action is one status change with who made it.
type Action struct {
	lifecycle.HistoryEntry
	// OperatorID is the operator who made the change (nil: the system).
	OperatorID *uuid.UUID
	// Reference is the reference, reason or chain hash the operator gave.
	Reference *string
}

// Step is a settlement or payout as recorded in the history.
type Step struct {
	Reference  *string
	OperatorID *uuid.UUID
	At         time.Time
}

// Case is a transaction's case file.
type Case struct {
	Transaction *lifecycle.Transaction
	Deposits    []DepositTransfer
	Fill        *lifecycle.Fill
	Settlement  *Step
	Payout      *Step
	// PayoutBatch is the batch payout that settled it, if any.
	PayoutBatch *batches.Batch
	History     []Action
}

// Case returns transaction id's case file. Errors: NotFound.
func (s *Service) Case(ctx context.Context, id uuid.UUID) (*Case, error) {
	t, err := s.store.Transaction(ctx, id)
	if err != nil {
		return nil, err
	}
	c := &Case{Transaction: t}
	if c.Deposits, err = s.store.DepositTransfers(ctx, id); err != nil {
		return nil, err
	}
	if len(c.Deposits) == 0 && t.Deposit != nil {
		c.Deposits = []DepositTransfer{{TxHash: t.Deposit.Hash, Amount: t.Deposit.Amount, State: t.Deposit.Status, SeenAt: t.Deposit.ReceivedAt}}
	}
	fills, err := s.store.FillsOf(ctx, []uuid.UUID{id})
	if err != nil {
		return nil, err
	}
	c.Fill = fills[id]
	hist, err := s.store.History(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, h := range hist {
		a := Action{HistoryEntry: h}
		if v, ok := h.Metadata["operator_id"].(string); ok {
			if oid, err := uuid.Parse(v); err == nil {
				a.OperatorID = &oid
			}
		}
		for _, k := range []string{"reference", "reason"} {
			if v, ok := h.Metadata[k].(string); ok {
				a.Reference = &v
				break
			}
		}
		c.History = append(c.History, a)
		step := &Step{Reference: a.Reference, OperatorID: a.OperatorID, At: h.ChangedAt}
		switch h.Reason {
		case "order:settled":
			c.Settlement = step
		case "payout:settled":
			c.Payout = step
		}
	}
	if c.Payout != nil && s.batches != nil {
		if c.PayoutBatch, err = s.batches.Of(ctx, batches.Payout, id); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Overview is the back office at a glance.
type Overview struct {
	Stages   []transactions.StageTotal
	Networks []NetworkProgress
	// OpenRefundTasks are the refunds waiting for an operator: failed transactions
	// and open unmatched deposits.
	OpenRefundTasks       int
	OpenUnmatchedDeposits int
	FailingWebhooks       []FailingWebhook
}

// Overview counts everything now.
func (s *Service) Overview(ctx context.Context) (*Overview, error) {
	o := &Overview{}
	var err error
	if o.Stages, err = s.stages.Totals(ctx, s.store); err != nil {
		return nil, err
	}
	scanned, err := s.store.ScannedBlocks(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range s.networks {
		p := NetworkProgress{Network: n}
		if b, ok := scanned[n]; ok {
			p.Scanned = &b
		}
		if s.progress != nil {
			p.Head, p.Finalized = s.progress.Progress(n)
		}
		o.Networks = append(o.Networks, p)
	}
	if o.OpenUnmatchedDeposits, err = s.store.OpenUnmatchedDeposits(ctx); err != nil {
		return nil, err
	}
	o.OpenRefundTasks = o.OpenUnmatchedDeposits
	for _, st := range o.Stages {
		if st.Stage == transactions.StageFailed {
			o.OpenRefundTasks += st.Count
		}
	}
	if o.FailingWebhooks, err = s.store.FailingWebhooks(ctx); err != nil {
		return nil, err
	}
	return o, nil
}
