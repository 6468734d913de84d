package uow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/uow"
)

// unit is a unit of work as a test sees it: what committed.
type unit struct{ committed []string }

// begin is a Begin over units: fn's unit commits when fn returns nil.
func begin(committed *[]string) uow.Begin[*unit] {
	return func(ctx context.Context, fn func(ctx context.Context, tx *unit) error) error {
		u := &unit{}
		if err := fn(ctx, u); err != nil {
			return err
		}
		*committed = append(*committed, u.committed...)
		return nil
	}
}

func TestRunCommitsOrRollsBack(t *testing.T) {
	t.Parallel()
	var committed []string
	ctx := context.Background()
	out, err := uow.Run(ctx, begin(&committed), func(ctx context.Context, tx *unit) (int, error) {
		tx.committed = append(tx.committed, "a")
		return 7, nil
	})
	require.NoError(t, err)
	require.Equal(t, 7, out)
	boom := errors.New("boom")
	out, err = uow.Run(ctx, begin(&committed), func(ctx context.Context, tx *unit) (int, error) {
		tx.committed = append(tx.committed, "b")
		return 8, boom
	})
	require.ErrorIs(t, err, boom)
	require.Zero(t, out, "no result of a unit of work that rolled back")
	require.Equal(t, []string{"a"}, committed)
}

// TestNestedRunIsAnError: a unit of work begun inside another's body (with the
// context that body was handed, or one made from it) is refused, and opens
// nothing; outside, a context is not in one.
func TestNestedRunIsAnError(t *testing.T) {
	t.Parallel()
	var committed, inner []string
	ctx := context.Background()
	require.False(t, uow.Open(ctx))
	err := uow.Do(ctx, begin(&committed), func(ctx context.Context, tx *unit) error {
		require.True(t, uow.Open(ctx))
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		err := uow.Do(child, begin(&inner), func(ctx context.Context, tx *unit) error {
			tx.committed = append(tx.committed, "inner")
			return nil
		})
		require.ErrorIs(t, err, uow.ErrNested)
		_, err = uow.Plain[int, *unit]().Run(ctx, begin(&inner), func(context.Context, *unit) (int, error) { return 1, nil })
		require.ErrorIs(t, err, uow.ErrNested, "through a Runner too")
		return err
	})
	require.ErrorIs(t, err, uow.ErrNested)
	require.Empty(t, inner, "the nested unit never began")
	require.Empty(t, committed, "the outer unit rolled back on the error")
	require.False(t, uow.Open(ctx), "the caller's context is not marked")
}

// TestPlainRunsAsItIs: the Runner of a call without a key is Run, fn as it is and
// the error as it is.
func TestPlainRunsAsItIs(t *testing.T) {
	t.Parallel()
	var committed []string
	ctx := context.Background()
	r := uow.Plain[string, *unit]()
	out, err := r.Run(ctx, begin(&committed), func(ctx context.Context, tx *unit) (string, error) {
		tx.committed = append(tx.committed, "x")
		return "done", nil
	})
	require.NoError(t, err)
	require.Equal(t, "done", out)
	require.Equal(t, []string{"x"}, committed)
	out, err = r.Apart(ctx, func(ctx context.Context) (string, error) {
		require.False(t, uow.Open(ctx), "apart is in no unit of work")
		return "queued", nil
	})
	require.NoError(t, err)
	require.Equal(t, "queued", out)
	boom := errors.New("rates down")
	require.Equal(t, boom, r.Before(ctx, boom))
}
