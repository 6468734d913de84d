package lifecycle

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

func TestToleranceOf(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	abs := Tolerance{Value: d("5")}
	require.Equal(t, "5", abs.Of(d("20")).String())
	require.Equal(t, "3", abs.Of(d("3")).String(), "never more than the amount itself")
	pct := Tolerance{Value: d("0.5"), Percent: true}
	require.Equal(t, "0.1", pct.Of(d("20")).String())
	require.Equal(t, "0.000001", pct.Of(d("0.000333")).String())
}
