package storetest_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/store"
	"partnerd/internal/store/storetest"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// migratedSchemas migrates a fresh PostgreSQL schema and a fresh SQLite file with
// their own migration trees and reads both schemas back.
func migratedSchemas(t *testing.T) (pg, lite *storetest.Schema) {
	t.Helper()
	ctx := context.Background()
	read := func(url string) *storetest.Schema {
		s, err := store.Open(ctx, url)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		_, err = s.Migrate(ctx)
		require.NoError(t, err)
		sc, err := storetest.Introspect(ctx, s)
		require.NoError(t, err)
		return sc
	}
	return read(testdb.PostgresSchema(t)), read(testdb.SQLite(t))
}

func TestMigrationTreesDescribeOneSchema(t *testing.T) {
	t.Parallel()
	pg, lite := migratedSchemas(t)
	require.NotEmpty(t, pg.Tables)
	// The comparison must see what it compares: a schema read back empty would
	// "match" trivially.
	require.Contains(t, pg.Tables, "transactions")
	require.NotEmpty(t, pg.Tables["transactions"].Indexes)
	require.Contains(t, strings.Join(pg.Tables["chain_transfers"].Indexes, "\n"), "WHERE state = 'unmatched' and final = 0")
	require.Empty(t, storetest.Diff(pg, lite), "the PostgreSQL and SQLite migration trees differ")
}

// TestParityCatchesColumnDroppedFromADatabase drops a column from a migrated SQLite
// database itself (as a tree missing it would leave it) and reads it back.
func TestParityCatchesColumnDroppedFromADatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, _ := migratedSchemas(t)
	s, err := store.Open(ctx, testdb.SQLite(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.Migrate(ctx)
	require.NoError(t, err)
	_, err = s.SQL().ExecContext(ctx, `ALTER TABLE webhook_endpoints DROP COLUMN previous_secret`)
	require.NoError(t, err)
	lite, err := storetest.Introspect(ctx, s)
	require.NoError(t, err)
	require.Equal(t, []string{"column webhook_endpoints.previous_secret: only in PostgreSQL"}, storetest.Diff(pg, lite))
}

// TestParityCatchesDrift alters one side of two matching schemas the ways a
// migration could drift and checks that every one is reported.
func TestParityCatchesDrift(t *testing.T) {
	t.Parallel()
	pg, lite := migratedSchemas(t)
	require.Empty(t, storetest.Diff(pg, lite))

	cases := []struct {
		name   string
		mutate func(pg, lite *storetest.Schema)
		want   string
	}{
		{"column dropped from the SQLite tree", func(_, lite *storetest.Schema) {
			delete(lite.Tables["transactions"].Columns, "payout_settled_at")
		}, "column transactions.payout_settled_at: only in PostgreSQL"},
		{"column dropped from the PostgreSQL tree", func(pg, _ *storetest.Schema) {
			delete(pg.Tables["events"].Columns, "requeued")
		}, "column events.requeued: only in SQLite"},
		{"table missing", func(_, lite *storetest.Schema) {
			delete(lite.Tables, "order_fills")
		}, "table order_fills: only in PostgreSQL"},
		{"amount stored as a number on SQLite", func(_, lite *storetest.Schema) {
			c := lite.Tables["quotes"].Columns["fiat_amount"]
			c.Type = "REAL"
			lite.Tables["quotes"].Columns["fiat_amount"] = c
		}, "column quotes.fiat_amount: PostgreSQL numeric(20,2) means decimal, spelled TEXT on SQLite, but SQLite declares REAL"},
		{"nullability differs", func(_, lite *storetest.Schema) {
			c := lite.Tables["transactions"].Columns["merchant_id"]
			c.Nullable = false
			lite.Tables["transactions"].Columns["merchant_id"] = c
		}, "column transactions.merchant_id: nullable true on PostgreSQL, false on SQLite"},
		{"partial index lost its predicate", func(_, lite *storetest.Schema) {
			ix := lite.Tables["chain_transfers"].Indexes
			for i, s := range ix {
				if strings.HasPrefix(s, "chain_transfers_pending_idx") {
					ix[i] = storetest.Signature("chain_transfers_pending_idx", false, []string{"network"}, "")
				}
			}
		}, "chain_transfers index: chain_transfers_pending_idx (network) WHERE state = 'pending' only in PostgreSQL"},
		{"unique constraint missing", func(_, lite *storetest.Schema) {
			ix := lite.Tables["partners"].Indexes
			lite.Tables["partners"].Indexes = ix[:0]
		}, "partners index: UNIQUE (key_hash) only in PostgreSQL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, l := pg.Clone(), lite.Clone()
			tc.mutate(p, l)
			require.Contains(t, storetest.Diff(p, l), tc.want)
		})
	}
}
