package backoffice_test

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
	"partnerd/internal/backoffice"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/refunds"
	"partnerd/internal/chain"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/cursor"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func ptr[T any](v T) *T { return &v }

var d = decimal.RequireFromString

// Lag is head − cursor, never negative, and unknown when either is.
func TestLag(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		scanned *int64
		reading *backoffice.ChainReading
		want    *int64
	}{
		{"behind", ptr[int64](90), &backoffice.ChainReading{Head: ptr[int64](100)}, ptr[int64](10)},
		{"caught up", ptr[int64](100), &backoffice.ChainReading{Head: ptr[int64](100)}, ptr[int64](0)},
		{"cursor past an old head", ptr[int64](105), &backoffice.ChainReading{Head: ptr[int64](100)}, ptr[int64](0)},
		{"never scanned", nil, &backoffice.ChainReading{Head: ptr[int64](100)}, nil},
		{"no reading", ptr[int64](90), nil, nil},
		{"a reading without a head", ptr[int64](90), &backoffice.ChainReading{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, backoffice.NetworkProgress{Scanned: c.scanned, Reading: c.reading}.Lag())
		})
	}
}

// refundWork reads the overview's refund work: the open unmatched deposits and
// everything waiting for a refund decision.
func refundWork(o *backoffice.Overview) (openUnmatched, total int) {
	return o.RefundWork.Unmatched, o.RefundWork.Total()
}

type bed struct {
	st      *store.Store
	engine  *lifecycle.Engine
	batches *batches.Service
	stages  *backoffice.StageLister
	svc     *backoffice.Service
	tasks   *refunds.Service
	by      actor.Actor
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
	op, _, err := func() (x *operators.Operator, key string, err error) {
		err = st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
			x, key, err = operators.NewService(st, store.Now).Create(ctx, tx, "Ada", operators.Roles)
			return err
		})
		return x, key, err
	}()
	require.NoError(t, err)
	p := &partners.Partner{ID: uuid.New(), Name: "P", Environment: partners.Sandbox, KeyHash: uuid.NewString(),
		FeeRate: d("0.01"), ShareRate: d("0.5"), CreatedAt: store.Now()}
	require.NoError(t, st.CreatePartner(ctx, p))
	engine := lifecycle.NewEngine(store.For(st, func(tx *store.Tx) lifecycle.Tx { return tx }), lifecycle.Config{Required: map[string]int{chain.BEP20: 3}, Now: store.Now,
		Settlement: lifecycle.Settlement{OperatorLiquidity: true, OperatorPayout: true}})
	codec := cursor.NewCodec([]byte("s"))
	b := &bed{st: st, engine: engine, by: actor.OfOperator(op.ID, op.Name), partner: p.ID,
		batches: batches.New(store.For(st, func(tx *store.Tx) batches.Tx { return tx }), engine, audit.New(st, codec, store.Now), codec, store.Now),
		stages:  backoffice.NewStageLister(st, codec), tasks: refunds.NewService(st, codec, store.Now)}
	b.svc = backoffice.New(st, b.stages, b.batches, []string{chain.BEP20, chain.TRC20})
	return b
}

// detected creates a transaction of crypto tokens for fiat NGN with its whole
// deposit seen at confirmations (of the 3 required).
func (b *bed) detected(t *testing.T, crypto, fiat string, confirmations int) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	now := store.Now()
	tr := &lifecycle.Transaction{ID: uuid.New(), PartnerID: b.partner, MerchantReference: "R-" + uuid.NewString(),
		Token: "usdt", Network: chain.BEP20, Status: lifecycle.AwaitingDeposit, Rate: d("1500"),
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
	_, err := b.engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return b.engine.DetectGenerated(ctx, unit, tr.ID, lifecycle.DepositInput{ID: "dep_" + uuid.NewString(), Hash: "0xhash-" + tr.ID.String(), From: "0xfrom", Confirmations: confirmations})
	})
	require.NoError(t, err)
	return tr.ID
}

