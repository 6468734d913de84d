package lifecycle

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"partnerd/internal/kit/apperr"
)

// An executed rate and an operator's NGN amount are greater than zero: zero and
// negatives are refused naming the field, any positive decimal passes.
func TestSaleFigures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    string
		ok   bool
		name string
	}{{"0", false, "zero"}, {"0.00", false, "zero with decimals"}, {"-1542.25", false, "negative"}, {"0.01", true, "the least"}, {"1542.25", true, "a rate"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := decimal.RequireFromString(tc.v)
			for field, check := range map[string]func(decimal.Decimal) error{"/rate": CheckRate, "/fiat_amount": CheckFiat} {
				err := check(v)
				if tc.ok {
					require.NoError(t, err, field)
					continue
				}
				e, ok := apperr.As(err)
				require.True(t, ok, field)
				require.Equal(t, apperr.InvalidRequest, e.Code)
				require.Equal(t, field, e.Details[0].Field)
			}
		})
	}
}
