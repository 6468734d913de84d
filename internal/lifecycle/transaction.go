package lifecycle

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/quotes"
	"partnerd/internal/revenue"
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
	// Version increases with every change; updates are conditional on it, so of two
	// racing changes exactly one wins.
	Version int64
}

// Deposit is the on-chain deposit of a transaction.
type Deposit struct {
	ID                    string
	Status                string
	Confirmations         int
	RequiredConfirmations int
	// Hash is the chain transaction hash.
	Hash string
	// Amount is the token amount received.
	Amount      decimal.Decimal
	ReceivedAt  time.Time
	ConfirmedAt *time.Time
}

// Deposit statuses.
const (
	DepositStatusConfirming = "confirming"
	DepositStatusConfirmed  = "confirmed"
	DepositStatusUnderpaid  = "underpaid"
	DepositStatusFailed     = "failed"
	DepositStatusRefunded   = "refunded"
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

// Tx is the unit of work a change runs in (store.Tx implements it). Every write
// of this package goes through it, so none can happen outside a transaction; an
// event appended here is delivered (its job scheduled) exactly when it commits,
// and AfterCommit hooks run only then.
type Tx interface {
	QuoteByID(ctx context.Context, partnerID, id uuid.UUID) (*quotes.Quote, error)
	// MarkQuoteUsed sets used_at if unset and reports whether it did.
	MarkQuoteUsed(ctx context.Context, id uuid.UUID, at time.Time) (bool, error)
	// NextAddressIndex allocates the next derivation index of network.
	NextAddressIndex(ctx context.Context, network string) (uint32, error)
	// ReleaseAddressIndex hands back an index NextAddressIndex allocated in this
	// unit of work and that no transaction took, so the next creation uses it and a
	// failed request leaves no unused address behind.
	ReleaseAddressIndex(ctx context.Context, network string, index uint32) error
	// InsertTransaction inserts t; a duplicate reference is apperr DuplicateMerchantReference.
	InsertTransaction(ctx context.Context, t *Transaction) error
	InsertHistory(ctx context.Context, h *HistoryEntry) error
	// AppendEvent writes the outbox row and schedules its delivery.
	AppendEvent(ctx context.Context, e *Event) error
	// TransactionForUpdate returns transaction id of any partner, with its deposit.
	TransactionForUpdate(ctx context.Context, id uuid.UUID) (*Transaction, error)
	// UpdateTransaction writes t's status, updated_at and payout_settled_at and
	// bumps its version, if its version is still t.Version; it reports whether it did.
	UpdateTransaction(ctx context.Context, t *Transaction) (bool, error)
	// SaveDeposit inserts or updates the deposit of transaction id.
	SaveDeposit(ctx context.Context, id uuid.UUID, d *Deposit) error
	InsertRevenue(ctx context.Context, r *revenue.Row) error
	// PartnerRates returns the fee and share rates of a partner.
	PartnerRates(ctx context.Context, partnerID uuid.UUID) (fee, share decimal.Decimal, err error)
	// InsertFill records an operator's executed sale.
	InsertFill(ctx context.Context, f *Fill) error
	// ScheduleStep inserts the job that runs Engine.RunStep(id, step) at at.
	ScheduleStep(ctx context.Context, id uuid.UUID, step string, at time.Time) error
	// AfterCommit runs f once the unit of work has committed.
	AfterCommit(f func())
}

// Record writes the history entry of transition tr of t and, when tr has one, its
// event with t's snapshot as payload, in tx, the unit of work that changed t (with
// t already in its new state), so the three commit together.
func Record(ctx context.Context, tx Tx, t *Transaction, tr Transition, metadata map[string]any, at time.Time) error {
	if err := tx.InsertHistory(ctx, &HistoryEntry{
		TransactionID: t.ID, From: tr.From, To: tr.To, Reason: tr.Reason, Metadata: metadata, ChangedAt: at,
	}); err != nil {
		return err
	}
	if tr.Event == "" {
		return nil
	}
	ev := &Event{ID: uuid.New(), PartnerID: t.PartnerID, TransactionID: t.ID, Type: tr.Event, CreatedAt: at}
	payload, err := json.Marshal(Payload{ID: ev.ID, Type: string(ev.Type), CreatedAt: at, Data: t.Snapshot()})
	if err != nil {
		return err
	}
	ev.Payload = payload
	return tx.AppendEvent(ctx, ev)
}
