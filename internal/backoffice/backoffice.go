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

	"partnerd/internal/backoffice/batches"
	"partnerd/internal/chain"
	"partnerd/internal/lifecycle"
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

// NetworkProgress is how far the chain watcher read one network, as stored in the
// database by the instance scanning it, so every instance shows the same; nil is
// unknown (never read, or the network's watcher is off).
type NetworkProgress struct {
	Network string
	// Scanned is the cursor: the last block fully processed, moved at ScannedAt.
	Scanned   *int64
	ScannedAt *time.Time
	// Reading is what the scanning instance last stored of its node (nil: nothing
	// stored yet).
	Reading *ChainReading
}

// Lag is the reading's head − Scanned (never negative: a head read before the
// cursor moved past it is no lag), or nil when either is unknown.
func (n NetworkProgress) Lag() *int64 {
	if n.Reading == nil || n.Reading.Head == nil || n.Scanned == nil {
		return nil
	}
	l := max(*n.Reading.Head-*n.Scanned, 0)
	return &l
}

// ChainReading is what the instance holding a network's scanner lock last read of
// its node and stored: written by that instance only, read by every instance. Its
// times are when each value was read, so an operator sees how old it is.
type ChainReading struct {
	Network string
	// Head is the newest block the node reported, at HeadAt.
	Head   *int64
	HeadAt *time.Time
	// Finalized is the node's finalized block, at FinalizedAt (nil for a node
	// without the finalized tag).
	Finalized   *int64
	FinalizedAt *time.Time
	// Finality is the watcher's rule (chain.Finality*), in force since
	// FinalitySince; "" when not reported yet.
	Finality      string
	FinalitySince *time.Time
	// Providers is each JSON-RPC provider's state (empty until reported).
	Providers []chain.ProviderState
	// UpdatedAt is when the scanning instance last wrote the reading.
	UpdatedAt time.Time
}

// FailingWebhook is a partner whose enabled endpoint has failing events.
type FailingWebhook struct {
	PartnerID     uuid.UUID
	PartnerName   string
	URL           string
	FailingEvents int
	// LastStatus is the HTTP status of the last failed attempt; nil when the
	// receiver gave no answer (LastError says why).
	LastStatus *int
	// LastError is why the last failed attempt got no answer, in a few words;
	// nil when it answered.
	LastError *string
	// FailingSince is the first failed attempt after the endpoint's last
	// success; nil when none failed since (events given up on before it).
	FailingSince *time.Time
}

// AuditParty names who an audit entry concerns, for operators to read names, not
// ids.
type AuditParty struct {
	// PartnerID is the partner the action concerns: its transaction's, refund
	// task's or batch payout's, the partner acted on, or the owner of the key acted
	// on (nil for a batch fill or an operator account).
	PartnerID   *uuid.UUID
	PartnerName *string
	// SubjectName is the name of the partner or operator acted on, or the prefix
	// of the key acted on.
	SubjectName *string
}

// AuditParties returns the parties of the audit entries ids (entries with none
// are absent).
func (s *Service) AuditParties(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]AuditParty, error) {
	return s.store.AuditParties(ctx, ids)
}

// Store is what the back office reads.
type Store interface {
	Transaction(ctx context.Context, id uuid.UUID) (*lifecycle.Transaction, error)
	History(ctx context.Context, id uuid.UUID) ([]lifecycle.HistoryEntry, error)
	FillsOf(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*lifecycle.Fill, error)
	// DepositTransfers returns the chain transfers of transaction id, oldest first.
	DepositTransfers(ctx context.Context, id uuid.UUID) ([]DepositTransfer, error)
	StageTotaller
	// ChainProgress returns each network's cursor and stored reading (networks
	// never scanned nor read are absent).
	ChainProgress(ctx context.Context) (map[string]NetworkProgress, error)
	// OpenRefundTasksByKind counts the open refund tasks of each kind (lifecycle.TaskKind
	// values; kinds with none are absent).
	OpenRefundTasksByKind(ctx context.Context) (map[string]int, error)
	// AuditParties returns, for each of the audit entries ids, the partner it
	// concerns and its subject's name (entries with neither are absent).
	AuditParties(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]AuditParty, error)
	// FailingWebhooks lists partners whose enabled endpoint has events that failed
	// or are retrying after a failed attempt.
	FailingWebhooks(ctx context.Context) ([]FailingWebhook, error)
	// CountInScreening counts the transactions in each of states (states with none
	// are absent).
	CountInScreening(ctx context.Context, states []lifecycle.Screening) (map[lifecycle.Screening]int, error)
}

