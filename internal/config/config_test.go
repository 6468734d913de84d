package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestStagingDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, Staging, c.Env)
	require.Equal(t, "sqlite:data/partnerd.db", c.DatabaseURL)
	require.Equal(t, ":8080", c.ListenAddr)
	require.Equal(t, "static", c.RateSource)
	require.Len(t, c.Pairs, 2)
	require.Equal(t, "0.005", c.Spread.String())
}

func TestProductionRefusesDemoRates(t *testing.T) {
	t.Parallel()
	_, err := Load(env(map[string]string{"APP_ENV": "production", "RATE_SOURCE": "static"}))
	require.ErrorContains(t, err, "RATE_SOURCE")
	_, err = Load(env(map[string]string{"APP_ENV": "production"}))
	require.ErrorContains(t, err, "RATE_FEED_URL")
	c, err := Load(env(map[string]string{"APP_ENV": "production", "RATE_FEED_URL": "https://rates.example/ngn", "RATE_FEED_FIELDS": "usdt=data.usdt"}))
	require.NoError(t, err)
	require.Equal(t, "http", c.RateSource)
}

func TestBadSettingsAreNamed(t *testing.T) {
	t.Parallel()
	for key, val := range map[string]string{
		"APP_ENV": "dev", "DATABASE_URL": "mysql://x", "QUOTE_SPREAD": "1.5", "PAIRS": "usdt:bep20",
		"RATE_MAX_AGE": "-1s", "STATIC_RATES": "usdt=abc", "RATE_SOURCE": "magic", "PARTNER_FEE_RATE": "x",
	} {
		_, err := Load(env(map[string]string{key: val}))
		require.ErrorContains(t, err, key, "%s=%s", key, val)
	}
}
