// Package sandbox is the staging simulator (POST /sandbox/simulate): it drives a
// partner's transaction through the very lifecycle.Engine methods real processing uses,
// supplying what a real chain or back office would (a deposit id, a chain hash,
// the required confirmations). Nothing here is reachable in production, which
// does not mount the route.
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/chain"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/lifecycle"
)

// Simulator runs simulated events.
type Simulator struct {
	lifecycle *lifecycle.Engine
}

// New returns a Simulator over l.
func New(l *lifecycle.Engine) *Simulator { return &Simulator{lifecycle: l} }

// Event is a simulation request: the event, the partner's transaction, and the
// optional deposit id, chain hash and amount of a simulated transfer.
type Event struct {
	Type          lifecycle.EventType
	TransactionID uuid.UUID
	DepositID     *string
	Hash          *string
	// Amount is the transfer's token amount; nil for what is still due.
	Amount *decimal.Decimal
	// Sender is the address that sent the transfer, in the network's form; nil
	// for a new random one. It is screened as a real sender is.
	Sender *string
}

// maxSimulatedAmount bounds a simulated transfer (12 integer digits, as the
// contract says) well inside what the ledger's numeric columns hold.
var maxSimulatedAmount = decimal.New(1, 12)

// Simulate applies e to partnerID's transaction and returns it as it is now.
// Errors: NotFound (not the partner's), InvalidStateTransition, InvalidRequest
// (an event the simulator does not know).
//
// A simulated event is one unit of work, begun here: every change it makes (and,
// under an Idempotency-Key, the stored answer) commits together.
// run is how its caller has it run: uow.Plain, or under its request's key
// (idempotency.Keyed); by is who acts (a partner's user's change is audited).
func (s *Simulator) Simulate(ctx context.Context, run uow.Runner[*lifecycle.Transaction, lifecycle.Tx], by actor.Actor, partnerID uuid.UUID, e Event) (*lifecycle.Transaction, error) {
	return run.Run(ctx, s.lifecycle.Begin, func(ctx context.Context, tx lifecycle.Tx) (*lifecycle.Transaction, error) {
		t, err := s.simulate(ctx, tx, partnerID, e)
		if err != nil {
			return nil, err
		}
		ref := string(e.Type)
		return t, audit.ByUser(ctx, tx, by, s.lifecycle.Now(), audit.Entry{Action: audit.SandboxSimulated, TransactionID: &t.ID, Reference: &ref})
	})
}

func (s *Simulator) simulate(ctx context.Context, tx lifecycle.Tx, partnerID uuid.UUID, e Event) (*lifecycle.Transaction, error) {
	// Read in the event's unit of work (and locked there, as the change that
	// follows locks it): the partner's own transaction, another's does not exist.
	t, err := tx.TransactionForUpdate(ctx, e.TransactionID)
	if err != nil {
		return nil, err
	}
	if t.PartnerID != partnerID {
		return nil, apperr.New(apperr.NotFound, "The transaction was not found.")
	}
	l, id := s.lifecycle, e.TransactionID
	if e.Type != lifecycle.EventDepositDetected && e.Type != lifecycle.EventDepositConfirmed && !t.Screening.Proceeds() {
		// Money under review moves only by an operator's decision, in the sandbox as
		// in production: the partner is told it is under review, never why.
		return nil, apperr.New(apperr.InvalidStateTransition, "The transaction is under review: it cannot move until the review ends.")
	}
	switch e.Type {
	case lifecycle.EventDepositDetected:
		// One transfer, by the chain's payment rules (lifecycle.Engine.Receive): it may
		// be sent several times, each a new transfer unless its deposit id is given again.
		in := lifecycle.DepositInput{Confirmations: 1, ID: deref(e.DepositID), Hash: deref(e.Hash), From: SimulatedAddress(t.Network)}
		if e.Sender != nil {
			a, err := chain.ParseAddress(t.Network, *e.Sender)
			if err != nil {
				return nil, apperr.Field(apperr.InvalidRequest, "The sender is not an address of the transaction's network.", "/sender",
					"an address of "+t.Network+" ("+chain.AddressForm(t.Network)+")")
			}
			in.From = chain.FormatAddress(t.Network, a)
		}
		if e.Amount != nil {
			if !e.Amount.Abs().LessThan(maxSimulatedAmount) {
				return nil, apperr.Field(apperr.InvalidRequest, "The simulated amount is too large.", "/amount",
					"must have at most 12 integer digits")
			}
			in.Amount = *e.Amount
		}
		if in.Hash == "" {
			in.Hash = SimulatedHash(t.Network)
		}
		if in.ID != "" {
			return l.DetectDeposit(ctx, tx, id, in)
		}
		in.ID = "dep_" + randomHex(12)
		return l.DetectGenerated(ctx, tx, id, in)
	case lifecycle.EventDepositConfirmed:
		if t.Deposit == nil {
			return nil, apperr.New(apperr.InvalidStateTransition, "The transaction has no deposit to confirm.")
		}
		return l.ConfirmAll(ctx, tx, id)
	case lifecycle.EventCompleted:
		return l.Settle(ctx, tx, id)
	case lifecycle.EventFailed:
		return l.Fail(ctx, tx, id)
	case lifecycle.EventExpired:
		return l.Expire(ctx, tx, id, true)
	case lifecycle.EventRefunded:
		return l.Refund(ctx, tx, id)
	case lifecycle.EventPayoutSettled:
		return l.SettlePayout(ctx, tx, id)
	}
	return nil, apperr.Field(apperr.InvalidRequest, "Unknown event.", "/event", "not a simulated event")
}

// SimulatedHash returns a random chain transaction hash of network's shape: 0x and
// 64 hex digits on EVM chains (bep20), 64 hex digits on Tron.
func SimulatedHash(network string) string {
	h := randomHex(32)
	if network == "trc20" {
		return h
	}
	return "0x" + h
}

// SimulatedAddress returns a random sender address of network's shape (where a
// refund of a simulated transfer would go).
func SimulatedAddress(network string) string {
	var a common.Address
	_, _ = rand.Read(a[:])
	return chain.FormatAddress(network, a)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