// Service reads for the back office.
type Service struct {
	store    Store
	stages   *StageLister
	batches  *batches.Service
	networks []string
}

// New returns a Service reporting on networks.
func New(store Store, stages *StageLister, b *batches.Service, networks []string) *Service {
	return &Service{store: store, stages: stages, batches: b, networks: networks}
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
		c.Deposits = countedTransfers(t.Deposit)
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

// countedTransfers lists a deposit recorded without chain transfers (the sandbox
// simulator) as the partner API does: each counted transfer, not their total.
func countedTransfers(d *lifecycle.Deposit) []DepositTransfer {
	out := make([]DepositTransfer, len(d.Transfers))
	for i, tr := range d.Transfers {
		x := DepositTransfer{TxHash: tr.Hash, LogIndex: &tr.LogIndex, Amount: tr.Amount, State: "pending", SeenAt: tr.ReceivedAt}
		if tr.Confirmed() {
			x.State = "confirmed"
		}
		if tr.From != "" {
			x.FromAddress = &tr.From
		}
		if tr.Block > 0 {
			x.BlockNumber = &tr.Block
		}
		out[i] = x
	}
	return out
}

// Overview is the back office at a glance.
type Overview struct {
	Stages   []StageTotal
	Networks []NetworkProgress
	// RefundWork is the refund work waiting for an operator, by kind.
	RefundWork      RefundWork
	FailingWebhooks []FailingWebhook
	// Screening counts the transactions whose funds wait on screening.
	Screening ScreeningWork
}

// ScreeningWork counts the transactions whose funds wait on screening, by state:
// held (an operator decides), unknown (a screener cannot answer) and pending
// (being asked).
type ScreeningWork struct {
	Held, Unknown, Pending int
}

// WaitingScreening lists the screening states the overview counts.
var WaitingScreening = []lifecycle.Screening{lifecycle.ScreeningHeld, lifecycle.ScreeningUnknown, lifecycle.ScreeningPending}

// RefundWork counts the refund work by kind. Each count is the length of the list
// an operator opens from it: the open refund tasks of that kind, and the
// transactions in stage failed.
type RefundWork struct {
	Unmatched, Excess, Short, Dust int
	// Failed is the failed stage's count (transactions to refund or settle by hand).
	Failed int
}

// Total is every count's sum.
func (w RefundWork) Total() int { return w.Unmatched + w.Excess + w.Short + w.Dust + w.Failed }

// Overview counts everything now.
func (s *Service) Overview(ctx context.Context) (*Overview, error) {
	o := &Overview{}
	var err error
	if o.Stages, err = s.stages.Totals(ctx, s.store); err != nil {
		return nil, err
	}
	progress, err := s.store.ChainProgress(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range s.networks {
		p := progress[n]
		p.Network = n
		o.Networks = append(o.Networks, p)
	}
	kinds, err := s.store.OpenRefundTasksByKind(ctx)
	if err != nil {
		return nil, err
	}
	o.RefundWork = RefundWork{Unmatched: kinds[string(lifecycle.TaskUnmatched)], Excess: kinds[string(lifecycle.TaskExcess)],
		Short: kinds[string(lifecycle.TaskShort)], Dust: kinds[string(lifecycle.TaskDust)]}
	for _, st := range o.Stages {
		if st.Stage == StageFailed {
			o.RefundWork.Failed = st.Count
		}
	}
	if o.FailingWebhooks, err = s.store.FailingWebhooks(ctx); err != nil {
		return nil, err
	}
	waiting, err := s.store.CountInScreening(ctx, WaitingScreening)
	if err != nil {
		return nil, err
	}
	o.Screening = ScreeningWork{Held: waiting[lifecycle.ScreeningHeld], Unknown: waiting[lifecycle.ScreeningUnknown],
		Pending: waiting[lifecycle.ScreeningPending]}
	return o, nil
}
