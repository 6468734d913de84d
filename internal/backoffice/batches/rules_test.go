package batches_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit"
	"partnerd/internal/audit/actor"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

var d = decimal.RequireFromString

type bed struct {
	st     *store.Store
	engine *lifecycle.Engine
	svc    *batches.Service
	log    *audit.Log
	by     actor.Actor
}

// createFill runs CreateFill in a unit of work of its own, as an operator's
// action does.
func (b *bed) createFill(ctx context.Context, by actor.Actor, ids []uuid.UUID, rate decimal.Decimal, ref string) (out *batches.Batch, err error) {
	err = b.st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
		out, err = b.svc.CreateFill(ctx, tx, by, ids, rate, ref)
		return err
	})
	return out, err
}

// createPayout runs CreatePayout in a unit of work of its own.
func (b *bed) createPayout(ctx context.Context, by actor.Actor, partner uuid.UUID, ids []uuid.UUID, ref string, fiat decimal.Decimal) (out *batches.Batch, err error) {
	err = b.st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
		out, err = b.svc.CreatePayout(ctx, tx, by, partner, ids, ref, fiat)
		return err
	})
	return out, err
}

func newBed(t *testing.T, url string) *bed {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, st.EnsureAddressSequences(ctx, []string{"bep20"}))
	op, _, err := func() (x *operators.Operator, key string, err error) {
		err = st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
			x, key, err = operators.NewService(st, store.Now).Create(ctx, tx, "Ada", operators.Roles)
			return err
		})
		return x, key, err
	}()
	require.NoError(t, err)
	engine := lifecycle.NewEngine(store.For(st, func(tx *store.Tx) lifecycle.Tx { return tx }), lifecycle.Config{Required: map[string]int{"bep20": 1}, Now: store.Now,
		Settlement: lifecycle.Settlement{OperatorLiquidity: true, OperatorPayout: true}})
	codec := cursor.NewCodec([]byte("s"))
	log := audit.New(st, codec, store.Now)
	return &bed{st: st, engine: engine, log: log, by: actor.OfOperator(op.ID, op.Name),
		svc: batches.New(store.For(st, func(tx *store.Tx) batches.Tx { return tx }), engine, log, codec, store.Now)}
}

func (b *bed) partner(t *testing.T) uuid.UUID {
	t.Helper()
	p := &partners.Partner{ID: uuid.New(), Name: "P", Environment: partners.Sandbox, KeyHash: uuid.NewString(),
		FeeRate: d("0.01"), ShareRate: d("0.5"), CreatedAt: store.Now()}
	require.NoError(t, b.st.CreatePartner(context.Background(), p))
	return p.ID
}

