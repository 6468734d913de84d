package metrics

import (
	"slices"
	"sync"
	"time"

	"partnerd/internal/chain"

	"github.com/prometheus/client_golang/prometheus"
)

// Chain holds the deposit watcher's series, per network: the head block seen, the
// last block scanned, their difference (lag), the node's finalized block, RPC
// errors by kind, unmatched deposits and each provider's state.
type Chain struct {
	head, scanned, finalizedBlock *prometheus.GaugeVec
	finality                      *prometheus.GaugeVec
	watcherOff                    *prometheus.GaugeVec
	providers                     *prometheus.GaugeVec
	rpcErrors                     *prometheus.CounterVec
	unmatched                     *prometheus.CounterVec
	lag                           *prometheus.Desc

	mu       sync.Mutex
	networks map[string]*progress
	// now is the clock the lag is estimated by (time.Now; a test's clock).
	now func() time.Time
}

// progress is what the lag of one network is measured from: the best head seen,
// when it last rose, how long a block has taken on average, and the last block
// scanned.
type progress struct {
	head, scanned uint64
	headAt        time.Time
	// interval is the moving average of the time per block between head rises.
	interval time.Duration
}

// lagAt is how far the scanner is behind the head the network has now: the head
// seen, or, when no new head has been seen for more than two blocks' time (the
// only provider frozen or hung), the head the block time says the chain has
// reached since. A frozen head then shows as lag growing, not as 0.
func (p *progress) lagAt(now time.Time) float64 {
	head := p.head
	if p.interval > 0 && !p.headAt.IsZero() {
		if quiet := now.Sub(p.headAt); quiet > 2*p.interval {
			head += uint64(quiet / p.interval)
		}
	}
	if head <= p.scanned {
		return 0
	}
	return float64(head - p.scanned)
}

// Describe and Collect make the lag a series computed when scraped (lagAt), so it
// grows while the watcher is stuck and records nothing.
func (c *Chain) Describe(ch chan<- *prometheus.Desc) { ch <- c.lag }

// Collect emits each network's lag at the clock's now.
func (c *Chain) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for network, p := range c.networks {
		if p.scanned == 0 {
			continue // nothing scanned yet: no lag to tell
		}
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, p.lagAt(now), network)
	}
}

// Clock sets the clock the lag is estimated by (tests; time.Now otherwise).
func (c *Chain) Clock(now func() time.Time) {
	c.mu.Lock()
	c.now = now
	c.mu.Unlock()
}

// network returns network's progress (c.mu held).
func (c *Chain) network(network string) *progress {
	p, ok := c.networks[network]
	if !ok {
		p = &progress{}
		c.networks[network] = p
	}
	return p
}

// Chain returns the chain watcher's metrics, registered on first use (the watcher
// records into them; the operators' overview reads the database, not them).
func (m *Metrics) Chain() *Chain {
	m.chainOnce.Do(func() { m.chain = m.newChain() })
	return m.chain
}

func (m *Metrics) newChain() *Chain {
	c := &Chain{networks: map[string]*progress{}, now: time.Now}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "chain", Name: name, Help: help}, []string{"network"})
	}
	c.head = gauge("head_block", "The newest block number the network's node reported.")
	c.scanned = gauge("scanned_block", "The last block the network's scanner fully processed.")
	c.lag = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "chain", "lag_blocks"),
		"Head block minus last scanned block; the head is the best one seen, or, when none newer has come for more than two blocks' time, the one the average block time says the chain has reached (a frozen provider shows as lag growing).",
		[]string{"network"}, nil)
	c.finalizedBlock = gauge("finalized_block", "The node's finalized block (BNB Smart Chain's fast finality, Tron's solidified block), when last read.")
	c.finality = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "chain", Name: "finality_state",
		Help: "1 for the network's finality state: tag (deposits wait for the node's finalized block), confirmations (count alone), unknown (the node serves the tag but has not answered it lately: nothing confirms)."}, []string{"network", "state"})
	c.providers = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "chain", Name: "provider_state",
		Help: "1 for each JSON-RPC provider's state, 0 for its other states: active (read now), standby (healthy, ready for a fail-over), failing, rate_limited, lagging (head behind the others), behind (its answers show it behind its own head: a head gone back, a backend behind its load balancer), syncing (behind, and eth_syncing says it is catching up), no_logs (does not serve eth_getLogs), action_needed (refuses the watcher until a person fixes its key, plan or URL)."}, []string{"network", "provider", "state"})
	c.watcherOff = gauge("watcher_off", "1 when the network's deposit watcher is off (no CHAIN_RPC_<NETWORK>, no token contract, no provider on the configured chain): deposits there arrive only through the simulator; /readyz says degraded with the reason.")
	c.rpcErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "chain",
		Name: "rpc_errors_total", Help: "Failed JSON-RPC calls of the deposit watcher, by network and kind (range, results, rate_limit, refused, not_ready, operator, subscriptions, timeout, transport, http, decode, rpc, unsupported; and successful answers that were wrong: behind (a head gone back), missing_block (no block at or below the provider's own head), missing_logs (no logs where a block's header or a later answer shows some))."}, []string{"network", "kind"})
	c.unmatched = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "chain",
		Name: "unmatched_deposits_total", Help: "Transfers to deposit addresses stored as unmatched deposits for operators, by network."}, []string{"network"})
	m.reg.MustRegister(c, c.head, c.scanned, c.finalizedBlock, c.finality, c.watcherOff, c.providers, c.rpcErrors, c.unmatched)
	return c
}

