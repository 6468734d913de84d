package config

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"partnerd/internal/chain"
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
}

// loadChain reads the chain settings for the networks of c.Pairs.
func loadChain(c *Config, get func(key, def string) string, bad func(string, error)) {
	c.Chain.RPC, c.Chain.StartBlocks = map[string]string{}, map[string]uint64{}
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
		case !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") &&
			!strings.HasPrefix(url, "ws://") && !strings.HasPrefix(url, "wss://"):
			bad(key, fmt.Errorf("%q: want an http(s) or ws(s) URL", url))
		default:
			c.Chain.RPC[n] = url
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
