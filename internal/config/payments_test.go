package config

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

func TestPaymentDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.True(t, c.Payments.Tolerance.Value.IsZero())
	require.Equal(t, "1", c.Payments.MinDeposit.String())
	require.Equal(t, time.Hour, c.Payments.LateWindow)
}

func TestPaymentSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{"UNDERPAYMENT_TOLERANCE": "0.5%", "MIN_DEPOSIT": "0.10", "LATE_PAYMENT_WINDOW": "15m"}))
	require.NoError(t, err)
	// 0.5 % of 99.999999 is 0.4999999995, rounded down to the token's 6 decimals.
	require.Equal(t, "0.499999", c.Payments.Tolerance.Of(decimal.RequireFromString("99.999999")).String())
	require.Equal(t, "0.1", c.Payments.MinDeposit.String())
	require.Equal(t, 15*time.Minute, c.Payments.LateWindow)

	c, err = Load(env(map[string]string{"UNDERPAYMENT_TOLERANCE": "1.00"}))
	require.NoError(t, err)
	require.Equal(t, "1", c.Payments.Tolerance.Of(decimal.RequireFromString("500")).String(), "an absolute tolerance ignores the amount")

	for key, bad := range map[string][]string{
		"UNDERPAYMENT_TOLERANCE": {"-1", "100%", "abc%", "0.0000001", "lots"},
		"MIN_DEPOSIT":            {"-0.5", "0.0000001", "one"},
		"LATE_PAYMENT_WINDOW":    {"-1h", "soon"},
	} {
		for _, v := range bad {
			_, err := Load(env(map[string]string{key: v}))
			require.ErrorContains(t, err, key, "%s=%s", key, v)
		}
	}
}
