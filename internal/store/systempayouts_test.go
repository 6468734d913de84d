package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/audit"
	"partnerd/internal/backoffice/batches"
	"partnerd/internal/backoffice/operators"
	"partnerd/internal/lifecycle"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/transactions"
)

// Migration 00042 lets a payout have no operator (a simulated or automatic payout,
// recorded by the service). On a database holding batches, their items and audit
// rows naming them, every row survives (SQLite rebuilds the referenced table), the
// foreign keys to and from operator_batches still hold, the indexes are kept, and a
// payout of no operator is stored and read back with the nil UUID as its operator.
// Down removes the service's payouts of one and makes the operator required again.
func TestMigrationLetsPayoutsHaveNoOperator(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, err := store.Open(ctx, db.URL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			require.NoError(t, s.MigrateTo(ctx, 41))

			p := newPartner(t, s)
			op := &operators.Operator{ID: uuid.New(), Name: "Ada", KeyHash: uuid.NewString(), KeyPrefix: "sk_op_", CreatedAt: store.Now()}
			require.NoError(t, s.CreateOperator(ctx, op))
			n := 0
			completed := func(fiat string) *lifecycle.Transaction {
				t.Helper()
				n++
				now := store.Now()
				tr := &lifecycle.Transaction{ID: uuid.New(), PartnerID: p.ID, MerchantReference: "SYS-" + uuid.NewString(),
					Token: "usdt", Network: "bep20", Status: lifecycle.Completed, Rate: decimal.RequireFromString("1500"),
					CryptoAmount: decimal.RequireFromString("2"), FiatAmount: decimal.RequireFromString(fiat),
					DepositAddress: "addr-" + uuid.NewString(), AddressIndex: uint32(n), CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
				tr.ReferenceKey = transactions.ReferenceKey(tr.MerchantReference)
				require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.InsertTransaction(ctx, tr) }))
				return tr
			}
			a, b, c := completed("3000.00"), completed("4000.00"), completed("5000.00")
			batch := &batches.Batch{ID: uuid.New(), Kind: batches.Payout, PartnerID: &p.ID, Reference: "NIP-BEFORE",
				FiatAmount: decimal.RequireFromString("7000.00"), CryptoAmount: decimal.RequireFromString("4"),
				TransactionIDs: []uuid.UUID{a.ID, b.ID}, OperatorID: op.ID, CreatedAt: store.Now()}
			rate := decimal.RequireFromString("1500")
			fill := &batches.Batch{ID: uuid.New(), Kind: batches.Fill, Reference: "FILL-BEFORE", Rate: &rate,
				FiatAmount: decimal.RequireFromString("3000.00"), CryptoAmount: decimal.RequireFromString("2"),
				TransactionIDs: []uuid.UUID{a.ID}, OperatorID: op.ID, CreatedAt: store.Now()}
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
				if err := tx.InsertBatch(ctx, batch); err != nil {
					return err
				}
				return tx.InsertBatch(ctx, fill)
			}))
			audited := func(tid, bid uuid.UUID) {
				t.Helper()
				ref := "NIP"
				require.NoError(t, s.InsertAudit(ctx, &audit.Entry{ID: uuid.New(), OperatorID: op.ID, Action: audit.BatchPayout,
					TransactionID: &tid, BatchID: &bid, Reference: &ref, CreatedAt: store.Now()}))
			}
			audited(a.ID, batch.ID)
			audited(b.ID, batch.ID)

			ran, err := s.Migrate(ctx)
			require.NoError(t, err)
			require.Positive(t, ran, "00042 ran")

			// Every batch, item and audit row is still there.
			got, err := s.Batch(ctx, batch.ID)
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{a.ID, b.ID}, got.TransactionIDs)
			require.Equal(t, op.ID, got.OperatorID)
			require.Equal(t, "NIP-BEFORE", got.Reference)
			require.Equal(t, "7000.00", got.FiatAmount.StringFixed(2))
			require.True(t, batch.CreatedAt.Equal(got.CreatedAt))
			gotFill, err := s.Batch(ctx, fill.ID)
			require.NoError(t, err)
			require.True(t, rate.Equal(*gotFill.Rate))
			require.Nil(t, gotFill.PartnerID)
			entries, err := s.ListAudit(ctx, audit.Filter{OperatorID: &op.ID}, nil, 10)
			require.NoError(t, err)
			require.Len(t, entries, 2)
			for _, e := range entries {
				require.Equal(t, batch.ID, *e.BatchID)
			}

			// A payout the service records: no operator, read back as the nil UUID.
			now := store.Now()
			sys := &lifecycle.SystemPayout{ID: uuid.New(), PartnerID: p.ID, TransactionID: c.ID, FiatAmount: c.FiatAmount,
				CryptoAmount: c.CryptoAmount, CreatedAt: now}
			sys.Reference = lifecycle.SystemPayoutReference(sys.ID)
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.InsertSystemPayout(ctx, sys) }))
			one, err := s.BatchOf(ctx, batches.Payout, c.ID)
			require.NoError(t, err)
			require.NotNil(t, one)
			require.Equal(t, sys.ID, one.ID)
			require.Equal(t, uuid.Nil, one.OperatorID)
			require.True(t, one.System())
			require.Equal(t, "SIM-"+sys.ID.String()[:8], one.Reference)
			require.Equal(t, []uuid.UUID{c.ID}, one.TransactionIDs)
			require.Equal(t, p.ID, *one.PartnerID)
			require.Equal(t, "5000.00", one.FiatAmount.StringFixed(2))
			require.True(t, now.Equal(one.CreatedAt))
			list, err := s.ListBatches(ctx, batches.Query{Kind: batches.Payout, PartnerID: &p.ID, Limit: 10, CountOnly: true})
			require.NoError(t, err)
			require.Len(t, list, 2)
			require.Equal(t, []int{1, 2}, []int{list[0].Size(), list[1].Size()}, "newest first: the payout of one, then the batch")

			// The foreign keys hold, to the table and from it.
			requireForeignKeys(t, s, op.ID)

			// Its indexes are kept.
			require.Subset(t, indexesOf(t, s, "operator_batches"), []string{"operator_batches_kind_created_idx", "operator_batches_partner_idx"})

			// Down: the service's payout goes, the operators' stay, and a batch needs its
			// operator again.
			require.NoError(t, s.MigrateDownTo(ctx, 41))
			none, err := s.BatchOf(ctx, batches.Payout, c.ID)
			require.NoError(t, err)
			require.Nil(t, none)
			got, err = s.Batch(ctx, batch.ID)
			require.NoError(t, err)
			require.Equal(t, []uuid.UUID{a.ID, b.ID}, got.TransactionIDs)
			requireForeignKeys(t, s, op.ID)
			require.Subset(t, indexesOf(t, s, "operator_batches"), []string{"operator_batches_kind_created_idx", "operator_batches_partner_idx"})
			_, err = s.SQL().ExecContext(ctx, "INSERT INTO operator_batches (id, kind, partner_id, reference, fiat_amount, crypto_amount, created_at) VALUES ($1, 'payout', $2, 'R', '1.00', '1', $3)",
				uuid.NewString(), p.ID.String(), store.Now())
			require.Error(t, err, "operator_id is required again")

			// And up again.
			_, err = s.Migrate(ctx)
			require.NoError(t, err)
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error { return tx.InsertSystemPayout(ctx, sys) }))
			requireForeignKeys(t, s, op.ID)
		})
	}
}

