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
	// RPC maps a network to its JSON-RPC URL (CHAIN_RPC_<NETWORK>); a network
	// without one is not watched (staging only).
	RPC map[string]string
	// Tokens are the token contracts (TOKEN_CONTRACTS).
	Tokens []chain.Token
	// PollInterval is CHAIN_POLL_INTERVAL.
	PollInterval time.Duration
	// StartBlocks are CHAIN_START_BLOCK_<NETWORK>: where a first start begins.
	StartBlocks map[string]uint64
	// Off lists the networks of Pairs that are not watched (no RPC URL; staging).
	Off []string
	// Headers are CHAIN_RPC_HEADERS_<NETWORK>: sent with every call (API keys;
	// never logged).
	Headers map[string]http.Header
	// Timeout is CHAIN_RPC_TIMEOUT: the bound of every call.
	Timeout time.Duration
	// ChainIDs are CHAIN_ID_<NETWORK>: the chain id each node must report.
	ChainIDs map[string]*big.Int
}

// loadChain reads the chain settings for the networks of c.Pairs.
func loadChain(c *Config, get func(key, def string) string, bad func(string, error)) {
	c.Chain.RPC, c.Chain.StartBlocks = map[string]string{}, map[string]uint64{}
	c.Chain.Headers, c.Chain.ChainIDs = map[string]http.Header{}, map[string]*big.Int{}
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
		url := get(key, "")
		switch {
		case url == "" && c.Env == Production:
			bad(key, errors.New("production takes real deposits; set the network's JSON-RPC URL"))
		case url == "":
			c.Chain.Off = append(c.Chain.Off, n)
		case !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://"):
			bad(key, fmt.Errorf("%q: want an http(s) URL (JSON-RPC over HTTP)", url))
		default:
			c.Chain.RPC[n] = url
		}
		hkey := "CHAIN_RPC_HEADERS_" + strings.ToUpper(n)
		if h, err := parseHeaders(get(hkey, "")); err != nil {
			bad(hkey, err)
		} else if len(h) > 0 {
			c.Chain.Headers[n] = h
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
