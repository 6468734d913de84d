package store_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"partnerd/internal/backoffice/revenue"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/lifecycle"
	"partnerd/internal/partners"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// eachDatabase runs fn as a parallel subtest on a migrated PostgreSQL and a migrated
// SQLite store: the conformance suite both dialects must pass.
func eachDatabase(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			s := openStore(t, db.URL)
			fn(t, s)
		})
	}
}

func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.Migrate(ctx)
	require.NoError(t, err)
	return s
}

func newPartner(t *testing.T, s *store.Store) *partners.Partner {
	t.Helper()
	key, err := partners.NewKey(partners.Sandbox)
	require.NoError(t, err)
	p := &partners.Partner{
		ID: uuid.New(), Name: "Test partner", Environment: partners.Sandbox, KeyHash: partners.HashKey(key),
		FeeRate: decimal.RequireFromString("0.01"), ShareRate: decimal.RequireFromString("0.5"), CreatedAt: store.Now(),
	}
	require.NoError(t, s.CreatePartner(context.Background(), p))
	return p
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		n, err := s.Migrate(context.Background())
		require.NoError(t, err)
		require.Zero(t, n, "a second migrate applies nothing")
		pending, err := s.PendingMigrations(context.Background())
		require.NoError(t, err)
		require.False(t, pending)
	})
}

func TestPartners(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)

		got, err := s.PartnerByKeyHash(ctx, p.KeyHash)
		require.NoError(t, err)
		require.Equal(t, p.ID, got.ID)
		require.Equal(t, p.Name, got.Name)
		require.True(t, p.FeeRate.Equal(got.FeeRate))
		require.True(t, p.ShareRate.Equal(got.ShareRate))
		require.True(t, p.CreatedAt.Equal(got.CreatedAt), "times round-trip exactly: %s vs %s", p.CreatedAt, got.CreatedAt)

		_, err = s.PartnerByKeyHash(ctx, partners.HashKey("sk_sandbox_nope"))
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))

		dup := *p
		dup.ID = uuid.New()
		err = s.CreatePartner(ctx, &dup)
		require.True(t, errors.Is(err, gorm.ErrDuplicatedKey), "a second partner with the same key hash is refused: %v", err)

		n, err := s.CountPartners(ctx)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, int64(1))
	})
}

func TestQuotesRoundTripExactly(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		now := store.Now()
		q := &quotes.Quote{
			ID: uuid.New(), PartnerID: p.ID, Token: "usdt", Network: "bep20",
			BaseRate:     decimal.RequireFromString("1550.10"),
			AdjustedRate: decimal.RequireFromString("1542.35"),
			CryptoAmount: decimal.RequireFromString("123456789012.123457"),
			FiatAmount:   decimal.RequireFromString("999999999999999999.99"),
			CreatedAt:    now, ExpiresAt: now.Add(quotes.TTL),
		}
		require.NoError(t, s.CreateQuote(ctx, q))
		got, err := s.QuoteByID(ctx, p.ID, q.ID)
		require.NoError(t, err)
		require.Equal(t, "123456789012.123457", got.CryptoAmount.StringFixed(6))
		require.Equal(t, "999999999999999999.99", got.FiatAmount.StringFixed(2))
		require.Equal(t, "1542.35", got.AdjustedRate.StringFixed(2))
		require.True(t, q.ExpiresAt.Equal(got.ExpiresAt))
		require.Nil(t, got.UsedAt)

		// Another partner's quote is not found (no existence leak).
		other := newPartner(t, s)
		_, err = s.QuoteByID(ctx, other.ID, q.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
	})
}

func TestQuoteNeedsExistingPartner(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		now := store.Now()
		q := &quotes.Quote{ID: uuid.New(), PartnerID: uuid.New(), Token: "usdt", Network: "bep20", CreatedAt: now, ExpiresAt: now}
		err := s.CreateQuote(context.Background(), q)
		require.Error(t, err, "the foreign key holds on both databases")
	})
}

func TestSumsAreExact(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		// 0.10 + 0.20 is 0.30 exactly, and adding 0.01 to a huge value keeps the
		// cent: both are wrong in float64. The revenue summary sums exactly on both
		// databases (in SQL on PostgreSQL, in Go on SQLite).
		amounts := []string{"0.10", "0.20", "90071992547409.93", "0.01"}
		start := store.Now()
		for i, a := range amounts {
			now := start.Add(time.Duration(i) * time.Microsecond)
			tx := &lifecycle.Transaction{
				ID: uuid.New(), PartnerID: p.ID, MerchantReference: "SUM-" + a, ReferenceKey: "sum-" + a,
				Token: "usdt", Network: "bep20", DepositAddress: "addr", AddressIndex: uint32(i),
				Status: lifecycle.Completed, CreatedAt: now, UpdatedAt: now, ExpiresAt: now,
			}
			require.NoError(t, s.Transact(ctx, func(ctx context.Context, utx *store.Tx) error {
				if err := utx.InsertTransaction(ctx, tx); err != nil {
					return err
				}
				return utx.InsertRevenue(ctx, &lifecycle.RevenueRow{
					TransactionID: tx.ID, PartnerID: p.ID, MerchantReference: tx.MerchantReference, Network: "bep20", Token: "usdt",
					Share: decimal.RequireFromString(a), TS: now,
				})
			}))
		}
		window := revenue.Query{From: start, To: start.Add(time.Second)}
		n, sum, err := s.RevenueSummary(ctx, p.ID, window)
		require.NoError(t, err)
		require.Equal(t, int64(len(amounts)), n)
		require.Equal(t, "90071992547410.24", sum.StringFixed(2))

		_, empty, err := s.RevenueSummary(ctx, uuid.New(), window)
		require.NoError(t, err)
		require.True(t, empty.IsZero())
	})
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url     string
		dialect store.Dialect
		ok      bool
	}{
		{"postgres://u@h/db", store.Postgres, true},
		{"postgresql://u@h/db", store.Postgres, true},
		{"sqlite:data/x.db", store.SQLite, true},
		{"sqlite:", "", false},
		{"mysql://u@h/db", "", false},
		{"postgres://u@h/db?pool_max_conns=3", store.Postgres, true},
		{"postgres://u@h/db?pool_max_conns=0", "", false},
		{"postgres://u@h/db?pool_max_conns=x", "", false},
	} {
		d, _, err := store.ParseURL(c.url)
		if !c.ok {
			require.Error(t, err, c.url)
			continue
		}
		require.NoError(t, err, c.url)
		require.Equal(t, c.dialect, d, c.url)
	}
	_, _, err := store.ParseURL("mysql://user:secret@h/db")
	require.NotContains(t, err.Error(), "secret")
	// The server would refuse pool_max_conns as an unknown setting: it stays ours.
	_, dsn, err := store.ParseURL("postgres://u@h/db?sslmode=disable&pool_max_conns=3")
	require.NoError(t, err)
	require.Equal(t, "postgres://u@h/db?sslmode=disable", dsn)
}

// TestPoolSize checks that pool_max_conns caps the connections a Store opens: the
// test suites rely on it to stay under the server's max_connections.
func TestPoolSize(t *testing.T) {
	t.Parallel()
	s, err := store.Open(context.Background(), testdb.WithPoolSize(testdb.Postgres(t), 2))
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, 2, s.MaxConns())
}
