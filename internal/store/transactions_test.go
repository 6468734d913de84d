package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/partners"
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
				err := s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
					idx, err := tx.NextAddressIndex(ctx, network)
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

		// An index allocated in a transaction that rolls back was never used: it is
		// handed out again (PostgreSQL: the unit of work gives it back to the
		// instance's block; SQLite: the allocation rolls back with it), so a
		// refusal leaves no gap, and no index is given to two transactions.
		boom := errors.New("boom")
		err := s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			idx, err := tx.NextAddressIndex(ctx, network)
			require.NoError(t, err)
			require.Equal(t, uint32(n), idx)
			return boom
		})
		require.ErrorIs(t, err, boom)
		var idx uint32
		err = s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			idx, err = tx.NextAddressIndex(ctx, network)
			return err
		})
		require.NoError(t, err)
		require.Equal(t, uint32(n), idx)
	})
}

func TestUnitOfWork(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		before, err := s.CountPartners(ctx)
		require.NoError(t, err)
		newOne := func() *partners.Partner {
			other := *p
			other.ID, other.KeyHash = uuid.New(), uuid.NewString()
			return &other
		}

		// The unit's writes go through the tx it hands fn: an error rolls them all
		// back, and AfterCommit hooks never run.
		var hooks []string
		boom := errors.New("boom")
		err = s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			tx.AfterCommit(func() { hooks = append(hooks, "outer") })
			require.NoError(t, tx.CreatePartner(ctx, newOne()))
			require.NoError(t, tx.CreatePartner(ctx, newOne()))
			return boom
		})
		require.ErrorIs(t, err, boom)
		n, err := s.CountPartners(ctx)
		require.NoError(t, err)
		require.Equal(t, before, n, "everything rolled back")
		require.Empty(t, hooks)

		// On success the hooks run after the commit, in order, and see its writes.
		err = s.Transact(ctx, func(ctx context.Context, tx *store.Tx) error {
			tx.AfterCommit(func() {
				n, err := s.CountPartners(context.Background())
				require.NoError(t, err)
				require.Equal(t, before+2, n, "committed before the hook runs")
				hooks = append(hooks, "first")
			})
			tx.AfterCommit(func() { hooks = append(hooks, "second") })
			require.NoError(t, tx.CreatePartner(ctx, newOne()))
			return tx.CreatePartner(ctx, newOne())
		})
		require.NoError(t, err)
		require.Equal(t, []string{"first", "second"}, hooks)
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
		svc := idempotency.NewService(s.PartnerKeys(), clk.now)
		k := idempotency.Key{PartnerID: p.ID, Operation: "createTransaction", Key: "k1"}
		runs := 0
		answer := func(status int, body string) func(context.Context) (idempotency.Response, error) {
			return func(context.Context) (idempotency.Response, error) {
				runs++
				return idempotency.Response{Status: status, Body: []byte(body)}, nil
			}
		}

		out, err := svc.Do(ctx, k, "fp1", answer(201, `{"a":1}`))
		require.NoError(t, err)
		require.Equal(t, idempotency.Response{Status: 201, Body: []byte(`{"a":1}`)}, out)
		out, err = svc.Do(ctx, k, "fp1", answer(201, `{"a":2}`))
		require.NoError(t, err)
		require.Equal(t, idempotency.Response{Status: 201, Body: []byte(`{"a":1}`), Replayed: true}, out, "the stored answer")
		require.Equal(t, 2, runs, "a retry runs (its effects roll back: below) and gets the stored answer")
		_, err = svc.Do(ctx, k, "fp2", answer(201, `{}`))
		require.Equal(t, apperr.IdempotencyKeyReused, apperr.CodeOf(err))

		// Scoped by operation and partner.
		for _, other := range []idempotency.Key{
			{PartnerID: p.ID, Operation: "cancelTransaction", Key: "k1"},
			{PartnerID: newPartner(t, s).ID, Operation: "createTransaction", Key: "k1"},
		} {
			out, err := svc.Do(ctx, other, "fp9", answer(200, `{"b":1}`))
			require.NoError(t, err)
			require.False(t, out.Replayed)
		}

		// A 409 is stored and replayed; a 400, a 500 and an error are not.
		conflict := idempotency.Key{PartnerID: p.ID, Operation: "createTransaction", Key: "conflict"}
		_, err = svc.Do(ctx, conflict, "fp", answer(409, `{"c":1}`))
		require.NoError(t, err)
		out, err = svc.Do(ctx, conflict, "fp", answer(201, `{}`))
		require.NoError(t, err)
		require.Equal(t, idempotency.Response{Status: 409, Body: []byte(`{"c":1}`), Replayed: true}, out)
		for i, fn := range []func(context.Context) (idempotency.Response, error){
			answer(400, `{}`), answer(500, `{}`),
			func(context.Context) (idempotency.Response, error) { return idempotency.Response{}, errors.New("boom") },
		} {
			free := idempotency.Key{PartnerID: p.ID, Operation: "createTransaction", Key: fmt.Sprintf("free-%d", i)}
			_, _ = svc.Do(ctx, free, "fp", fn)
			out, err := svc.Do(ctx, free, "other request", answer(201, `{"d":1}`))
			require.NoError(t, err, "the key is free for any request")
			require.False(t, out.Replayed)
		}

		// Effects commit only with a 2xx answer.
		var ref atomic.Int32
		inUnit := uow.Begin[*store.Tx](s.Transact)
		effect := func(ctx context.Context, key string, status int) error {
			_, err := idempotency.Run(ctx, inUnit, idempotency.Request[int]{Service: svc, Key: idempotency.Key{PartnerID: p.ID, Operation: "x", Key: key},
				Fingerprint: "fp", Render: func(status int) (idempotency.Response, error) { return idempotency.Response{Status: status}, nil },
				RenderError: func(error) idempotency.Response { return idempotency.Response{Status: 500} }},
				func(ctx context.Context, tx *store.Tx) (int, error) {
					other := *p
					other.ID, other.KeyHash = uuid.New(), uuid.NewString()
					ref.Add(1)
					return status, tx.CreatePartner(ctx, &other)
				})
			return err
		}
		before, err := s.CountPartners(ctx)
		require.NoError(t, err)
		require.NoError(t, effect(ctx, "e1", 404))
		require.NoError(t, effect(ctx, "e2", 201))
		_, replayed := idempotency.ReplayOf(effect(ctx, "e2", 201))
		require.True(t, replayed, "a retry gets the stored answer")
		after, err := s.CountPartners(ctx)
		require.NoError(t, err)
		require.Equal(t, int32(3), ref.Load())
		require.Equal(t, before+1, after, "the 404's write rolled back, the 201's committed, its retry's rolled back")

		// AfterCommit hooks of a keyed use case run after a 2xx commits, never for
		// an answer that rolled back.
		var hooks []int
		begin := uow.Begin[*store.Tx](s.Transact)
		for _, status := range []int{404, 201} {
			req := idempotency.Request[int]{Service: svc, Key: idempotency.Key{PartnerID: p.ID, Operation: "x", Key: fmt.Sprintf("hook-%d", status)},
				Fingerprint: "fp",
				Render:      func(int) (idempotency.Response, error) { return idempotency.Response{Status: status}, nil },
				RenderError: func(error) idempotency.Response { return idempotency.Response{Status: status} }}
			_, err := idempotency.Run(ctx, begin, req, func(ctx context.Context, tx *store.Tx) (int, error) {
				tx.AfterCommit(func() { hooks = append(hooks, status) })
				require.Empty(t, hooks, "not before the commit")
				if status == 404 {
					return 0, apperr.New(apperr.NotFound, "no")
				}
				return status, nil
			})
			if status == 404 {
				require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
			} else {
				require.NoError(t, err)
			}
		}
		require.Equal(t, []int{201}, hooks)

		// After the retention the key is forgotten: purged, or replaced if still there.
		clk.add(idempotency.Retention)
		out, err = svc.Do(ctx, k, "a new request", answer(201, `{}`))
		require.NoError(t, err)
		require.False(t, out.Replayed, "an expired key is claimed afresh")
		clk.add(idempotency.Retention + time.Minute)
		n, err := svc.Purge(ctx)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, int64(4))
	})
}