// The overview and a case file on the real store. The overview counts and sums each
// stage (the stuck threshold measured on the lister's clock), lists every
// configured network even when never scanned, and counts the refund work as the
// open refund tasks plus the failed transactions. The case file carries the deposit
// (the transaction's own when no chain transfer was recorded), the fill, the
// settlement and payout steps with their operator and reference, and the batch
// that paid it.
func TestOverviewAndCase(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)

			b.detected(t, "10", "15000", 3) // awaiting its fill
			filled := b.detected(t, "2", "3000", 3)
			_, err := b.engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
				return b.engine.FillOrder(ctx, unit, filled, b.by, d("1510"), d("3020"), "LQ-1")
			})
			require.NoError(t, err)
			paid := b.detected(t, "1", "1500.50", 3)
			_, err = b.engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
				return b.engine.FillOrder(ctx, unit, paid, b.by, d("1500"), d("1500.50"), "LQ-2")
			})
			require.NoError(t, err)
			_, err = b.engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
				return b.engine.SettleOrder(ctx, unit, paid, b.by, "ST-2")
			})
			require.NoError(t, err)
			failed := b.detected(t, "4", "6000", 1)
			_, err = b.engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
				return b.engine.FailBy(ctx, unit, failed, b.by, "the node lost it")
			})
			require.NoError(t, err)
			b.detected(t, "5", "7500", 1) // still confirming
			for i, hash := range []string{"0x01", "0x02", "0x03"} {
				task, err := b.tasks.Record(ctx, b.st, lifecycle.RefundTask{Network: chain.BEP20, TxHash: hash, FromAddress: "0xf", ToAddress: "0xt",
					Amount: d("1"), RawAmount: "1000000000000000000", BlockNumber: 1})
				require.NoError(t, err)
				if i == 0 {
					_, err = b.tasks.Resolve(ctx, b.st, task.ID, b.by.OperatorID(), lifecycle.TaskCredited, nil, ptr("credited"))
					require.NoError(t, err)
				}
			}

			type total struct {
				stage        backoffice.Stage
				count        int
				crypto, fiat string
			}
			check := func(want []total) {
				t.Helper()
				o, err := b.svc.Overview(ctx)
				require.NoError(t, err)
				require.Len(t, o.Stages, len(want))
				for i, w := range want {
					got := o.Stages[i]
					require.Equal(t, w.stage, got.Stage)
					require.Equal(t, w.count, got.Count, w.stage)
					require.Equal(t, w.crypto, got.Crypto.String(), w.stage)
					require.Equal(t, w.fiat, got.Fiat.StringFixed(2), w.stage)
				}
				open, total := refundWork(o)
				require.Equal(t, 2, open, "two open unmatched deposits (the third is resolved)")
				require.Equal(t, 3, total, "two open tasks and one failed transaction")
				require.Len(t, o.Networks, 2)
				for i, n := range []string{chain.BEP20, chain.TRC20} {
					require.Equal(t, n, o.Networks[i].Network)
					require.Nil(t, o.Networks[i].Scanned, "never scanned")
					require.Nil(t, o.Networks[i].Lag())
				}
				require.Empty(t, o.FailingWebhooks)
			}
			check([]total{
				{backoffice.AwaitingFill, 1, "10", "15000.00"},
				{backoffice.AwaitingSettlement, 1, "2", "3000.00"},
				{backoffice.AwaitingPayout, 1, "1", "1500.50"},
				{backoffice.StageFailed, 1, "4", "6000.00"},
				{backoffice.ConfirmingTooLong, 0, "0", "0.00"},
			})
			// An hour later the confirming deposit is stuck.
			b.stages.ConfirmingTooLong(30*time.Minute, func() time.Time { return store.Now().Add(time.Hour) })
			check([]total{
				{backoffice.AwaitingFill, 1, "10", "15000.00"},
				{backoffice.AwaitingSettlement, 1, "2", "3000.00"},
				{backoffice.AwaitingPayout, 1, "1", "1500.50"},
				{backoffice.StageFailed, 1, "4", "6000.00"},
				{backoffice.ConfirmingTooLong, 1, "5", "7500.00"},
			})

			var batch *batches.Batch
			err = b.st.Transact(ctx, func(ctx context.Context, tx *store.Tx) (err error) {
				batch, err = b.batches.CreatePayout(ctx, tx, b.by, b.partner, []uuid.UUID{paid}, "BANK-9", d("1500.50"))
				return err
			})
			require.NoError(t, err)
			c, err := b.svc.Case(ctx, paid)
			require.NoError(t, err)
			require.Equal(t, paid, c.Transaction.ID)
			require.Len(t, c.Deposits, 1, "the transaction's own deposit when no chain transfer is recorded")
			require.Equal(t, "0xhash-"+paid.String(), c.Deposits[0].TxHash)
			require.Equal(t, "1", c.Deposits[0].Amount.String())
			require.Equal(t, "1500.50", c.Fill.FiatAmount.StringFixed(2))
			require.Equal(t, "LQ-2", c.Fill.Reference)
			require.Equal(t, "ST-2", *c.Settlement.Reference)
			require.Equal(t, b.by.OperatorID(), *c.Settlement.OperatorID)
			require.Equal(t, "BANK-9", *c.Payout.Reference)
			require.Equal(t, b.by.OperatorID(), *c.Payout.OperatorID)
			require.Equal(t, batch.ID, c.PayoutBatch.ID)
			var reasons []string
			for _, h := range c.History {
				reasons = append(reasons, h.Reason)
				if h.Reason == "transaction:created" {
					require.Nil(t, h.OperatorID, "the system created it")
				}
				if h.Reason == "order:filled" {
					require.Equal(t, "LQ-2", *h.Reference)
				}
			}
			require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled", "order:settled", "payout:settled"}, reasons)

			f, err := b.svc.Case(ctx, failed)
			require.NoError(t, err)
			require.Nil(t, f.Fill)
			require.Nil(t, f.Settlement)
			require.Nil(t, f.Payout)
			require.Nil(t, f.PayoutBatch)
			last := f.History[len(f.History)-1]
			require.Equal(t, "the node lost it", *last.Reference, "a failure's reason is its reference")
			require.Equal(t, b.by.OperatorID(), *last.OperatorID)

			_, err = b.svc.Case(ctx, uuid.New())
			require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		})
	}
}
