package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/pricing/quotes"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// TestSQLiteUnitsOfWorkWriteInArrivalOrder: SQLite has one writer, and units of
// work waiting for it take their turns first come, first served (database/sql
// alone hands a freed connection to a random waiter, which made the creates' p99
// several times their mean). PostgreSQL runs units of work side by side, so there
// is no order to check there.
func TestSQLiteUnitsOfWorkWriteInArrivalOrder(t *testing.T) {
	t.Parallel()
	s := openStore(t, testdb.SQLite(t))
	ctx := context.Background()
	held, hold := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.Transact(ctx, func(context.Context, *store.Tx) error {
			close(held)
			<-hold
			return nil
		})
	}()
	<-held

	const n = 8
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			assert.NoError(t, s.Transact(ctx, func(context.Context, *store.Tx) error {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				return nil
			}))
		})
		time.Sleep(50 * time.Millisecond) // unit i waits before unit i+1 arrives
	}
	close(hold)
	wg.Wait()
	require.NoError(t, <-first)
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	require.Equal(t, want, order, "first come, first served")
}

// TestSQLiteWriterKeepsItsStatementsPrepared: the statements a unit of work runs
// on SQLite's one writer are prepared once, after the first unit that ran them
// commits, and later units run them prepared: a second unit of the same
// statements prepares nothing more, and both units' writes are there.
func TestSQLiteWriterKeepsItsStatementsPrepared(t *testing.T) {
	t.Parallel()
	s := openStore(t, testdb.SQLite(t))
	ctx := context.Background()
	p := newPartner(t, s)
	var ids []uuid.UUID
	write := func() {
		t.Helper()
		require.NoError(t, s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			now := store.Now()
			q := &quotes.Quote{ID: uuid.New(), PartnerID: p.ID, Token: "usdt", Network: chain.BEP20, BaseRate: decimal.RequireFromString("1500"),
				AdjustedRate: decimal.RequireFromString("1490"), CryptoAmount: decimal.RequireFromString("10"), FiatAmount: decimal.RequireFromString("14900"),
				CreatedAt: now, ExpiresAt: now.Add(quotes.TTL)}
			ids = append(ids, q.ID)
			if err := tx.CreateQuote(ctx, q); err != nil {
				return err
			}
			_, err := tx.QuoteByID(ctx, p.ID, q.ID)
			return err
		}))
	}
	before := s.WriterStatements()
	write()
	first := s.WriterStatements()
	require.GreaterOrEqual(t, first-before, 2, "the insert and the read, prepared once the first unit committed")
	write()
	require.Equal(t, first, s.WriterStatements(), "the second unit found every statement prepared")
	for _, id := range ids {
		_, err := s.QuoteByID(ctx, p.ID, id)
		require.NoError(t, err)
	}
}
