package metrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/metrics"
)

// Each provider has a series per state, 1 on its current one: a provider moving
// from active to rate_limited moves its 1, and a state this build does not list is
// shown rather than dropped.
func TestChainProviderStates(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	c := m.Chain()
	at := time.Now()
	c.ChainProviders(chain.BEP20, []chain.ProviderState{
		{Name: "https://a.example", State: chain.ProviderActive, Head: 10, Since: at},
		{Name: "wss://b.example", State: chain.ProviderStandby, Head: 10, Push: true, Since: at},
	})
	value := func(provider, state string) float64 {
		return series(t, scrape(t, m), "partnerd_chain_provider_state",
			map[string]string{"network": chain.BEP20, "provider": provider, "state": state}).GetGauge().GetValue()
	}
	require.Equal(t, 1.0, value("https://a.example", chain.ProviderActive))
	require.Equal(t, 0.0, value("https://a.example", chain.ProviderRateLimited))
	require.Equal(t, 1.0, value("wss://b.example", chain.ProviderStandby))
	require.Equal(t, 0.0, value("wss://b.example", chain.ProviderNoLogs))

	c.ChainProviders(chain.BEP20, []chain.ProviderState{
		{Name: "https://a.example", State: chain.ProviderRateLimited, Error: "HTTP 429", Since: at},
		{Name: "wss://b.example", State: "quarantined", Push: true, Since: at},
	})
	require.Equal(t, 0.0, value("https://a.example", chain.ProviderActive))
	require.Equal(t, 1.0, value("https://a.example", chain.ProviderRateLimited))
	require.Equal(t, 0.0, value("wss://b.example", chain.ProviderStandby))
	require.Equal(t, 1.0, value("wss://b.example", "quarantined"))
}
