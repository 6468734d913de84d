package testdb_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/dburl"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestWithPoolSize(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"postgres://u@h/db?sslmode=disable", "postgres://u@h/db?pool_max_conns=3&sslmode=disable"},
		{"postgresql://h/db", "postgresql://h/db?pool_max_conns=3"},
		{"postgres://h/db?pool_max_conns=9", "postgres://h/db?pool_max_conns=3"},
		{"sqlite:/tmp/x.db", "sqlite:/tmp/x.db"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			t.Parallel()
			got := testdb.WithPoolSize(c.in, 3)
			require.Equal(t, c.want, got)
			if strings.HasPrefix(got, "postgres") {
				_, n, err := dburl.PoolSize(got)
				require.NoError(t, err)
				require.Equal(t, 3, n, "the store reads the size back")
			}
		})
	}
	require.Equal(t, testdb.PoolSize, dburl.DefaultPoolSize, "test processes open small pools")
}

// Both gives a PostgreSQL schema and a SQLite file of their own: what one test
// writes, another never sees.
func TestBothAreFreshAndApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := testdb.Both(t), testdb.Both(t)
	require.Equal(t, []string{"postgres", "sqlite"}, []string{a[0].Name, a[1].Name})
	require.NotEqual(t, a[0].URL, b[0].URL)
	require.NotEqual(t, a[1].URL, b[1].URL)
	for _, db := range a {
		d, _, err := dburl.Parse(db.URL)
		require.NoError(t, err)
		require.Equal(t, db.Name, string(d))
	}

	open := func(raw string) *sql.DB {
		_, dsn, err := dburl.Parse(raw)
		require.NoError(t, err)
		db, err := sql.Open("pgx", dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	first, second := open(a[0].URL), open(b[0].URL)
	_, err := first.ExecContext(ctx, "CREATE TABLE only_here (id int)")
	require.NoError(t, err)
	_, err = first.ExecContext(ctx, "INSERT INTO only_here VALUES (1)")
	require.NoError(t, err)
	var n int
	require.NoError(t, first.QueryRowContext(ctx, "SELECT count(*) FROM only_here").Scan(&n))
	require.Equal(t, 1, n)
	_, err = second.ExecContext(ctx, "SELECT * FROM only_here")
	require.Error(t, err, "another schema does not see the table")
}
