package webhook

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/kit/uow"
	"partnerd/internal/lifecycle"
)

// TestReference is the merchant reference of a test event's sample transaction.
const TestReference = "WEBHOOK-TEST"

// TestType is a test event's type. The contract's event types are a closed set
// (a new value would break receivers generated from it), so a test event takes
// the most harmless real type, transaction.created, and says it is a test in its
// payload ("test": true) and by its sample's nil id. An endpoint that does not
// receive transaction.created gets the first type it receives (TestTypeOf).
const TestType = string(lifecycle.EventCreated)

// testPayload is a test event's body: the shape of every event's, plus "test".
type testPayload struct {
	lifecycle.Payload
	Test bool `json:"test"`
}

// SendTest emits a test event to the partner's endpoint through the outbox, so
// that it is signed, delivered, retried and logged as every event is: a partner
// checks a receiver end to end without a transaction. Its type is one the
// endpoint receives (TestTypeOf). The event and its delivery
// job commit together (with the request's stored answer under an
// Idempotency-Key, so a retried request sends one event). While the endpoint is
// disabled the event waits, as every event does. Errors: NotFound (no endpoint).
// run is how its caller has it run: uow.Plain, or under its request's key
// (idempotency.Keyed); by is who acts (a partner's user's change is audited).
func (s *Endpoints) SendTest(ctx context.Context, run uow.Runner[*Event, Tx], by actor.Actor, partnerID uuid.UUID) (*Event, error) {
	return run.Run(ctx, s.store.WithTx, func(ctx context.Context, tx Tx) (*Event, error) {
		ep, err := tx.EndpointOf(ctx, partnerID)
		if err != nil {
			return nil, err
		}
		at := s.now().UTC()
		typ := TestTypeOf(ep)
		ev := &Event{ID: uuid.New(), PartnerID: partnerID, Type: typ, CreatedAt: at, PublishStatus: Pending}
		body, err := json.Marshal(testPayload{
			Payload: lifecycle.Payload{ID: ev.ID, Type: typ, CreatedAt: at, Data: sampleTransaction(at).Snapshot()},
			Test:    true,
		})
		if err != nil {
			return nil, err
		}
		ev.Payload = body
		if err := tx.AppendTestEvent(ctx, ev); err != nil {
			return nil, err
		}
		return ev, audit.ByUser(ctx, tx, by, at, audit.Entry{Action: audit.WebhookTestSent, SubjectID: &ev.ID})
	})
}

// sampleTransaction is the transaction a test event describes: none of the
// partner's (its id is the nil UUID), in the shape of a new one.
func sampleTransaction(at time.Time) *lifecycle.Transaction {
	return &lifecycle.Transaction{
		ID: uuid.Nil, MerchantReference: TestReference, Token: "usdt", Network: "bep20",
		CryptoAmount: decimal.RequireFromString("100"), FiatAmount: decimal.RequireFromString("154225"),
		Rate: decimal.RequireFromString("1542.25"), DepositAddress: "0x0000000000000000000000000000000000000000",
		Status: lifecycle.AwaitingDeposit, CreatedAt: at, UpdatedAt: at, ExpiresAt: at.Add(30 * time.Minute),
	}
}