// Watch makes network's series appear (at zero) before anything happens on it.
func (c *Chain) Watch(network string) {
	c.WatcherOff(network, false)
	for _, kind := range []string{"rate_limit", "timeout", "refused"} {
		c.rpcErrors.WithLabelValues(network, kind)
	}
	c.unmatched.WithLabelValues(network)
}

// ChainHead records the network's head block, and how long its blocks take.
func (c *Chain) ChainHead(network string, block uint64) {
	c.mu.Lock()
	now := c.now()
	p := c.network(network)
	if block > p.head {
		if p.head > 0 && !p.headAt.IsZero() {
			per := now.Sub(p.headAt) / time.Duration(block-p.head)
			if p.interval == 0 {
				p.interval = per
			} else {
				p.interval = (3*p.interval + per) / 4
			}
		}
		p.head, p.headAt = block, now
	}
	c.mu.Unlock()
	c.head.WithLabelValues(network).Set(float64(block))
}

// ChainScanned records the network's last scanned block (its lag is computed
// when scraped: Collect).
func (c *Chain) ChainScanned(network string, block uint64) {
	c.scanned.WithLabelValues(network).Set(float64(block))
	c.mu.Lock()
	c.network(network).scanned = block
	c.mu.Unlock()
}

// ChainFinalized records the node's finalized block.
func (c *Chain) ChainFinalized(network string, block uint64) {
	c.finalizedBlock.WithLabelValues(network).Set(float64(block))
}

// WatcherOff records whether network's deposit watcher is off.
func (c *Chain) WatcherOff(network string, off bool) {
	v := 0.0
	if off {
		v = 1
	}
	c.watcherOff.WithLabelValues(network).Set(v)
}

// ChainFinality records the network's finality state (chain.Finality*).
func (c *Chain) ChainFinality(network, state string) {
	for _, st := range []string{chain.FinalityTag, chain.FinalityConfirmations, chain.FinalityUnknown} {
		v := 0.0
		if st == state {
			v = 1
		}
		c.finality.WithLabelValues(network, st).Set(v)
	}
}

// providerStates are the chain.Provider* states, each a series per provider.
var providerStates = []string{chain.ProviderActive, chain.ProviderStandby, chain.ProviderFailing,
	chain.ProviderRateLimited, chain.ProviderLagging, chain.ProviderBehind, chain.ProviderSyncing, chain.ProviderNoLogs, chain.ProviderActionNeeded}

// ChainProviders records each provider's state: 1 on its current state's series,
// 0 on the others (so an alert can match a state without knowing the rest).
func (c *Chain) ChainProviders(network string, states []chain.ProviderState) {
	for _, p := range states {
		for _, st := range providerStates {
			v := 0.0
			if st == p.State {
				v = 1
			}
			c.providers.WithLabelValues(network, p.Name, st).Set(v)
		}
		if !slices.Contains(providerStates, p.State) { // a state added since: shown, not dropped
			c.providers.WithLabelValues(network, p.Name, p.State).Set(1)
		}
	}
}

// ChainRPCError counts a failed call of kind kind.
func (c *Chain) ChainRPCError(network, kind string) { c.rpcErrors.WithLabelValues(network, kind).Inc() }

// UnmatchedDeposit counts an unmatched deposit.
func (c *Chain) UnmatchedDeposit(network string) { c.unmatched.WithLabelValues(network).Inc() }
