package lifecycle

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/google/uuid"

	"partnerd/internal/pricing/money"
)

// Snapshot is the detailed transaction snapshot as partners see it: the
// TransactionDetail schema of openapi/partner.yaml, field for field. It is what a
// webhook event carries, frozen when the event is written.
type Snapshot struct {
	ID                    uuid.UUID `json:"id"`
	Status                string    `json:"status"`
	MerchantReference     string    `json:"merchant_reference"`
	MerchantID            *string   `json:"merchant_id"`
	TerminalID            *string   `json:"terminal_id"`
	Network               string    `json:"network"`
	CryptoCurrency        string    `json:"crypto_currency"`
	CryptoAmount          string    `json:"crypto_amount"`
	Amount                string    `json:"amount"`
	Rate                  string    `json:"rate"`
	DepositAddress        string    `json:"deposit_address"`
	ExpiresAt             time.Time `json:"expires_at"`
	CreatedAt             time.Time `json:"created_at"`
	UpdatedAt             time.Time `json:"updated_at"`
	DepositID             *string   `json:"deposit_id"`
	DepositStatus         *string   `json:"deposit_status"`
	Confirmations         *int      `json:"confirmations"`
	RequiredConfirmations *int      `json:"required_confirmations"`
	// AwaitingFinality: the deposit has its required confirmations but its blocks
	// are not final yet (the network's finality rule holds it back).
	AwaitingFinality bool       `json:"awaiting_finality"`
	ReceivedAt       *time.Time `json:"received_at"`
	ConfirmedAt      *time.Time `json:"confirmed_at"`
	DepositAmount    *string    `json:"deposit_amount"`
	DepositTxHash    *string    `json:"deposit_tx_hash"`
	// Deposits are the counted transfers (never null: empty without a deposit).
	Deposits []SnapshotTransfer `json:"deposits"`
	// UnderReview: the funds wait on a review before the sale (never why).
	UnderReview bool `json:"under_review"`
	// RefundAddress, ActionRequired, AllowedActions and RefundRequestedAt are the
	// partner's decisions (partner.go).
	// RefundAddress and RefundRequestedAt are left out when unset, as the API's
	// answers leave them (optional fields of TransactionDetail).
	RefundAddress     *string         `json:"refund_address,omitempty"`
	ActionRequired    bool            `json:"action_required"`
	AllowedActions    []PartnerAction `json:"allowed_actions"`
	RefundRequestedAt *time.Time      `json:"refund_requested_at,omitempty"`
}

// SnapshotTransfer is one counted transfer: the DepositTransfer schema.
type SnapshotTransfer struct {
	ID                    string     `json:"id"`
	TxHash                string     `json:"tx_hash"`
	LogIndex              int        `json:"log_index"`
	Amount                string     `json:"amount"`
	Block                 int64      `json:"block"`
	Confirmations         int        `json:"confirmations"`
	RequiredConfirmations int        `json:"required_confirmations"`
	ReceivedAt            time.Time  `json:"received_at"`
	ConfirmedAt           *time.Time `json:"confirmed_at"`
}

// Payload is a webhook body: the WebhookPayload schema.
type Payload struct {
	ID        uuid.UUID `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	Data      Snapshot  `json:"data"`
	// Payout is present on payout.settled events only.
	Payout *PayoutFacts `json:"payout,omitempty"`
}

// PayoutFacts is the NGN payout that settled a transaction, as its payout.settled
// event tells the partner: the payout's id, reference and total, the bank transfer
// the operators recorded (for several transactions or for this one alone) or the
// payout of one a simulated or automatic payout is (the transaction's own amount).
type PayoutFacts struct {
	PayoutID  *uuid.UUID `json:"payout_id"`
	Reference *string    `json:"reference"`
	Amount    string     `json:"amount"`
}

// PayoutBatch is the batch payout a transaction's payout belongs to.
type PayoutBatch struct {
	ID     uuid.UUID
	Amount decimal.Decimal
}

// SystemPayout is the payout of one a simulated or automatic payout records (no
// operator's bank transfer: the service's own), so the partner finds it among its
// payouts like a production one: the transaction's amounts, a reference of
// SystemPayoutReference, dated when the payout settled.
type SystemPayout struct {
	ID            uuid.UUID
	PartnerID     uuid.UUID
	TransactionID uuid.UUID
	Reference     string
	FiatAmount    decimal.Decimal
	CryptoAmount  decimal.Decimal
	CreatedAt     time.Time
}

// SystemPayoutReference is the reference of system payout id: SIM- and the first
// 8 hex digits of its id.
func SystemPayoutReference(id uuid.UUID) string {
	return "SIM-" + id.String()[:8]
}

// Snapshot returns t as partners see it, amounts formatted by the money rules.
func (t *Transaction) Snapshot() Snapshot {
	s := Snapshot{
		ID:                t.ID,
		Status:            string(t.Status),
		MerchantReference: t.MerchantReference,
		MerchantID:        t.MerchantID,
		TerminalID:        t.TerminalID,
		Network:           t.Network,
		CryptoCurrency:    t.Token,
		CryptoAmount:      money.FormatTokens(t.CryptoAmount),
		Amount:            money.FormatFiat(t.FiatAmount),
		Rate:              money.FormatRate(t.Rate),
		DepositAddress:    t.DepositAddress,
		ExpiresAt:         t.ExpiresAt,
		CreatedAt:         t.CreatedAt,
		UpdatedAt:         t.UpdatedAt,
		Deposits:          []SnapshotTransfer{},
		UnderReview:       t.Screening.UnderReview(),
		RefundAddress:     t.RefundAddress,
		ActionRequired:    ActionRequired(t),
		AllowedActions:    AllowedPartnerActions(t),
		RefundRequestedAt: t.RefundRequestedAt,
	}
	if d := t.Deposit; d != nil {
		id, status, conf, req, recv := d.ID, d.Status, d.Confirmations, d.RequiredConfirmations, d.ReceivedAt
		s.DepositID, s.DepositStatus, s.Confirmations, s.RequiredConfirmations, s.ReceivedAt = &id, &status, &conf, &req, &recv
		s.ConfirmedAt = d.ConfirmedAt
		// Confirming at the required count means only finality holds it back: the
		// scanner confirms at the count at once where no finality rule applies.
		s.AwaitingFinality = status == DepositStatusConfirming && conf >= req
		amount, hash := money.FormatTokens(d.Amount), d.Hash
		s.DepositAmount, s.DepositTxHash = &amount, &hash
		for _, tr := range d.Transfers {
			s.Deposits = append(s.Deposits, SnapshotTransfer{
				ID: tr.ID, TxHash: tr.Hash, LogIndex: tr.LogIndex, Amount: money.FormatTokens(tr.Amount), Block: tr.Block,
				Confirmations: tr.Confirmations, RequiredConfirmations: tr.RequiredConfirmations,
				ReceivedAt: tr.ReceivedAt, ConfirmedAt: tr.ConfirmedAt,
			})
		}
	}
	return s
}
