package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSettlementSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, Settlement{Liquidity: AdapterSimulated, Payout: AdapterSimulated, Mode: SettlementSimulator, Delay: 5 * time.Second}, c.Settlement)

	c, err = Load(env(map[string]string{"SETTLEMENT_MODE": "auto", "SIMULATED_SETTLEMENT_DELAY": "250ms", "LIQUIDITY": "operator"}))
	require.NoError(t, err)
	require.Equal(t, Settlement{Liquidity: AdapterOperator, Payout: AdapterSimulated, Mode: SettlementAuto, Delay: 250 * time.Millisecond}, c.Settlement)

	_, err = Load(env(map[string]string{"LIQUIDITY": "bank", "PAYOUT": "x", "SETTLEMENT_MODE": "soon", "SIMULATED_SETTLEMENT_DELAY": "-1s"}))
	for _, key := range []string{"LIQUIDITY", "PAYOUT", "SETTLEMENT_MODE", "SIMULATED_SETTLEMENT_DELAY"} {
		require.ErrorContains(t, err, key)
	}

	prod := map[string]string{
		"APP_ENV": "production", "RATE_FEED_URL": "https://rates.example/ngn", "RATE_FEED_FIELDS": "usdt=data.usdt",
		"XPUB_BEP20": otherXPub, "XPUB_TRC20": otherXPub, "CURSOR_SECRET": strings.Repeat("s", 32), "SECRETS_KEYS": "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"DATABASE_URL":    "postgres://u@db/partnerd",
		"SETTLEMENT_MODE": "auto", "SCREENING": "list", "PUBLIC_URL": "https://partnerd.example.com",
		"CHAIN_RPC_BEP20": "https://bsc.example/rpc", "CHAIN_RPC_TRC20": "https://tron.example/jsonrpc",
	}
	c, err = Load(env(prod))
	require.NoError(t, err)
	require.Equal(t, AdapterOperator, c.Settlement.Liquidity, "production waits for the back office")
	require.Equal(t, AdapterOperator, c.Settlement.Payout)
	require.Equal(t, SettlementSimulator, c.Settlement.Mode, "production ignores SETTLEMENT_MODE")

	prod["PAYOUT"] = "simulated"
	_, err = Load(env(prod))
	require.ErrorContains(t, err, "PAYOUT", "production settles for real")
}