// awaitingFill creates partner's transaction of crypto tokens for fiat NGN and
// confirms its full deposit: with the operator's liquidity it waits for its fill.
func (b *bed) awaitingFill(t *testing.T, partner uuid.UUID, crypto, fiat string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	now := store.Now()
	tr := &lifecycle.Transaction{ID: uuid.New(), PartnerID: partner, MerchantReference: "R-" + uuid.NewString(),
		Token: "usdt", Network: "bep20", Status: lifecycle.AwaitingDeposit, Rate: d("1500"),
		CryptoAmount: d(crypto), FiatAmount: d(fiat), DepositAddress: "addr-" + uuid.NewString(),
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
	tr.ReferenceKey = transactions.ReferenceKey(tr.MerchantReference)
	require.NoError(t, store.For(b.st, func(tx *store.Tx) transactions.Tx { return tx }).WithTx(ctx, func(ctx context.Context, tx transactions.Tx) error {
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
	got, err := b.engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return b.engine.DetectGenerated(ctx, unit, tr.ID, lifecycle.DepositInput{ID: "dep_" + uuid.NewString(), Hash: "0x" + uuid.NewString(), From: "0xfrom", Confirmations: 1})
	})
	require.NoError(t, err)
	require.Equal(t, lifecycle.DepositConfirming, got.Status)
	require.Equal(t, lifecycle.DepositStatusConfirmed, got.Deposit.Status)
	return tr.ID
}

func (b *bed) status(t *testing.T, id uuid.UUID) *lifecycle.Transaction {
	t.Helper()
	tr, err := b.st.Transaction(context.Background(), id)
	require.NoError(t, err)
	return tr
}

func requireCode(t *testing.T, err error, code apperr.Code, field string) *apperr.Error {
	t.Helper()
	e, ok := apperr.As(err)
	require.True(t, ok, "want %s, got %v", code, err)
	require.Equal(t, code, e.Code, e.Message)
	if field != "" {
		require.Equal(t, field, e.Details[0].Field)
	}
	return e
}

// A fill batch: each transaction's NGN is its sold tokens × the executed rate
// rounded to kobo, the batch's the sum of those (not the rounded product of the
// sums); every item is checked before any changes, so a refused batch changes
// nothing; each filled transaction gets its audit row naming the batch.
func TestFill(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)
			p := b.partner(t)
			x := b.awaitingFill(t, p, "10.123457", "15000")
			y := b.awaitingFill(t, p, "3.333333", "5000")

			for _, rate := range []string{"0", "-1500"} {
				_, err := b.createFill(ctx, b.by, []uuid.UUID{x}, d(rate), "LQ-0")
				requireCode(t, err, apperr.InvalidRequest, "/rate")
			}
			tooMany := make([]uuid.UUID, 101)
			for i := range tooMany {
				tooMany[i] = uuid.New()
			}
			refusals := []struct {
				name  string
				ids   []uuid.UUID
				code  apperr.Code
				field string
			}{
				{"empty", nil, apperr.InvalidRequest, "/transaction_ids"},
				{"101 items", tooMany, apperr.InvalidRequest, "/transaction_ids"},
				{"listed twice", []uuid.UUID{x, y, x}, apperr.InvalidRequest, "/transaction_ids/2"},
				{"unknown", []uuid.UUID{x, uuid.New()}, apperr.NotFound, "/transaction_ids/1"},
			}
			for _, r := range refusals {
				_, err := b.createFill(ctx, b.by, r.ids, d("1501.5"), "LQ-0")
				requireCode(t, err, r.code, r.field)
			}
			require.Equal(t, lifecycle.DepositConfirming, b.status(t, x).Status, "a refused batch changes nothing")

			// 10.123457 × 1501.5 = 15200.3706855 → 15200.37; 3.333333 × 1501.5 = 5004.9994995 → 5005.00.
			batch, err := b.createFill(ctx, b.by, []uuid.UUID{x, y}, d("1501.5"), "LQ-1")
			require.NoError(t, err)
			require.Equal(t, batches.Fill, batch.Kind)
			require.Equal(t, "20205.37", batch.FiatAmount.StringFixed(2))
			require.Equal(t, "13.45679", batch.CryptoAmount.String())
			require.Equal(t, "1501.5", batch.Rate.String())
			require.Nil(t, batch.PartnerID)
			fills, err := b.st.FillsOf(ctx, []uuid.UUID{x, y})
			require.NoError(t, err)
			require.Equal(t, "15200.37", fills[x].FiatAmount.StringFixed(2))
			require.Equal(t, "5005.00", fills[y].FiatAmount.StringFixed(2))
			require.Equal(t, "LQ-1", fills[x].Reference)
			for _, id := range []uuid.UUID{x, y} {
				tr := b.status(t, id)
				require.Equal(t, lifecycle.OrderFilled, tr.Status)
				require.Equal(t, "1500", tr.Rate.String(), "the partner's rate does not change")
				got, err := b.svc.Of(ctx, batches.Fill, id)
				require.NoError(t, err)
				require.Equal(t, batch.ID, got.ID)
				entries, err := b.log.List(ctx, audit.Filter{TransactionID: &id}, 0, "")
				require.NoError(t, err)
				require.Len(t, entries.Items, 1)
				require.Equal(t, audit.BatchFill, entries.Items[0].Action)
				require.Equal(t, batch.ID, *entries.Items[0].BatchID)
			}

			// All or none: a filled transaction in a new batch refuses the batch,
			// and the waiting one in it stays waiting.
			z := b.awaitingFill(t, p, "2", "3000")
			_, err = b.createFill(ctx, b.by, []uuid.UUID{z, x}, d("1500"), "LQ-2")
			requireCode(t, err, apperr.InvalidStateTransition, "/transaction_ids/1")
			require.Equal(t, lifecycle.DepositConfirming, b.status(t, z).Status)
			none, err := b.svc.Of(ctx, batches.Fill, z)
			require.NoError(t, err)
			require.Nil(t, none)
			entries, err := b.log.List(ctx, audit.Filter{TransactionID: &z}, 0, "")
			require.NoError(t, err)
			require.Empty(t, entries.Items)
		})
	}
}

