package lifecycle

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/audit"
	"partnerd/internal/idempotency"
)

// Transaction is one stablecoin-to-fiat transaction.
type Transaction struct {
	ID                uuid.UUID
	PartnerID         uuid.UUID
	MerchantReference string
	// ReferenceKey is ReferenceKey(MerchantReference), unique per partner.
	ReferenceKey   string
	MerchantID     *string
	TerminalID     *string
	SellerPhone    *string
	Token          string
	Network        string
	CryptoAmount   decimal.Decimal
	FiatAmount     decimal.Decimal
	Rate           decimal.Decimal
	QuoteID        *uuid.UUID
	DepositAddress string
	AddressIndex   uint32
	Status         Status
	CreatedAt      time.Time
	UpdatedAt      time.Time
	ExpiresAt      time.Time
	// Deposit is nil until a deposit is detected.
	Deposit *Deposit
	// PayoutSettledAt is when the fiat payout settled, after completion.
	PayoutSettledAt *time.Time
	// Screening is where the screening of its deposits' senders stands
	// (screening.go): nothing proceeds unless it allows.
	Screening Screening
	// RefundAddress is where a refund goes when the partner asks for one (given on
	// create or with the request: partner.go); nil when none was given.
	RefundAddress *string
	// RefundRequestedAt is when the partner asked for its short payment back.
	RefundRequestedAt *time.Time
	// Version increases with every change; updates are conditional on it, so of two
	// racing changes exactly one wins.
	Version int64
}

// Deposit is the on-chain deposit of a transaction: the total of the transfers
// counted toward it (payments.go has the rules).
type Deposit struct {
	// ID is the first counted transfer's id.
	ID     string
	Status string
	// Confirmations is the least of the transfers' confirmations.
	Confirmations         int
	RequiredConfirmations int
	// Hash is the chain transaction hash of the most recent counted transfer.
	Hash string
	// Amount is the total token amount received.
	Amount decimal.Decimal
	// ReceivedAt is when the first transfer was received.
	ReceivedAt  time.Time
	ConfirmedAt *time.Time
	// Transfers are the counted transfers, oldest first.
	Transfers []Transfer
}

// Transfer is one transfer counted toward a deposit.
type Transfer struct {
	ID       string
	Hash     string
	LogIndex int
	// From is the sender's address (where a refund goes); empty when unknown.
	From                  string
	Amount                decimal.Decimal
	Block                 int64
	Confirmations         int
	RequiredConfirmations int
	ReceivedAt            time.Time
	ConfirmedAt           *time.Time
}

// Confirmed reports whether the transfer is confirmed: it had its required
// confirmations while its block was final (ConfirmedAt is set then, and only then;
// a count alone is not enough on a node that reports a finalized block).
func (t *Transfer) Confirmed() bool { return t.ConfirmedAt != nil }

// Transfer returns the counted transfer id, or nil.
func (d *Deposit) Transfer(id string) *Transfer {
	for i := range d.Transfers {
		if d.Transfers[i].ID == id {
			return &d.Transfers[i]
		}
	}
	return nil
}

// sum recomputes the deposit's total, hash, id, time and confirmations from its transfers.
func (d *Deposit) sum() {
	d.Amount = decimal.Zero
	for i, tr := range d.Transfers {
		d.Amount = d.Amount.Add(tr.Amount)
		if i == 0 {
			d.ID, d.ReceivedAt, d.Confirmations = tr.ID, tr.ReceivedAt, tr.Confirmations
		}
		d.Confirmations = min(d.Confirmations, tr.Confirmations)
		d.Hash = tr.Hash
	}
}

// allConfirmed reports whether every counted transfer is confirmed.
func (d *Deposit) allConfirmed() bool {
	for i := range d.Transfers {
		if !d.Transfers[i].Confirmed() {
			return false
		}
	}
	return len(d.Transfers) > 0
}

// last is the most recent counted transfer.
func (d *Deposit) last() *Transfer { return &d.Transfers[len(d.Transfers)-1] }

// Deposit statuses.
const (
	// DepositStatusPartial: transfers received, the total still short.
	DepositStatusPartial    = "partial"
	DepositStatusConfirming = "confirming"
	DepositStatusConfirmed  = "confirmed"
	// DepositStatusUnderpaid: the transaction expired with a partial total.
	DepositStatusUnderpaid = "underpaid"
	DepositStatusFailed    = "failed"
	DepositStatusRefunded  = "refunded"
)

