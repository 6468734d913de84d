package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