// TestIdempotencyConcurrentDuplicateWaitsAndReplays: requests with one key at once
// commit their effects once; the others wait for the first to commit, roll their
// own effects back and replay its answer.
func TestIdempotencyConcurrentDuplicateWaitsAndReplays(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		svc := idempotency.NewService(s.PartnerKeys(), store.Now)
		k := idempotency.Key{PartnerID: p.ID, Operation: "createTransaction", Key: "race"}
		name := "race-" + uuid.NewString()
		var wg sync.WaitGroup
		outs := make([]idempotency.Response, 4)
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var out idempotency.Response
				_, err := idempotency.Run(ctx, uow.Begin[*store.Tx](s.Transact), idempotency.Request[idempotency.Response]{Service: svc, Key: k,
					Fingerprint: "fp", Render: func(r idempotency.Response) (idempotency.Response, error) { out = r; return r, nil },
					RenderError: func(error) idempotency.Response { return idempotency.Response{Status: 500} }},
					func(ctx context.Context, tx *store.Tx) (idempotency.Response, error) {
						other := *p
						other.ID, other.KeyHash, other.Name = uuid.New(), uuid.NewString(), name
						if err := tx.CreatePartner(ctx, &other); err != nil {
							return idempotency.Response{}, err
						}
						time.Sleep(100 * time.Millisecond)
						return idempotency.Response{Status: 201, Body: []byte(`{"once":true}`)}, nil
					})
				if r, ok := idempotency.ReplayOf(err); ok {
					out, err = r, nil
				}
				if err != nil {
					t.Error(err)
				}
				outs[i] = out
			}()
		}
		wg.Wait()
		var committed int
		require.NoError(t, s.SQL().QueryRowContext(ctx, "SELECT count(*) FROM partners WHERE name = $1", name).Scan(&committed))
		require.Equal(t, 1, committed, "the effects committed once")
		replayed := 0
		for _, o := range outs {
			require.Equal(t, 201, o.Status)
			require.Equal(t, `{"once":true}`, string(o.Body))
			if o.Replayed {
				replayed++
			}
		}
		require.Equal(t, len(outs)-1, replayed)
	})
}
