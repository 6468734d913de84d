package payouts_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/payouts"
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
	st  *store.Store
	svc *payouts.Service
	op  uuid.UUID
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
	return &bed{st: st, svc: payouts.New(st, cursor.NewCodec([]byte("s"))), op: op.ID}
}

func (b *bed) partner(t *testing.T) uuid.UUID {
	t.Helper()
	p := &partners.Partner{ID: uuid.New(), Name: "P", Environment: partners.Sandbox, KeyHash: uuid.NewString(),
		FeeRate: d("0.01"), ShareRate: d("0.5"), CreatedAt: store.Now()}
	require.NoError(t, b.st.CreatePartner(context.Background(), p))
	return p.ID
}

// completed stores a completed transaction of partner for fiat NGN.
func (b *bed) completed(t *testing.T, partner uuid.UUID, ref, fiat string) *lifecycle.Transaction {
	t.Helper()
	ctx := context.Background()
	now := store.Now()
	tr := &lifecycle.Transaction{ID: uuid.New(), PartnerID: partner, MerchantReference: ref,
		Token: "usdt", Network: "bep20", Status: lifecycle.Completed, Rate: d("1500"),
		CryptoAmount: d(fiat).Div(d("1500")).RoundUp(6), FiatAmount: d(fiat), DepositAddress: "addr-" + uuid.NewString(),
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
	tr.ReferenceKey = transactions.ReferenceKey(tr.MerchantReference)
	require.NoError(t, store.For(b.st, func(tx *store.Tx) transactions.Tx { return tx }).WithTx(ctx, func(ctx context.Context, tx transactions.Tx) error {
		idx, err := tx.NextAddressIndex(ctx, tr.Network)
		if err != nil {
			return err
		}
		tr.AddressIndex = idx
		return tx.InsertTransaction(ctx, tr)
	}))
	return tr
}

// batch records a batch of kind for partner (nil for a fill) over txs at.
func (b *bed) batch(t *testing.T, kind batches.Kind, partner *uuid.UUID, ref string, at time.Time, txs ...*lifecycle.Transaction) *batches.Batch {
	t.Helper()
	out := &batches.Batch{ID: uuid.New(), Kind: kind, PartnerID: partner, Reference: ref, OperatorID: b.op, CreatedAt: at}
	for _, tr := range txs {
		out.TransactionIDs = append(out.TransactionIDs, tr.ID)
		out.FiatAmount, out.CryptoAmount = out.FiatAmount.Add(tr.FiatAmount), out.CryptoAmount.Add(tr.CryptoAmount)
	}
	require.NoError(t, b.st.Transact(context.Background(), func(ctx context.Context, tx *store.Tx) error { return tx.InsertBatch(ctx, out) }))
	return out
}

// A partner sees its own payouts only: newest first, within a window, with
// cursors bound to the partner and the window; another partner's payout, a fill
// and an unknown id are all NotFound; the CSV has one row per transaction paid,
// newest payout first, the payout's columns repeated.
func TestPartnerPayoutRules(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBed(t, db.URL)
			pa, pb := b.partner(t), b.partner(t)
			t1, t2, t3 := b.completed(t, pa, "A-1", "1000.00"), b.completed(t, pa, "@A-2", "2500.25"), b.completed(t, pa, "A-3", "0.10")
			tb := b.completed(t, pb, "B-1", "700.00")
			base := store.Now().Add(-time.Hour)
			old := b.batch(t, batches.Payout, &pa, "NIP-OLD", base, t1)
			recent := b.batch(t, batches.Payout, &pa, "NIP-NEW", base.Add(time.Minute), t3, t2)
			other := b.batch(t, batches.Payout, &pb, "NIP-B", base.Add(2*time.Minute), tb)
			fill := b.batch(t, batches.Fill, nil, "LP-1", base.Add(3*time.Minute), t1)

			page, err := b.svc.List(ctx, pa, nil, nil, 1, "")
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{recent.ID}, ids(page.Items))
			require.True(t, page.HasMore)
			next, err := b.svc.List(ctx, pa, nil, nil, 1, *page.NextCursor)
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{old.ID}, ids(next.Items))
			require.False(t, next.HasMore)
			_, err = b.svc.List(ctx, pb, nil, nil, 1, *page.NextCursor)
			require.Equal(t, apperr.InvalidCursor, apperr.CodeOf(err), "a cursor is bound to its partner")
			from := base.Add(time.Minute)
			_, err = b.svc.List(ctx, pa, &from, nil, 1, *page.NextCursor)
			require.Equal(t, apperr.InvalidCursor, apperr.CodeOf(err), "and to its window")
			windowed, err := b.svc.List(ctx, pa, &from, &from, 10, "")
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{recent.ID}, ids(windowed.Items), "both ends inclusive")
			ofB, err := b.svc.List(ctx, pb, nil, nil, 10, "")
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{other.ID}, ids(ofB.Items))

			got, err := b.svc.Get(ctx, pa, recent.ID)
			require.NoError(t, err)
			require.True(t, d("2500.35").Equal(got.FiatAmount))
			require.Equal(t, []string{"A-3", "@A-2"}, []string{got.Transactions[0].MerchantReference, got.Transactions[1].MerchantReference})
			for _, id := range []uuid.UUID{other.ID, fill.ID, uuid.New()} {
				_, err := b.svc.Get(ctx, pa, id)
				require.Equal(t, apperr.NotFound, apperr.CodeOf(err), id)
			}

			var buf bytes.Buffer
			require.NoError(t, b.svc.WriteCSV(ctx, &buf, pa, time.Unix(0, 0), store.Now()))
			rows, err := csv.NewReader(&buf).ReadAll()
			require.NoError(t, err)
			at := func(x *batches.Batch) string { return x.CreatedAt.UTC().Format(time.RFC3339) }
			require.Equal(t, [][]string{
				payouts.Columns,
				{recent.ID.String(), "NIP-NEW", "2500.35", at(recent), t3.ID.String(), "A-3", "bep20", "usdt", "0.000067", "0.10"},
				{recent.ID.String(), "NIP-NEW", "2500.35", at(recent), t2.ID.String(), "'@A-2", "bep20", "usdt", "1.666834", "2500.25"},
				{old.ID.String(), "NIP-OLD", "1000.00", at(old), t1.ID.String(), "A-1", "bep20", "usdt", "0.666667", "1000.00"},
			}, rows)
			buf.Reset()
			require.NoError(t, b.svc.WriteCSV(ctx, &buf, pa, base.Add(time.Second), base.Add(2*time.Minute)))
			rows, err = csv.NewReader(&buf).ReadAll()
			require.NoError(t, err)
			require.Len(t, rows, 3, "the window holds the newer payout's two rows")
		})
	}
}

func ids(bs []*batches.Batch) []uuid.UUID {
	out := make([]uuid.UUID, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}
