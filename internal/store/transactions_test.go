package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/apperr"
	"partnerd/internal/idempotency"
	"partnerd/internal/store"
)

func TestAddressIndexesAreNeverHandedOutTwice(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		network := "net" + strings.ReplaceAll(uuid.NewString()[:8], "-", "") // a network of this test only
		require.NoError(t, s.EnsureAddressSequences(ctx, []string{network}))
		require.NoError(t, s.EnsureAddressSequences(ctx, []string{network}), "idempotent")
		const n = 40
		got := make([]uint32, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.InTx(ctx, func(ctx context.Context) error {
					idx, err := s.NextAddressIndex(ctx, network)
					got[i] = idx
					return err
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		seen := map[uint32]bool{}
		for _, idx := range got {
			require.False(t, seen[idx], "index %d handed out twice", idx)
			seen[idx] = true
		}
		for i := range uint32(n) {
			require.True(t, seen[i], "indexes are dense from 0: missing %d", i)
		}

		// An index allocated in a transaction that rolls back was never used. On
		// PostgreSQL the counter moves on regardless (a gap, like a sequence); on
		// SQLite the allocation rolls back with the transaction and is handed out
		// again. Either way no index is given to two transactions.
		boom := errors.New("boom")
		err := s.InTx(ctx, func(ctx context.Context) error {
			idx, err := s.NextAddressIndex(ctx, network)
			require.NoError(t, err)
			require.Equal(t, uint32(n), idx)
			return boom
		})
		require.ErrorIs(t, err, boom)
		idx, err := s.NextAddressIndex(ctx, network)
		require.NoError(t, err)
		want := uint32(n)
		if s.Dialect() == store.Postgres {
			want = n + 1
		}
		require.Equal(t, want, idx)
	})
}

func TestNestedTransactionFailureKeepsTheOuterOne(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		dupKey := *p
		dupKey.ID = uuid.New() // same key hash: violates the unique index
		var count int64
		err := s.InTx(ctx, func(ctx context.Context) error {
			inner := s.InTx(ctx, func(ctx context.Context) error { return s.CreatePartner(ctx, &dupKey) })
			require.Error(t, inner)
			// On PostgreSQL a failed statement aborts the whole transaction unless
			// it ran in a savepoint: this query proves the outer one goes on.
			other := *p
			other.ID, other.KeyHash = uuid.New(), uuid.NewString()
			if err := s.CreatePartner(ctx, &other); err != nil {
				return err
			}
			var err error
			count, err = s.CountPartners(ctx)
			return err
		})
		require.NoError(t, err)
		require.GreaterOrEqual(t, count, int64(2))
	})
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		clk := &clock{t: store.Now()}
		svc := idempotency.NewService(s, clk.now)
		k := idempotency.Key{PartnerID: p.ID, Operation: "createTransaction", Key: "k1"}

		rec, err := svc.Claim(ctx, k, "fp1")
		require.NoError(t, err)
		require.Nil(t, rec, "the first claim owns the key")

		_, err = svc.Claim(ctx, k, "fp1")
		require.Equal(t, apperr.IdempotencyRequestInProgress, apperr.CodeOf(err))
		_, err = svc.Claim(ctx, k, "fp2")
		require.Equal(t, apperr.IdempotencyKeyReused, apperr.CodeOf(err))

		require.NoError(t, svc.Complete(ctx, k, 201, []byte(`{"a":1}`)))
		rec, err = svc.Claim(ctx, k, "fp1")
		require.NoError(t, err)
		require.Equal(t, 201, rec.ResponseStatus)
		require.Equal(t, `{"a":1}`, string(rec.ResponseBody))

		// Scoped by operation and partner.
		for _, other := range []idempotency.Key{
			{PartnerID: p.ID, Operation: "cancelTransaction", Key: "k1"},
			{PartnerID: newPartner(t, s).ID, Operation: "createTransaction", Key: "k1"},
		} {
			rec, err := svc.Claim(ctx, other, "fp9")
			require.NoError(t, err)
			require.Nil(t, rec)
		}

		// A claim whose request died is taken over after the lock timeout.
		stale := idempotency.Key{PartnerID: p.ID, Operation: "createTransaction", Key: "stale"}
		_, err = svc.Claim(ctx, stale, "fp1")
		require.NoError(t, err)
		clk.add(idempotency.LockTimeout + time.Second)
		rec, err = svc.Claim(ctx, stale, "fp1")
		require.NoError(t, err)
		require.Nil(t, rec, "taken over")
		_, err = svc.Claim(ctx, stale, "fp1")
		require.Equal(t, apperr.IdempotencyRequestInProgress, apperr.CodeOf(err), "and held again")

		// Released keys are free again.
		require.NoError(t, svc.Release(ctx, stale))
		rec, err = svc.Claim(ctx, stale, "other request")
		require.NoError(t, err)
		require.Nil(t, rec)

		// After the retention the key is forgotten: purged, or replaced if still there.
		clk.add(idempotency.Retention)
		rec, err = svc.Claim(ctx, k, "a new request")
		require.NoError(t, err)
		require.Nil(t, rec, "an expired key is claimed afresh")
		clk.add(idempotency.Retention + time.Minute)
		n, err := svc.Purge(ctx)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, int64(4))
		_, err = s.GetKey(ctx, k)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
	})
}
