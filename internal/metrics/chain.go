package metrics

import (
	"slices"
	"sync"

	"partnerd/internal/chain"

	"github.com/prometheus/client_golang/prometheus"
)

// Chain holds the deposit watcher's series, per network: the head block seen, the
// last block scanned, their difference (lag), the node's finalized block, RPC
// errors by kind, unmatched deposits and each provider's state.
type Chain struct {
	head, scanned, lag, finalizedBlock *prometheus.GaugeVec
	finality                           *prometheus.GaugeVec
	watcherOff                         *prometheus.GaugeVec
	providers                          *prometheus.GaugeVec
	rpcErrors                          *prometheus.CounterVec
	unmatched                          *prometheus.CounterVec

	mu    sync.Mutex
	heads map[string]uint64
}

// Chain returns the chain watcher's metrics, registered on first use (the watcher
// records into them; the operators' overview reads the database, not them).
func (m *Metrics) Chain() *Chain {
	m.chainOnce.Do(func() { m.chain = m.newChain() })
	return m.chain
}

func (m *Metrics) newChain() *Chain {
	c := &Chain{heads: map[string]uint64{}}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "chain", Name: name, Help: help}, []string{"network"})
	}
	c.head = gauge("head_block", "The newest block number the network's node reported.")
	c.scanned = gauge("scanned_block", "The last block the network's scanner fully processed.")
	c.lag = gauge("lag_blocks", "Head block minus last scanned block.")
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
	m.reg.MustRegister(c.head, c.scanned, c.lag, c.finalizedBlock, c.finality, c.watcherOff, c.providers, c.rpcErrors, c.unmatched)
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

// ChainHead records the network's head block.
func (c *Chain) ChainHead(network string, block uint64) {
	c.mu.Lock()
	c.heads[network] = block
	c.mu.Unlock()
	c.head.WithLabelValues(network).Set(float64(block))
}

// ChainScanned records the network's last scanned block and the lag behind the head.
func (c *Chain) ChainScanned(network string, block uint64) {
	c.scanned.WithLabelValues(network).Set(float64(block))
	c.mu.Lock()
	head := c.heads[network]
	c.mu.Unlock()
	lag := 0.0
	if head > block {
		lag = float64(head - block)
	}
	c.lag.WithLabelValues(network).Set(lag)
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
