package revenue_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice/revenue"
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

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

type bed struct {
	st      *store.Store
	engine  *lifecycle.Engine
	clock   *clock
	partner uuid.UUID
}

// settled creates a transaction of fiat NGN on network and takes it through the
// engine to completed at at, which writes its ledger row.
func (b *bed) settled(t *testing.T, network, fiat string, at time.Time) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	b.clock.Set(at)
	tr := &lifecycle.Transaction{ID: uuid.New(), PartnerID: b.partner, MerchantReference: "R-" + uuid.NewString(),
		Token: "usdt", Network: network, Status: lifecycle.AwaitingDeposit, Rate: decimal.RequireFromString("1500"),
		CryptoAmount: decimal.RequireFromString("10"), FiatAmount: decimal.RequireFromString(fiat),
		DepositAddress: "addr-" + uuid.NewString(), CreatedAt: at, UpdatedAt: at, ExpiresAt: at.Add(time.Hour)}
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
		return lifecycle.Record(ctx, tx, tr, lifecycle.MustLookup(lifecycle.None, lifecycle.Create), nil, at)
	}))
	got, err := b.engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return b.engine.DetectGenerated(ctx, unit, tr.ID, lifecycle.DepositInput{ID: "dep_" + uuid.NewString(), Hash: "0x" + uuid.NewString(), From: "0xfrom", Confirmations: 1})
	})
	require.NoError(t, err)
	require.Equal(t, lifecycle.OrderFilled, got.Status)
	got, err = b.engine.Run(ctx, func(ctx context.Context, unit lifecycle.Tx) (*lifecycle.Transaction, error) {
		return b.engine.Settle(ctx, unit, tr.ID)
	})
	require.NoError(t, err)
	require.Equal(t, lifecycle.Completed, got.Status)
	return tr.ID
}

