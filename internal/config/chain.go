package config

import (
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"partnerd/internal/chain"
	"partnerd/internal/chain/rpc"
)

// Chain is the deposit watcher's settings.
type Chain struct {
	// Providers maps a network to its JSON-RPC providers, in the order
	// CHAIN_RPC_<NETWORK> lists them (comma-separated http(s):// or ws(s):// URLs);
	// a network without one is not watched (staging only).
	Providers map[string][]Provider
	// Finality pins a network's finality rule (CHAIN_FINALITY_<NETWORK>:
	// chain.FinalityTag or chain.FinalityConfirmations); absent, the watcher asks the node.
	Finality map[string]string
	// Tokens are the token contracts (TOKEN_CONTRACTS).
	Tokens []chain.Token
	// PollInterval is CHAIN_POLL_INTERVAL.
	PollInterval time.Duration
	// StartBlocks are CHAIN_START_BLOCK_<NETWORK>: where a first start begins.
	StartBlocks map[string]uint64
	// Off lists the networks of Pairs that are not watched (no RPC URL; staging).
	Off []string
	// Timeout is CHAIN_RPC_TIMEOUT: the bound of every call.
	Timeout time.Duration
	// ChainIDs are CHAIN_ID_<NETWORK>: the chain id each node must report.
	ChainIDs map[string]*big.Int
	// MaxLag are CHAIN_RPC_MAX_LAG_<NETWORK>: how many blocks a provider's head may
	// lag the best known head before another provider answers (absent: the
	// network's default, providers.DefaultMaxLag).
	MaxLag map[string]uint64
}

// Provider is one JSON-RPC endpoint of a network.
type Provider struct {
	// URL is the endpoint (http(s):// is polled; ws(s):// also pushes new heads).
	URL string
	// Headers are sent with every call: CHAIN_RPC_HEADERS_<NETWORK> (every
	// provider's) then CHAIN_RPC_HEADERS_<NETWORK>_<N> (the N-th provider's, from 1),
	// API keys mostly; never logged.
	Headers http.Header
	// Rate caps the calls a second sent to the provider (CHAIN_RPC_RATE_<NETWORK>_<N>,
	// e.g. a free tier's quota; 0: no cap); calls beyond it go to the next provider.
	Rate float64
}

// loadChain reads the chain settings for the networks of c.Pairs.
func loadChain(c *Config, get func(key, def string) string, bad func(string, error)) {
	c.Chain.Providers, c.Chain.StartBlocks = map[string][]Provider{}, map[string]uint64{}
	c.Chain.Finality, c.Chain.ChainIDs, c.Chain.MaxLag = map[string]string{}, map[string]*big.Int{}, map[string]uint64{}
	c.Chain.Timeout = duration(get("CHAIN_RPC_TIMEOUT", "10s"), "CHAIN_RPC_TIMEOUT", bad)
	toks, err := chain.ParseTokenContracts(get("TOKEN_CONTRACTS", chain.DefaultTokenContracts))
	if err != nil {
		bad("TOKEN_CONTRACTS", err)
	}
	c.Chain.Tokens = toks
	c.Chain.PollInterval = duration(get("CHAIN_POLL_INTERVAL", "3s"), "CHAIN_POLL_INTERVAL", bad)
	networks := map[string]bool{}
	for _, p := range c.Pairs {
		networks[p.Network] = true
		found := false
		for _, t := range toks {
			found = found || (t.Network == p.Network && t.Symbol == p.Token)
		}
		if !found && c.Env == Production {
			bad("TOKEN_CONTRACTS", fmt.Errorf("no contract for %s on %s, a supported pair", p.Token, p.Network))
		}
	}
	names := make([]string, 0, len(networks))
	for n := range networks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		key := "CHAIN_RPC_" + strings.ToUpper(n)
		urls := splitList(get(key, ""))
		switch {
		case len(urls) == 0 && c.Env == Production:
			bad(key, errors.New("production takes real deposits; set the network's JSON-RPC URL (one or more, comma-separated)"))
		case len(urls) == 0:
			c.Chain.Off = append(c.Chain.Off, n)
		}
		hkey := "CHAIN_RPC_HEADERS_" + strings.ToUpper(n)
		common, err := parseHeaders(get(hkey, ""))
		if err != nil {
			bad(hkey, err)
		}
		for i, u := range urls {
			if !hasScheme(u, "http://", "https://", "ws://", "wss://") {
				// Never quote the URL: providers put keys in it.
				bad(key, fmt.Errorf("provider %d: want an http(s):// or ws(s):// URL (JSON-RPC over HTTP or WebSocket)", i+1))
				continue
			}
			h := common.Clone()
			own := fmt.Sprintf("%s_%d", hkey, i+1)
			if extra, err := parseHeaders(get(own, "")); err != nil {
				bad(own, err)
			} else {
				for name, vs := range extra {
					h[name] = vs
				}
			}
			rkey := fmt.Sprintf("CHAIN_RPC_RATE_%s_%d", strings.ToUpper(n), i+1)
			r, err := strconv.ParseFloat(get(rkey, "0"), 64)
			if err != nil || r < 0 {
				bad(rkey, fmt.Errorf("want calls a second (0: no cap)"))
			}
			c.Chain.Providers[n] = append(c.Chain.Providers[n], Provider{URL: u, Headers: h, Rate: r})
		}
		lagKey := "CHAIN_RPC_MAX_LAG_" + strings.ToUpper(n)
		if s := get(lagKey, ""); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil || v == 0 {
				bad(lagKey, fmt.Errorf("%q: want a number of blocks (1 or more)", s))
			}
			c.Chain.MaxLag[n] = v
		}
		fkey := "CHAIN_FINALITY_" + strings.ToUpper(n)
		switch f := strings.TrimSpace(get(fkey, "")); f {
		case "":
		case chain.FinalityTag, chain.FinalityConfirmations:
			c.Chain.Finality[n] = f
		default:
			bad(fkey, fmt.Errorf("%q: want %s or %s (unset: ask the node)", f, chain.FinalityTag, chain.FinalityConfirmations))
		}
		idKey := "CHAIN_ID_" + strings.ToUpper(n)
		if d, err := rpc.For(n); err == nil {
			c.Chain.ChainIDs[n] = d.MainnetChainID
		}
		if v := get(idKey, ""); v != "" {
			id, err := rpc.ParseQuantity(v)
			if err != nil {
				bad(idKey, fmt.Errorf("%q: want a chain id, decimal or 0x hex (bep20 56, trc20 0x2b6653dc)", v))
			}
			c.Chain.ChainIDs[n] = id
		}
		startKey := "CHAIN_START_BLOCK_" + strings.ToUpper(n)
		if s := get(startKey, ""); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				bad(startKey, fmt.Errorf("%q: want a block number", s))
			}
			c.Chain.StartBlocks[n] = v
		}
	}
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func hasScheme(u string, schemes ...string) bool {
	for _, s := range schemes {
		if strings.HasPrefix(strings.ToLower(u), s) {
			return true
		}
	}
	return false
}

// parseHeaders reads comma-separated Name=value pairs. Errors never quote a value
// (they may be keys).
func parseHeaders(s string) (http.Header, error) {
	h := http.Header{}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" || strings.ContainsAny(name, " \t:") {
			return nil, fmt.Errorf("item %d: want Name=value (comma-separated)", i+1)
		}
		h.Add(name, value)
	}
	return h, nil
}