// requireForeignKeys checks that the rows of operator_batches and of the tables
// referencing it obey their foreign keys and that new rows breaking them are refused.
func requireForeignKeys(t *testing.T, s *store.Store, operator uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	db := s.SQL()
	if s.Dialect() == store.SQLite {
		rows, err := db.QueryContext(ctx, "PRAGMA foreign_key_check")
		require.NoError(t, err)
		defer rows.Close()
		require.False(t, rows.Next(), "no row breaks a foreign key")
		require.NoError(t, rows.Err())
	}
	var batch, partner, unfilled string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT i.batch_id, b.partner_id FROM operator_batch_items i JOIN operator_batches b ON b.id = i.batch_id WHERE b.kind = 'payout' LIMIT 1").
		Scan(&batch, &partner))
	require.NoError(t, db.QueryRowContext(ctx, "SELECT id FROM transactions WHERE id NOT IN (SELECT transaction_id FROM operator_batch_items WHERE kind = 'fill') LIMIT 1").
		Scan(&unfilled))
	item := "INSERT INTO operator_batch_items (batch_id, kind, transaction_id, position) VALUES ($1, 'fill', $2, 0)"
	_, err := db.ExecContext(ctx, item, uuid.NewString(), unfilled)
	require.Error(t, err, "an item of no batch")
	row := "INSERT INTO operator_audit (id, actor, operator_id, action, batch_id, created_at) VALUES ($1, 'operator', $2, 'batch_payout', $3, $4)"
	_, err = db.ExecContext(ctx, row, uuid.NewString(), operator.String(), uuid.NewString(), store.Now())
	require.Error(t, err, "an audit row of no batch")
	// The same rows naming a batch that exists are taken (then removed): the
	// statements above failed on the reference alone.
	var fill string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT id FROM operator_batches WHERE kind = 'fill' LIMIT 1").Scan(&fill))
	_, err = db.ExecContext(ctx, item, fill, unfilled)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "DELETE FROM operator_batch_items WHERE batch_id = $1 AND transaction_id = $2", fill, unfilled)
	require.NoError(t, err)
	aid := uuid.NewString()
	_, err = db.ExecContext(ctx, row, aid, operator.String(), batch, store.Now())
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "DELETE FROM operator_audit WHERE id = $1", aid)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "DELETE FROM operator_batches WHERE id = $1", batch)
	require.Error(t, err, "a batch holding items")
	_, err = db.ExecContext(ctx, "INSERT INTO operator_batches (id, kind, partner_id, reference, fiat_amount, crypto_amount, operator_id, created_at) VALUES ($1, 'payout', $2, 'R', '1.00', '1', $3, $4)",
		uuid.NewString(), partner, uuid.NewString(), store.Now())
	require.Error(t, err, "a batch of no operator known")
}

// indexesOf names table's indexes.
func indexesOf(t *testing.T, s *store.Store, table string) []string {
	t.Helper()
	q := "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1"
	if s.Dialect() == store.SQLite {
		q = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = $1"
	}
	rows, err := s.SQL().QueryContext(context.Background(), q, table)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		out = append(out, name)
	}
	require.NoError(t, rows.Err())
	slices.Sort(out)
	return out
}