// A payout batch: every transaction must be the partner's and awaiting its payout,
// and the transfer's amount must equal the sum of their NGN amounts to the kobo;
// a payout settles once.
func TestPayout(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)
			p, q := b.partner(t), b.partner(t)
			completed := func(partner uuid.UUID, crypto, fiat string) uuid.UUID {
				id := b.awaitingFill(t, partner, crypto, fiat)
				_, err := b.engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
					return b.engine.FillOrder(ctx, unit, id, b.by, d("1500"), d(fiat), "LQ")
				})
				require.NoError(t, err)
				tr, err := b.engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
					return b.engine.SettleOrder(ctx, unit, id, b.by, "ST")
				})
				require.NoError(t, err)
				require.Equal(t, lifecycle.Completed, tr.Status)
				return id
			}
			x := completed(p, "10", "15000.25")
			y := completed(p, "3", "4500.50")
			other := completed(q, "2", "3000")
			waiting := b.awaitingFill(t, p, "1", "1500")

			e := requireCode(t, func() error {
				_, err := b.createPayout(ctx, b.by, p, []uuid.UUID{x, y}, "BANK-1", d("19500.74"))
				return err
			}(), apperr.InvalidStateTransition, "/fiat_amount")
			require.Contains(t, e.Message, "19500.74")
			require.Contains(t, e.Message, "19500.75")
			_, err := b.createPayout(ctx, b.by, p, []uuid.UUID{x, other}, "BANK-1", d("18000.25"))
			requireCode(t, err, apperr.InvalidStateTransition, "/transaction_ids/1")
			_, err = b.createPayout(ctx, b.by, p, []uuid.UUID{waiting}, "BANK-1", d("1500"))
			requireCode(t, err, apperr.InvalidStateTransition, "/transaction_ids/0")
			require.Nil(t, b.status(t, x).PayoutSettledAt, "a refused payout changes nothing")

			batch, err := b.createPayout(ctx, b.by, p, []uuid.UUID{x, y}, "BANK-1", d("19500.750"))
			require.NoError(t, err, "the same amount at another scale")
			require.Equal(t, batches.Payout, batch.Kind)
			require.Equal(t, p, *batch.PartnerID)
			require.Equal(t, "13", batch.CryptoAmount.String())
			for _, id := range []uuid.UUID{x, y} {
				tr := b.status(t, id)
				require.NotNil(t, tr.PayoutSettledAt)
				require.Equal(t, lifecycle.Completed, tr.Status)
			}
			_, err = b.createPayout(ctx, b.by, p, []uuid.UUID{y}, "BANK-2", d("4500.50"))
			e = requireCode(t, err, apperr.InvalidStateTransition, "/transaction_ids/0")
			require.Contains(t, e.Message, "already settled")

			second, err := b.createPayout(ctx, b.by, q, []uuid.UUID{other}, "BANK-3", d("3000"))
			require.NoError(t, err)
			all, err := b.svc.List(ctx, batches.Payout, nil, 1, "")
			require.NoError(t, err)
			require.Equal(t, second.ID, all.Items[0].ID, "newest first")
			require.True(t, all.HasMore)
			next, err := b.svc.List(ctx, batches.Payout, nil, 1, *all.NextCursor)
			require.NoError(t, err)
			require.Equal(t, batch.ID, next.Items[0].ID)
			require.Equal(t, []uuid.UUID{x, y}, next.Items[0].TransactionIDs)
			_, err = b.svc.List(ctx, batches.Payout, &p, 1, *all.NextCursor)
			requireCode(t, err, apperr.InvalidCursor, "")
			mine, err := b.svc.List(ctx, batches.Payout, &q, 0, "")
			require.NoError(t, err)
			require.Len(t, mine.Items, 1)
			require.Equal(t, second.ID, mine.Items[0].ID)
			fills, err := b.svc.List(ctx, batches.Fill, nil, 0, "")
			require.NoError(t, err)
			require.Empty(t, fills.Items)
		})
	}
}