// The ledger on the real store, fed by the engine's settlement: the fee is the
// partner's fee rate of the NGN amount and the share its share rate of the fee, each
// rounded half-even to kobo (worked by hand below: a half-up rounding gives other
// amounts); the window defaults to [epoch, now] and is inclusive; the summary covers
// the whole window, not the page; cursors are bound to the partner and filters.
func TestLedger(t *testing.T) {
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			require.NoError(t, st.EnsureAddressSequences(ctx, []string{"bep20", "trc20"}))
			p := &partners.Partner{ID: uuid.New(), Name: "P", Environment: partners.Sandbox, KeyHash: uuid.NewString(),
				FeeRate: decimal.RequireFromString("0.01"), ShareRate: decimal.RequireFromString("0.25"), CreatedAt: store.Now()}
			require.NoError(t, st.CreatePartner(ctx, p))
			c := &clock{}
			b := &bed{st: st, clock: c, partner: p.ID,
				engine: lifecycle.NewEngine(store.For(st, func(tx *store.Tx) lifecycle.Tx { return tx }), lifecycle.Config{Required: map[string]int{"bep20": 1, "trc20": 1}, Now: c.Now})}

			t0 := time.Date(2026, 1, 10, 8, 0, 0, 0, time.UTC)
			// 12345.50 × 0.01 = 123.455 → 123.46 (half-even: 5 is odd, up); × 0.25 = 30.865 → 30.86 (6 is even, stays).
			a := b.settled(t, "bep20", "12345.50", t0.Add(1*time.Hour))
			// 12344.50 × 0.01 = 123.445 → 123.44 (4 is even, stays); × 0.25 = 30.86.
			bb := b.settled(t, "bep20", "12344.50", t0.Add(2*time.Hour))
			// 1000.10 × 0.01 = 10.001 → 10.00; × 0.25 = 2.50.
			cc := b.settled(t, "trc20", "1000.10", t0.Add(3*time.Hour))

			ledger := revenue.NewLedger(st, cursor.NewCodec([]byte("s")), func() time.Time { return t0.Add(150 * time.Minute) })
			page, err := ledger.List(ctx, p.ID, revenue.Filter{}, 0, "", true)
			require.NoError(t, err)
			require.Len(t, page.Rows, 2, "the window ends now by default: the row at 3 h is later")
			want := map[uuid.UUID][2]string{a: {"123.46", "30.86"}, bb: {"123.44", "30.86"}, cc: {"10", "2.5"}}
			require.Equal(t, bb, page.Rows[0].TransactionID, "newest first")
			require.Equal(t, a, page.Rows[1].TransactionID)
			for _, r := range page.Rows {
				require.Equal(t, want[r.TransactionID][0], r.PlatformFee.String())
				require.Equal(t, want[r.TransactionID][1], r.Share.String())
				require.True(t, r.Shortfall.IsZero())
			}
			require.Equal(t, revenue.EpochStart, page.Summary.From)
			require.Equal(t, t0.Add(150*time.Minute), page.Summary.To)
			require.Equal(t, int64(2), page.Summary.Count)
			require.Equal(t, "61.72", page.Summary.TotalPartnerShare.StringFixed(2))

			cases := []struct {
				name  string
				f     revenue.Filter
				rows  []uuid.UUID
				total string
			}{
				{"a later to", revenue.Filter{To: ptr(t0.Add(5 * time.Hour))}, []uuid.UUID{cc, bb, a}, "64.22"},
				{"inclusive bounds", revenue.Filter{From: ptr(t0.Add(2 * time.Hour)), To: ptr(t0.Add(3 * time.Hour))}, []uuid.UUID{cc, bb}, "33.36"},
				{"a zone other than UTC", revenue.Filter{From: ptr(t0.Add(2 * time.Hour).In(time.FixedZone("WAT", 3600))), To: ptr(t0.Add(5 * time.Hour))}, []uuid.UUID{cc, bb}, "33.36"},
				{"by network", revenue.Filter{Network: ptr("trc20"), To: ptr(t0.Add(5 * time.Hour))}, []uuid.UUID{cc}, "2.50"},
				{"by token", revenue.Filter{Token: ptr("usdc"), To: ptr(t0.Add(5 * time.Hour))}, nil, "0.00"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					p, err := ledger.List(ctx, p.ID, tc.f, 0, "", true)
					require.NoError(t, err)
					var got []uuid.UUID
					for _, r := range p.Rows {
						got = append(got, r.TransactionID)
					}
					require.Equal(t, tc.rows, got)
					require.Equal(t, int64(len(tc.rows)), p.Summary.Count)
					require.Equal(t, tc.total, p.Summary.TotalPartnerShare.StringFixed(2))
				})
			}

			// A page of one still sums the whole window; its cursor is bound.
			f := revenue.Filter{To: ptr(t0.Add(5 * time.Hour))}
			one, err := ledger.List(ctx, p.ID, f, 1, "", true)
			require.NoError(t, err)
			require.Len(t, one.Rows, 1)
			require.True(t, one.HasMore)
			require.Equal(t, "64.22", one.Summary.TotalPartnerShare.StringFixed(2))
			two, err := ledger.List(ctx, p.ID, f, 1, *one.NextCursor, false)
			require.NoError(t, err)
			require.Equal(t, bb, two.Rows[0].TransactionID)
			require.Nil(t, two.Summary, "no summary unless asked")
			_, err = ledger.List(ctx, p.ID, revenue.Filter{}, 1, *one.NextCursor, false)
			require.Equal(t, apperr.InvalidCursor, apperr.CodeOf(err))
			_, err = ledger.List(ctx, uuid.New(), f, 1, *one.NextCursor, false)
			require.Equal(t, apperr.InvalidCursor, apperr.CodeOf(err))
			empty, err := ledger.List(ctx, uuid.New(), f, 0, "", true)
			require.NoError(t, err)
			require.Empty(t, empty.Rows, "another partner's ledger is its own")
			require.Zero(t, empty.Summary.Count)
		})
	}
}
