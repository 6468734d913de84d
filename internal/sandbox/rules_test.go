package sandbox_test

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit/actor"
	"partnerd/internal/chain"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/sandbox"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
	"partnerd/internal/webhook"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func ptr[T any](v T) *T { return &v }

var d = decimal.RequireFromString

// Simulated hashes and senders have the shape of their network's, so the partner's
// code sees what production would send.
func TestSimulatedShapes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		network string
		hash    *regexp.Regexp
	}{
		{chain.BEP20, regexp.MustCompile(`^0x[0-9a-f]{64}$`)},
		{chain.TRC20, regexp.MustCompile(`^[0-9a-f]{64}$`)},
	}
	for _, c := range cases {
		t.Run(c.network, func(t *testing.T) {
			t.Parallel()
			h1, h2 := sandbox.SimulatedHash(c.network), sandbox.SimulatedHash(c.network)
			require.Regexp(t, c.hash, h1)
			require.NotEqual(t, h1, h2)
			a := sandbox.SimulatedAddress(c.network)
			_, err := chain.ParseAddress(c.network, a)
			require.NoError(t, err, a)
			require.NotEqual(t, a, sandbox.SimulatedAddress(c.network))
		})
	}
	require.Regexp(t, `^T[1-9A-HJ-NP-Za-km-z]{33}$`, sandbox.SimulatedAddress(chain.TRC20))
	require.Regexp(t, `^0x[0-9a-fA-F]{40}$`, sandbox.SimulatedAddress(chain.BEP20))
}

type bed struct {
	st      *store.Store
	sim     *sandbox.Simulator
	partner uuid.UUID
}

func newBed(t *testing.T, url string) *bed {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, st.EnsureAddressSequences(ctx, []string{chain.BEP20}))
	p := &partners.Partner{ID: uuid.New(), Name: "P", Environment: partners.Sandbox, KeyHash: uuid.NewString(),
		FeeRate: d("0.01"), ShareRate: d("0.5"), CreatedAt: store.Now()}
	require.NoError(t, st.CreatePartner(ctx, p))
	engine := lifecycle.NewEngine(store.For(st, func(tx *store.Tx) lifecycle.Tx { return tx }), lifecycle.Config{Required: map[string]int{chain.BEP20: 3}, Now: store.Now})
	return &bed{st: st, partner: p.ID, sim: sandbox.New(engine)}
}

