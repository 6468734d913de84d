package lifecycle

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// This file holds the records the lifecycle writes for the back office: the
// refund tasks its payment rules find (package backoffice/refunds lists and
// resolves them) and the revenue rows its settlement books (package
// backoffice/revenue pages through them). They are defined here, with the rules
// that make them, so the lifecycle never imports the back office above it.

// TaskStatus is where a refund task stands.
type TaskStatus string

// The statuses: open until an operator resolves it as refunded or credited.
const (
	TaskOpen     TaskStatus = "open"
	TaskRefunded TaskStatus = "refunded"
	TaskCredited TaskStatus = "credited"
)

// TaskKind is what a refund task is for.
type TaskKind string

// The kinds of refund task.
const (
	// TaskUnmatched is a transfer that belongs to no open transaction.
	TaskUnmatched TaskKind = "unmatched"
	// TaskExcess is what an overpaid transaction received above its expected amount.
	TaskExcess TaskKind = "excess"
	// TaskShort is the partial total of a transaction that expired short.
	TaskShort TaskKind = "short"
	// TaskDust is a transfer below the minimum deposit, which never counts.
	TaskDust TaskKind = "dust"
)

// RefundTask is one refund task (an unmatched deposit when Kind is TaskUnmatched).
// (Kind, Network, TxHash, LogIndex) identify it: for Excess and Short the transfer
// is the one that took the total over, or the last one counted.
type RefundTask struct {
	ID       uuid.UUID
	Kind     TaskKind
	Network  string
	TxHash   string
	LogIndex int
	// FromAddress is where the money came from (where a refund goes unless
	// RefundTo names another address).
	FromAddress string
	ToAddress   string
	// RefundTo is where the partner asked the refund to go; nil: to FromAddress.
	RefundTo *string
	// Amount is the token amount; RawAmount the on-chain integer in the token's
	// smallest unit, as the log carried it.
	Amount      decimal.Decimal
	RawAmount   string
	BlockNumber int64
	// TransactionID is the transaction owning ToAddress, when one does.
	TransactionID *uuid.UUID
	// PartnerID is that transaction's partner.
	PartnerID *uuid.UUID
	Status    TaskStatus
	// Resolution: the refund's chain hash, the operator's note, who and when.
	ResolutionTxHash *string
	ResolutionNote   *string
	ResolvedBy       *uuid.UUID
	ResolvedAt       *time.Time
	CreatedAt        time.Time
}

// TaskResolution is how an operator closed a refund task.
type TaskResolution struct {
	Status     TaskStatus // TaskRefunded or TaskCredited
	TxHash     *string
	Note       *string
	OperatorID uuid.UUID
	At         time.Time
}

// TaskTx is where a refund task is recorded or closed: the unit of work of the change that
// finds the money (the lifecycle's, the deposit watcher's), which store.Tx is; the
// Store itself for a caller outside any.
type TaskTx interface {
	InsertUnmatchedDeposit(ctx context.Context, d *RefundTask) (*RefundTask, error)
	DeleteOpenUnmatchedDeposit(ctx context.Context, network, txHash string, logIndex int) error
	DeleteOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind TaskKind) error
	ResolveOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind TaskKind, r TaskResolution) error
	// DirectOpenRefundTasks sets where transaction id's open tasks of kind are refunded.
	DirectOpenRefundTasks(ctx context.Context, transactionID uuid.UUID, kind TaskKind, address string) error
}

// RevenueRow is a completed transaction's row in its partner's revenue ledger,
// booked by the settlement in its unit of work.
type RevenueRow struct {
	TransactionID     uuid.UUID
	PartnerID         uuid.UUID
	MerchantReference string
	MerchantID        *string
	TerminalID        *string
	Network           string
	Token             string
	CryptoAmount      decimal.Decimal
	FiatAmount        decimal.Decimal
	PlatformFee       decimal.Decimal
	Share             decimal.Decimal
	// Shortfall is what the deposit fell short of CryptoAmount by, accepted within
	// the underpayment tolerance (zero when paid in full).
	Shortfall decimal.Decimal
	TS        time.Time
}