// HistoryEntry is one status change.
type HistoryEntry struct {
	TransactionID uuid.UUID
	From          Status // None for the creation entry
	To            Status
	Reason        string
	// Metadata holds facts of the change (deposit id, confirmations), or nil.
	Metadata  map[string]any
	ChangedAt time.Time
}

// Event is an outbox row: a webhook event with the exact payload to deliver.
type Event struct {
	ID            uuid.UUID
	PartnerID     uuid.UUID
	TransactionID uuid.UUID
	Type          EventType
	Payload       []byte
	CreatedAt     time.Time
}

// Recorder is what recording a transition needs of a unit of work (Record): its
// history entry and its event are written in it and commit with the change, and
// AfterCommit hooks run only then. Every unit of work that changes a
// transaction's status has it.
type Recorder interface {
	InsertHistory(ctx context.Context, h *HistoryEntry) error
	// AppendEvent writes the outbox row and schedules its delivery.
	AppendEvent(ctx context.Context, e *Event) error
	// AfterCommit runs f once the unit of work has committed.
	AfterCommit(f func())
}

// Tx is the unit of work a change of the engine runs in (store.Tx implements it).
// Every write of this package goes through it, so none can happen outside a
// transaction; an event appended here is delivered (its job scheduled) exactly
// when it commits. It holds only what the engine uses; creating a transaction
// (package transactions) asks its unit of work for quotes and addresses instead.
type Tx interface {
	Recorder
	// A keyed request's answer is stored in it (idempotency.Run).
	idempotency.Keeper
	// The refund tasks a change records or closes are written in it.
	TaskTx
	// The screenings of its deposits' senders too.
	ScreeningTx
	// TransactionForUpdate returns transaction id of any partner, with its deposit.
	TransactionForUpdate(ctx context.Context, id uuid.UUID) (*Transaction, error)
	// UpdateTransaction writes t's status, updated_at, payout_settled_at, amounts
	// and rate (an accepted short payment re-prices them), screening and refund
	// request, and bumps its version, if its
	// version is still t.Version; it reports whether it did.
	UpdateTransaction(ctx context.Context, t *Transaction) (bool, error)
	// SaveDeposit inserts or updates the deposit of transaction id with its transfers.
	SaveDeposit(ctx context.Context, id uuid.UUID, d *Deposit) error
	InsertRevenue(ctx context.Context, r *RevenueRow) error
	// PartnerRates returns the fee and share rates of a partner.
	PartnerRates(ctx context.Context, partnerID uuid.UUID) (fee, share decimal.Decimal, err error)
	// InsertFill records an operator's executed sale.
	InsertFill(ctx context.Context, f *Fill) error
	// InsertSystemPayout records a simulated or automatic payout as a payout of one
	// that no operator recorded (package batches lists it like any payout).
	InsertSystemPayout(ctx context.Context, p *SystemPayout) error
	// ScheduleStep inserts the job that runs Engine.RunStep(id, step) at at.
	ScheduleStep(ctx context.Context, id uuid.UUID, step string, at time.Time) error
	// A partner user's change made through a use case on the engine (the
	// sandbox's simulator) is audited in the unit of work that makes it.
	audit.Writer
}

// Record writes the history entry of transition tr of t and, when tr has one, its
// event with t's snapshot as payload, in tx, the unit of work that changed t (with
// t already in its new state), so the three commit together.
func Record(ctx context.Context, tx Recorder, t *Transaction, tr Transition, metadata map[string]any, at time.Time) error {
	return record(ctx, tx, t, step{tr: tr, meta: metadata}, at)
}

// record is Record of one step, whose payout facts (payout.settled only) join the
// event's payload.
func record(ctx context.Context, tx Recorder, t *Transaction, s step, at time.Time) error {
	tr, metadata := s.tr, s.meta
	if err := tx.InsertHistory(ctx, &HistoryEntry{
		TransactionID: t.ID, From: tr.From, To: tr.To, Reason: tr.Reason, Metadata: metadata, ChangedAt: at,
	}); err != nil {
		return err
	}
	if tr.Event == "" {
		return nil
	}
	ev := &Event{ID: uuid.New(), PartnerID: t.PartnerID, TransactionID: t.ID, Type: tr.Event, CreatedAt: at}
	payload, err := json.Marshal(Payload{ID: ev.ID, Type: string(ev.Type), CreatedAt: at, Data: t.Snapshot(), Payout: s.payout})
	if err != nil {
		return err
	}
	ev.Payload = payload
	return tx.AppendEvent(ctx, ev)
}