// awaiting inserts the partner's transaction of 10 USDT awaiting its deposit.
func (b *bed) awaiting(t *testing.T) uuid.UUID {
	t.Helper()
	now := store.Now()
	tr := &lifecycle.Transaction{ID: uuid.New(), PartnerID: b.partner, MerchantReference: "R-" + uuid.NewString(),
		Token: "usdt", Network: chain.BEP20, Status: lifecycle.AwaitingDeposit, Rate: d("1500"),
		CryptoAmount: d("10"), FiatAmount: d("15000"), DepositAddress: "addr-" + uuid.NewString(),
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
	tr.ReferenceKey = transactions.ReferenceKey(tr.MerchantReference)
	require.NoError(t, store.For(b.st, func(tx *store.Tx) transactions.Tx { return tx }).WithTx(context.Background(), func(ctx context.Context, tx transactions.Tx) error {
		idx, err := tx.NextAddressIndex(ctx, tr.Network)
		if err != nil {
			return err
		}
		tr.AddressIndex = idx
		if err := tx.InsertTransaction(ctx, tr); err != nil {
			return err
		}
		return lifecycle.Record(ctx, tx, tr, lifecycle.MustLookup(lifecycle.None, lifecycle.Create), nil, now)
	}))
	return tr.ID
}

func (b *bed) events(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	evs, err := b.st.ListEvents(context.Background(), b.partner, webhook.ListQuery{Filter: webhook.Filter{TransactionID: &id}, Limit: 100})
	require.NoError(t, err)
	var out []string
	for i := len(evs) - 1; i >= 0; i-- { // oldest first
		out = append(out, evs[i].Type)
	}
	return out
}

func requireCode(t *testing.T, err error, code apperr.Code, field string) {
	t.Helper()
	e, ok := apperr.As(err)
	require.True(t, ok, "want %s, got %v", code, err)
	require.Equal(t, code, e.Code, e.Message)
	if field != "" {
		require.Equal(t, field, e.Details[0].Field)
	}
}

// The simulator on the real store drives the engine as the chain and back office
// would: a transfer of what is due (generated id and hash), confirmation with the
// network's requirement, the simulated fill, settlement and payout, each with its
// event; and it refuses what the engine refuses.
func TestSimulate(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)

			t.Run("the happy path", func(t *testing.T) {
				id := b.awaiting(t)
				ev := func(e lifecycle.EventType) sandbox.Event { return sandbox.Event{Type: e, TransactionID: id} }
				_, err := b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, ev(lifecycle.EventDepositConfirmed))
				requireCode(t, err, apperr.InvalidStateTransition, "")

				tr, err := b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, ev(lifecycle.EventDepositDetected))
				require.NoError(t, err)
				require.Equal(t, lifecycle.DepositConfirming, tr.Status)
				require.Equal(t, "10", tr.Deposit.Amount.String(), "no amount: what is due")
				require.Equal(t, lifecycle.DepositStatusConfirming, tr.Deposit.Status, "1 of the 3 confirmations")
				require.Regexp(t, `^dep_[0-9a-f]{24}$`, tr.Deposit.ID)
				require.Regexp(t, `^0x[0-9a-f]{64}$`, tr.Deposit.Hash)

				tr, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, ev(lifecycle.EventDepositConfirmed))
				require.NoError(t, err)
				require.Equal(t, lifecycle.OrderFilled, tr.Status, "the simulated liquidity fills with the confirmation")
				require.Equal(t, lifecycle.DepositStatusConfirmed, tr.Deposit.Status)
				require.Equal(t, 3, tr.Deposit.Confirmations)

				tr, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, ev(lifecycle.EventCompleted))
				require.NoError(t, err)
				require.Equal(t, lifecycle.Completed, tr.Status)
				require.Nil(t, tr.PayoutSettledAt)
				tr, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, ev(lifecycle.EventPayoutSettled))
				require.NoError(t, err)
				require.NotNil(t, tr.PayoutSettledAt)
				_, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, ev(lifecycle.EventPayoutSettled))
				requireCode(t, err, apperr.InvalidStateTransition, "")
				_, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, ev(lifecycle.EventRefunded))
				requireCode(t, err, apperr.InvalidStateTransition, "")

				require.Equal(t, []string{"transaction.created", "deposit.detected", "deposit.confirmed", "transaction.completed", "payout.settled"}, b.events(t, id))
			})

			t.Run("transfers add up", func(t *testing.T) {
				id := b.awaiting(t)
				tr, err := b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, sandbox.Event{Type: lifecycle.EventDepositDetected, TransactionID: id,
					DepositID: ptr("dep_a"), Hash: ptr("0xabc"), Amount: ptr(d("4"))})
				require.NoError(t, err)
				require.Equal(t, lifecycle.AwaitingDeposit, tr.Status)
				require.Equal(t, lifecycle.DepositStatusPartial, tr.Deposit.Status)
				// The same deposit id again is the same transfer: nothing more is counted.
				tr, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, sandbox.Event{Type: lifecycle.EventDepositDetected, TransactionID: id,
					DepositID: ptr("dep_a"), Hash: ptr("0xabc"), Amount: ptr(d("4"))})
				require.NoError(t, err)
				require.Equal(t, "4", tr.Deposit.Amount.String())
				// No amount: the 6 still due completes it.
				tr, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, sandbox.Event{Type: lifecycle.EventDepositDetected, TransactionID: id})
				require.NoError(t, err)
				require.Equal(t, lifecycle.DepositConfirming, tr.Status)
				require.Equal(t, "10", tr.Deposit.Amount.String())
				require.Len(t, tr.Deposit.Transfers, 2)
				tr, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, sandbox.Event{Type: lifecycle.EventFailed, TransactionID: id})
				require.NoError(t, err)
				require.Equal(t, lifecycle.Failed, tr.Status)
				tr, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, sandbox.Event{Type: lifecycle.EventRefunded, TransactionID: id})
				require.NoError(t, err)
				require.Equal(t, lifecycle.Refunded, tr.Status)
			})

			t.Run("expiry", func(t *testing.T) {
				id := b.awaiting(t)
				tr, err := b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, sandbox.Event{Type: lifecycle.EventExpired, TransactionID: id})
				require.NoError(t, err, "the simulator expires before the deadline")
				require.Equal(t, lifecycle.Expired, tr.Status)
				_, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, sandbox.Event{Type: lifecycle.EventCompleted, TransactionID: id})
				requireCode(t, err, apperr.InvalidStateTransition, "")
			})

			t.Run("refusals", func(t *testing.T) {
				id := b.awaiting(t)
				_, err := b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(uuid.Nil, ""), uuid.New(), sandbox.Event{Type: lifecycle.EventDepositDetected, TransactionID: id})
				requireCode(t, err, apperr.NotFound, "")
				_, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, sandbox.Event{Type: lifecycle.EventDepositDetected, TransactionID: uuid.New()})
				requireCode(t, err, apperr.NotFound, "")
				for _, e := range []lifecycle.EventType{lifecycle.EventCreated, "deposit.reorged", ""} {
					_, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, sandbox.Event{Type: e, TransactionID: id})
					requireCode(t, err, apperr.InvalidRequest, "/event")
				}
				for _, a := range []string{"1000000000000", "-1000000000000"} {
					_, err = b.sim.Simulate(ctx, uow.Plain[*lifecycle.Transaction, lifecycle.Tx](), actor.OfPartnerKey(b.partner, ""), b.partner, sandbox.Event{Type: lifecycle.EventDepositDetected, TransactionID: id, Amount: ptr(d(a))})
					requireCode(t, err, apperr.InvalidRequest, "/amount")
				}
				tr, err := b.st.Transaction(ctx, id)
				require.NoError(t, err)
				require.Equal(t, lifecycle.AwaitingDeposit, tr.Status, "refused simulations change nothing")
				require.Nil(t, tr.Deposit)
				require.Equal(t, []string{"transaction.created"}, b.events(t, id))
			})
		})
	}
}
