package money

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestRoundingRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		got  decimal.Decimal
		want string
	}{
		{"base rate rounds half up", BaseRate(d("1550.125")), "1550.13"},
		{"base rate keeps exact", BaseRate(d("1550.1")), "1550.10"},
		{"adjusted rate rounds down", AdjustedRate(d("1550.00"), d("0.005")), "1542.25"},
		{"adjusted rate floors 1545.34003", AdjustedRate(d("1549.99"), d("0.003")), "1545.34"},
		{"fiat from tokens rounds down", FiatFromTokens(d("0.333333"), d("1542.25")), "514.08"},
		{"fiat from tokens exact", FiatFromTokens(d("100"), d("1542.25")), "154225.00"},
		{"tokens from fiat rounds up", TokensFromFiat(d("1000"), d("1542.25")), "0.648404"},
		{"tokens from fiat exact stays", TokensFromFiat(d("154225.00"), d("1542.25")), "100.000000"},
		{"fee half even down", Fee(d("100.50"), d("0.01")), "1.00"},
		{"fee half even up", Fee(d("101.50"), d("0.01")), "1.02"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.got.StringFixed(c.got.Exponent()*-1), c.name)
		})
	}
}

func TestAdjustedRateNeverFavoursPartner(t *testing.T) {
	t.Parallel()
	// 1549.99 * 0.997 = 1545.34003: floor to 2 decimals is 1545.34.
	require.Equal(t, "1545.34", FormatRate(AdjustedRate(d("1549.99"), d("0.003"))))
	// 1549.99 * 0.9971 = 1545.490529 -> 1545.49 (floor, not 1545.49 by luck of half-up)
	require.Equal(t, "1545.49", FormatRate(AdjustedRate(d("1549.99"), d("0.0029"))))
	// A value just below a boundary is not rounded up: 1000.00 * 0.99999 = 999.99
	require.Equal(t, "999.99", FormatRate(AdjustedRate(d("1000.00"), d("0.00001"))))
}

func TestTokensFromFiatCoversFiat(t *testing.T) {
	t.Parallel()
	rate := d("1542.25")
	for _, f := range []string{"1000", "1000.01", "777.77", "50000000.00", "1234.56"} {
		tokens := TokensFromFiat(d(f), rate)
		require.LessOrEqual(t, -tokens.Exponent(), int32(TokenScale))
		// The deposit covers the fiat amount, and one unit less would not.
		require.True(t, tokens.Mul(rate).GreaterThanOrEqual(d(f)), f)
		require.True(t, tokens.Sub(d("0.000001")).Mul(rate).LessThan(d(f)), f)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	_, err := ParseFiat("1.005")
	require.Error(t, err)
	v, err := ParseFiat("1.50")
	require.NoError(t, err)
	require.Equal(t, "1.50", FormatFiat(v))
	v, err = ParseFiat("1.500") // trailing zeros are not extra precision
	require.NoError(t, err)
	require.Equal(t, "1.50", FormatFiat(v))
	_, err = ParseFiat("-1")
	require.Error(t, err)
	_, err = ParseFiat("abc")
	require.Error(t, err)
	v, err = ParseTokens("0.000001")
	require.NoError(t, err)
	require.Equal(t, "0.000001", FormatTokens(v))
	_, err = ParseTokens("0.0000001")
	require.Error(t, err)
}
