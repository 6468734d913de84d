package dburl_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/dburl"
)

const sqliteOptions = "?_foreign_keys=on&_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=10000&_txlock=immediate"

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url     string
		dialect dburl.Dialect
		dsn     string
		err     string
	}{
		{"postgres://u:p@db:5432/partnerd?sslmode=disable", dburl.Postgres, "postgres://u:p@db:5432/partnerd?sslmode=disable", ""},
		{"postgresql://db/partnerd", dburl.Postgres, "postgresql://db/partnerd", ""},
		{"postgres://db/partnerd?pool_max_conns=3&sslmode=disable", dburl.Postgres, "postgres://db/partnerd?sslmode=disable", ""},
		{"postgres://db/partnerd?pool_max_conns=0", "", "", `pool_max_conns="0": want a positive integer`},
		{"postgres://db/partnerd?pool_max_conns=many", "", "", `pool_max_conns="many": want a positive integer`},
		{"sqlite:data/partnerd.db", dburl.SQLite, "file:data/partnerd.db" + sqliteOptions, ""},
		{"sqlite:/var/lib/partnerd/p.db", dburl.SQLite, "file:/var/lib/partnerd/p.db" + sqliteOptions, ""},
		{"sqlite:", "", "", "needs a file path"},
		{"mysql://u:secret@db/partnerd", "", "", `DATABASE_URL "mysql://u:***@db/partnerd": want postgres://… or sqlite:PATH`},
		{"", "", "", "want postgres://… or sqlite:PATH"},
		{"Postgres://db/x", "", "", "want postgres://"},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			t.Parallel()
			d, dsn, err := dburl.Parse(c.url)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				require.NotContains(t, err.Error(), "secret", "a password never reaches a message")
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.dialect, d)
			require.Equal(t, c.dsn, dsn)
		})
	}
	require.Equal(t, "sqlite:data/partnerd.db", dburl.Default)
	d, _, err := dburl.Parse(dburl.Default)
	require.NoError(t, err)
	require.Equal(t, dburl.SQLite, d, "the default is the embedded database")
}

func TestPoolSize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url  string
		rest string
		n    int
		err  bool
	}{
		{"postgres://db/x", "postgres://db/x", dburl.DefaultPoolSize, false},
		{"postgres://db/x?pool_max_conns=7", "postgres://db/x", 7, false},
		{"postgres://db/x?sslmode=disable&pool_max_conns=1", "postgres://db/x?sslmode=disable", 1, false},
		{"postgres://db/x?pool_max_conns=", "", 0, true},
		{"postgres://db/x?pool_max_conns=-2", "", 0, true},
		{"postgres://db/x?pool_max_conns=2.5", "", 0, true},
		{"postgres://[::1", "", 0, true},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			t.Parallel()
			rest, n, err := dburl.PoolSize(c.url)
			if c.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.rest, rest)
			require.Equal(t, c.n, n)
		})
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"postgres://user:hunter2@db:5432/x", "postgres://user:***@db:5432/x"},
		{"postgres://user:p@ss@db/x", "postgres://user:***@db/x"},
		{"postgres://user@db/x", "postgres://user@db/x"},
		{"postgres://db/x", "postgres://db/x"},
		{"sqlite:data/a@b.db", "sqlite:data/a@b.db"},
		{"not a url", "not a url"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, dburl.Redact(c.in))
		})
	}
}

func TestSQLitePath(t *testing.T) {
	t.Parallel()
	require.Equal(t, "data/partnerd.db", dburl.SQLitePath("sqlite:data/partnerd.db"))
	require.Equal(t, "/tmp/x.db", dburl.SQLitePath("sqlite:/tmp/x.db"))
}
