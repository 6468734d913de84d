package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/internal/idempotency"
	"partnerd/internal/kit/apperr"
	"partnerd/internal/kit/uow"
	"partnerd/internal/store"
)

// TestRunIsTheUseCasesUnitOfWork holds idempotency.Run, where every
// state-changing use case begins its unit of work, to its rules on the real store:
// without a key it is a plain unit of work (uow.Run; the idempotency layer
// refuses a request without one), nesting one is an error; under a key the answer it renders is
// stored with the effects, a retry gets it back as *Replayed with its own effects
// rolled back, another request's key is refused, a stored 4xx replays and a 400 does
// not; a failure before the unit of work still replays the stored answer.
func TestRunIsTheUseCasesUnitOfWork(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		p := newPartner(t, s)
		svc := idempotency.NewService(s.PartnerKeys(), store.Now)
		begin := uow.Begin[*store.Tx](s.Transact)
		count := func() int64 {
			n, err := s.CountPartners(ctx)
			require.NoError(t, err)
			return n
		}
		// effect adds a partner in the unit of work it is handed, and fails with fail.
		runs := 0
		effect := func(fail error) func(ctx context.Context, tx *store.Tx) (string, error) {
			return func(ctx context.Context, tx *store.Tx) (string, error) {
				runs++
				other := *p
				other.ID, other.KeyHash = uuid.New(), uuid.NewString()
				if err := tx.CreatePartner(ctx, &other); err != nil {
					return "", err
				}
				return other.ID.String(), fail
			}
		}
		// request names a call under key with fingerprint fp; its answers render
		// the result as the body, and errors by their status.
		request := func(key, fp string) idempotency.Request[string] {
			return idempotency.Request[string]{
				Service: svc, Key: idempotency.Key{PartnerID: p.ID, Operation: "op", Key: key}, Fingerprint: fp,
				Render: func(result string) (idempotency.Response, error) {
					return idempotency.Response{Status: 201, Body: []byte(result)}, nil
				},
				RenderError: func(err error) idempotency.Response {
					if e, ok := apperr.As(err); ok {
						status := map[apperr.Code]int{apperr.InvalidRequest: 400, apperr.InvalidStateTransition: 409}[e.Code]
						return idempotency.Response{Status: status, Body: []byte(e.Message)}
					}
					return idempotency.Response{Status: 500}
				},
			}
		}
		// No key: a plain unit of work (uow.Run), rolled back by an error; hooks
		// after the commit. The idempotency layer refuses a request without a key.
		before := count()
		_, err := uow.Run(ctx, begin, effect(errors.New("boom")))
		require.EqualError(t, err, "boom")
		require.Equal(t, before, count(), "the failed use case's write rolled back")
		_, err = idempotency.Run(ctx, begin, request("", "fp"), effect(nil))
		require.ErrorContains(t, err, "without a key")
		require.Equal(t, before, count(), "an unkeyed request is refused before its unit of work")
		var hooked []string
		id, err := uow.Run(ctx, begin, func(ctx context.Context, tx *store.Tx) (string, error) {
			tx.AfterCommit(func() { hooked = append(hooked, "after") })
			require.Empty(t, hooked, "not before the commit")
			return effect(nil)(ctx, tx)
		})
		require.NoError(t, err)
		require.NotEmpty(t, id)
		require.Equal(t, []string{"after"}, hooked)
		require.Equal(t, before+1, count())

		// A unit of work begun inside another is an error, not a silent join:
		// nothing of either commits.
		_, err = uow.Run(ctx, begin, func(ctx context.Context, tx *store.Tx) (string, error) {
			if _, err := effect(nil)(ctx, tx); err != nil {
				return "", err
			}
			return uow.Run(ctx, begin, effect(nil))
		})
		require.ErrorIs(t, err, uow.ErrNested)
		require.Equal(t, before+1, count(), "neither the outer nor the nested write committed")
		_, err = idempotency.Run(ctx, begin, request("nested", "fp"), func(ctx context.Context, tx *store.Tx) (string, error) {
			return idempotency.Run(ctx, begin, request("nested-inner", "fp"), effect(nil))
		})
		require.ErrorIs(t, err, uow.ErrNested, "a keyed unit of work nests no more than a plain one")
		require.Equal(t, before+1, count())

		// Under a key: run once, stored with the effects, replayed after.
		runs = 0
		first, err := idempotency.Run(ctx, begin, request("k1", "fp"), effect(nil))
		require.NoError(t, err)
		require.Equal(t, before+2, count())
		_, err = idempotency.Run(ctx, begin, request("k1", "fp"), effect(nil))
		stored, ok := idempotency.ReplayOf(err)
		require.True(t, ok, "a retry gets the stored answer: %v", err)
		require.Equal(t, idempotency.Response{Status: 201, Body: []byte(first), Replayed: true}, stored)
		require.Equal(t, 2, runs, "a retry runs the use case, whose effects roll back (below)")
		require.Equal(t, before+2, count())
		_, err = idempotency.Run(ctx, begin, request("k1", "another request"), effect(nil))
		require.Equal(t, apperr.IdempotencyKeyReused, apperr.CodeOf(err))

		// A 409 rolls its effects back and is stored; a 400 is not.
		conflict := apperr.New(apperr.InvalidStateTransition, "no")
		_, err = idempotency.Run(ctx, begin, request("k409", "fp"), effect(conflict))
		require.Equal(t, apperr.InvalidStateTransition, apperr.CodeOf(err))
		require.Equal(t, before+2, count(), "the 409's write rolled back")
		_, err = idempotency.Run(ctx, begin, request("k409", "fp"), effect(nil))
		stored, ok = idempotency.ReplayOf(err)
		require.True(t, ok)
		require.Equal(t, 409, stored.Status)
		_, err = idempotency.Run(ctx, begin, request("k400", "fp"), effect(apperr.New(apperr.InvalidRequest, "bad")))
		require.Equal(t, apperr.InvalidRequest, apperr.CodeOf(err))
		_, err = idempotency.Run(ctx, begin, request("k400", "fp"), effect(nil))
		require.NoError(t, err, "after a 400 the key is free")

		// A failure before the unit of work still replays the stored answer.
		err = idempotency.Before(ctx, request("k1", "fp"), errors.New("rates down"))
		stored, ok = idempotency.ReplayOf(err)
		require.True(t, ok)
		require.Equal(t, first, string(stored.Body))
		require.EqualError(t, idempotency.Before(ctx, request("fresh", "fp"), errors.New("rates down")), "rates down")

		// RunApart: no unit of work of its own, the key's answer stored after.
		apart := 0
		fn := func(context.Context) (string, error) { apart++; return "queued", nil }
		out, err := idempotency.RunApart(ctx, request("apart", "fp"), fn)
		require.NoError(t, err)
		require.Equal(t, "queued", out)
		_, err = idempotency.RunApart(ctx, request("apart", "fp"), fn)
		_, ok = idempotency.ReplayOf(err)
		require.True(t, ok)
		require.Equal(t, 1, apart)
	})
}
