package rates_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/pricing/rates"
)

func TestParseStaticTable(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{name: "two tokens", in: "usdt=1550.00,usdc=1549.5", want: map[string]string{"usdt": "1550", "usdc": "1549.5"}},
		{name: "trimmed and lower-cased", in: "  USDT = 1550.25 ,\tUsdC=1549.5 ", want: map[string]string{"usdt": "1550.25", "usdc": "1549.5"}},
		{name: "exact long fraction", in: "usdt=1550.123456789", want: map[string]string{"usdt": "1550.123456789"}},
		{name: "exponent notation", in: "usdt=1.55e3", want: map[string]string{"usdt": "1550"}},
		{name: "empty", in: "", wantErr: "empty"},
		{name: "blank", in: "   ", wantErr: "empty"},
		{name: "trailing comma", in: "usdt=1550,", wantErr: "entry 2 is empty"},
		{name: "empty middle entry", in: "usdt=1550,,usdc=1", wantErr: "entry 2 is empty"},
		{name: "no equals", in: "usdt", wantErr: "token=value"},
		{name: "empty token", in: "=1550", wantErr: "empty token"},
		{name: "empty value", in: "usdt= ", wantErr: "empty value"},
		{name: "not a number", in: "usdt=abc", wantErr: `invalid decimal "abc"`},
		{name: "comma decimal", in: "usdt=1550;5", wantErr: "invalid decimal"},
		{name: "zero", in: "usdt=0", wantErr: "must be positive"},
		{name: "negative", in: "usdt=-1550", wantErr: "must be positive"},
		{name: "absurd exponent", in: "usdt=1e200", wantErr: "out of range"},
		{name: "duplicate", in: "usdt=1550,usdt=1551", wantErr: `"usdt" is listed more than once`},
		{name: "duplicate ignoring case", in: "usdt=1550,USDT=1551", wantErr: "more than once"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := rates.ParseStaticTable(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, len(tc.want))
			for tok, want := range tc.want {
				v, ok := got[tok]
				require.True(t, ok, "token %q missing", tok)
				require.True(t, dec(t, want).Equal(v), "token %q: want %s, got %s", tok, want, v)
			}
		})
	}
}

func TestParseStaticTableKeepsExactDigits(t *testing.T) {
	t.Parallel()
	got, err := rates.ParseStaticTable("usdt=1550.123456789012345678901234567890")
	require.NoError(t, err)
	requireDecimal(t, "1550.12345678901234567890123456789", got["usdt"])
}

func TestStatic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock(t0)
	table, err := rates.ParseStaticTable("usdt=1550.00,usdc=1549.5")
	require.NoError(t, err)
	src := rates.NewStatic(table, clock.Now)

	r, err := src.Rate(ctx, "usdt")
	require.NoError(t, err)
	require.True(t, dec(t, "1550").Equal(r.Value))
	require.Equal(t, t0, r.AsOf)

	// AsOf follows the clock: a static rate is always current.
	clock.Advance(time.Hour)
	r, err = src.Rate(ctx, "usdc")
	require.NoError(t, err)
	requireDecimal(t, "1549.5", r.Value)
	require.Equal(t, t0.Add(time.Hour), r.AsOf)

	_, err = src.Rate(ctx, "btc")
	require.ErrorIs(t, err, rates.ErrUnavailable)
	require.ErrorContains(t, err, `"btc"`)
}

func TestStaticCopiesAndNormalizesTable(t *testing.T) {
	t.Parallel()
	table := map[string]decimal.Decimal{" USDT ": decimal.RequireFromString("1550")}
	src := rates.NewStatic(table, nil)

	// Mutating the caller's map afterwards has no effect.
	table[" USDT "] = decimal.RequireFromString("1")
	table["usdc"] = decimal.RequireFromString("1549")

	before := time.Now()
	r, err := src.Rate(context.Background(), "usdt")
	require.NoError(t, err)
	require.True(t, decimal.RequireFromString("1550").Equal(r.Value))
	require.False(t, r.AsOf.Before(before), "nil clock should default to time.Now")

	_, err = src.Rate(context.Background(), "usdc")
	require.ErrorIs(t, err, rates.ErrUnavailable)
}

func TestStaticRejectsNonPositiveValues(t *testing.T) {
	t.Parallel()
	src := rates.NewStatic(map[string]decimal.Decimal{
		"zero": decimal.Zero,
		"neg":  decimal.RequireFromString("-5"),
	}, nil)
	for _, tok := range []string{"zero", "neg"} {
		_, err := src.Rate(context.Background(), tok)
		require.ErrorIs(t, err, rates.ErrUnavailable, tok)
		require.ErrorContains(t, err, "not positive", tok)
	}
}
