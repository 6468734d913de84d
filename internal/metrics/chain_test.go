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

// The lag is measured against the head the chain has now: while heads keep coming
// it is head minus scanned; when none comes for more than two blocks' time (the
// only provider frozen or hung, the scanner stuck), the average block time says
// how far the chain has gone since, and the lag grows instead of reading 0.
func TestChainLagGrowsWhileTheHeadIsFrozen(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	c := m.Chain()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	c.Clock(func() time.Time { return now })
	lag := func() float64 {
		return series(t, scrape(t, m), "partnerd_chain_lag_blocks", map[string]string{"network": chain.BEP20}).GetGauge().GetValue()
	}
	for block := uint64(100); block <= 110; block++ {
		c.ChainHead(chain.BEP20, block)
		now = now.Add(3 * time.Second)
	}
	c.ChainScanned(chain.BEP20, 108)
	require.Equal(t, 2.0, lag(), "heads coming: head minus scanned")

	c.ChainScanned(chain.BEP20, 110)
	now = now.Add(3 * time.Second) // within two blocks' time of the last head
	require.Equal(t, 0.0, lag())

	now = now.Add(60 * time.Second) // 66 s without a head: 22 blocks' time
	require.Equal(t, 22.0, lag(), "a frozen head shows as lag")
	now = now.Add(5 * time.Minute)
	require.Equal(t, 122.0, lag(), "and it keeps growing")

	c.ChainHead(chain.BEP20, 230) // the provider is back, the head caught up
	c.ChainScanned(chain.BEP20, 230)
	require.Equal(t, 0.0, lag())
}
