package storetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice/operators"
	"partnerd/internal/backoffice/revenue"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func newOperator(t *testing.T, s *store.Store) *operators.Operator {
	t.Helper()
	o := &operators.Operator{ID: uuid.New(), Name: "Suite operator", KeyHash: "hash-" + uuid.NewString(), CreatedAt: store.Now()}
	require.NoError(t, s.CreateOperator(context.Background(), o))
	return o
}

func unmatchedDeposit(i int, at time.Time) *lifecycle.RefundTask {
	return &lifecycle.RefundTask{ID: uuid.New(), Kind: lifecycle.TaskUnmatched, Network: "bep20", TxHash: fmt.Sprintf("0xu%d", i), LogIndex: i, ToAddress: "0xnobody",
		Amount: dec("12.345678"), RawAmount: "12345678000000000000", BlockNumber: int64(100 + i), Status: lifecycle.TaskOpen, CreatedAt: at}
}

func resolution(op uuid.UUID) lifecycle.TaskResolution {
	return lifecycle.TaskResolution{Status: lifecycle.TaskRefunded, TxHash: ptr("0xrefund"), OperatorID: op, At: store.Now()}
}

func TestOperatorsAndPartners(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		o := newOperator(t, s)
		got, err := s.OperatorByKeyHash(ctx, o.KeyHash)
		require.NoError(t, err)
		require.Equal(t, o.ID, got.ID)
		require.Equal(t, o.CreatedAt, got.CreatedAt)
		_, err = s.OperatorByKeyHash(ctx, "nope")
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
		dup := *o
		dup.ID = uuid.New()
		require.Error(t, s.CreateOperator(ctx, &dup), "a key hash is unique")

		p := newPartner(t, s)
		gp, err := s.PartnerByID(ctx, p.ID)
		require.NoError(t, err)
		require.True(t, p.FeeRate.Equal(gp.FeeRate))
		_, err = s.PartnerByID(ctx, uuid.New())
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
	})
}

func TestRevenueLedger(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		base := store.Now().Add(-time.Hour)
		shares := []string{"0.10", "0.20", "1234567.89"}
		for i, share := range shares {
			tr := newTransaction(t, s, p, txOpts{status: lifecycle.Completed})
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
				return tx.InsertRevenue(ctx, &lifecycle.RevenueRow{TransactionID: tr.ID, PartnerID: p.ID, MerchantReference: tr.MerchantReference,
					Network: "bep20", Token: "usdt", CryptoAmount: tr.CryptoAmount, FiatAmount: tr.FiatAmount,
					PlatformFee: dec("2313.38"), Share: dec(share), TS: base.Add(time.Duration(i) * time.Minute)})
			}))
		}
		q := revenue.Query{From: base, To: base.Add(time.Hour), Limit: 2}
		rows, err := s.ListRevenue(ctx, p.ID, q)
		require.NoError(t, err)
		require.Len(t, rows, 2)
		require.True(t, rows[0].Share.Equal(dec("1234567.89")), "newest first")
		n, sum, err := s.RevenueSummary(ctx, p.ID, q)
		require.NoError(t, err)
		require.EqualValues(t, 3, n, "the summary covers the whole window")
		require.Equal(t, "1234568.19", sum.StringFixed(2), "summed exactly")
	})
}

// TestStoreBasics covers the plumbing: health, the job driver and job queue depth,
// pending migrations.
func TestStoreBasics(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, _ testdb.Database, s *store.Store) {
		ctx := context.Background()
		require.NoError(t, s.Ping(ctx))
		require.NotNil(t, s.JobDriver())
		depth, err := s.QueueDepth(ctx)
		require.NoError(t, err)
		require.Zero(t, depth)
		pending, err := s.PendingMigrations(ctx)
		require.NoError(t, err)
		require.False(t, pending)
		if s.Dialect() == store.Postgres {
			require.Equal(t, testdb.PoolSize, s.MaxConns())
		} else {
			require.Zero(t, s.MaxConns())
		}
	})
}
