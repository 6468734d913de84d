package rates_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/pricing/rates"
)

// fixedSource returns a fixed rate or error.
type fixedSource struct {
	rate rates.Rate
	err  error
}

func (s fixedSource) Rate(context.Context, string) (rates.Rate, error) { return s.rate, s.err }

func TestWithMaxAge(t *testing.T) {
	t.Parallel()
	value := decimal.RequireFromString("1550.25")
	tests := []struct {
		name      string
		age       time.Duration
		wantStale bool
	}{
		{name: "fresh", age: 0},
		{name: "slightly old", age: 30 * time.Second},
		{name: "exactly max age", age: time.Minute},
		{name: "just over max age", age: time.Minute + time.Nanosecond, wantStale: true},
		{name: "very old", age: 3*time.Minute + 500*time.Millisecond, wantStale: true},
		{name: "as of in the future", age: -time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := fixedSource{rate: rates.Rate{Value: value, AsOf: t0}}
			now := func() time.Time { return t0.Add(tc.age) }
			r, err := rates.WithMaxAge(src, time.Minute, now).Rate(context.Background(), "usdt")
			if tc.wantStale {
				require.ErrorIs(t, err, rates.ErrUnavailable)
				require.ErrorContains(t, err, "stale")
				require.ErrorContains(t, err, tc.age.String()+" old")
				require.Equal(t, rates.Rate{}, r)
				return
			}
			require.NoError(t, err)
			require.Equal(t, src.rate, r)
		})
	}
}

func TestWithMaxAgePassesErrorsThrough(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, err := rates.WithMaxAge(fixedSource{err: boom}, time.Minute, nil).Rate(context.Background(), "usdt")
	require.Same(t, boom, err)

	unavailable := errors.Join(rates.ErrUnavailable, boom)
	_, err = rates.WithMaxAge(fixedSource{err: unavailable}, time.Minute, nil).Rate(context.Background(), "usdt")
	require.Equal(t, unavailable, err)
}

func TestWithMaxAgeDefaultClock(t *testing.T) {
	t.Parallel()
	src := rates.WithMaxAge(rates.NewStatic(map[string]decimal.Decimal{"usdt": decimal.NewFromInt(1550)}, nil), time.Minute, nil)
	_, err := src.Rate(context.Background(), "usdt")
	require.NoError(t, err)

	old := fixedSource{rate: rates.Rate{Value: decimal.NewFromInt(1550), AsOf: time.Now().Add(-time.Hour)}}
	_, err = rates.WithMaxAge(old, time.Minute, nil).Rate(context.Background(), "usdt")
	require.ErrorIs(t, err, rates.ErrUnavailable)
}

func TestWithMaxAgeRejectsBadArguments(t *testing.T) {
	t.Parallel()
	src := fixedSource{}
	require.Panics(t, func() { rates.WithMaxAge(src, 0, nil) })
	require.Panics(t, func() { rates.WithMaxAge(src, -time.Second, nil) })
	require.Panics(t, func() { rates.WithMaxAge(nil, time.Second, nil) })
}
