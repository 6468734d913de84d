package rpc

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"partnerd/internal/chain"
)

// Dialect is what differs between the nodes of the networks: the chain id mainnet
// reports, the address form of logs, and the error texts the node software sends.
// Everything else is one client.
type Dialect struct {
	Network string
	// Node names the node software the texts come from.
	Node string
	// MainnetChainID is the chain id mainnet reports (CHAIN_ID_<NETWORK>'s default).
	MainnetChainID *big.Int
	// tron: addresses may come with Tron's 0x41 prefix (21 bytes).
	tron bool
	// texts are the node's own messages, by kind, checked before the common ones.
	texts map[string][]string
}

// Dialects per network.
var (
	// BSC is BNB Smart Chain (bsc, a geth fork) and its providers.
	BSC = Dialect{Network: chain.BEP20, Node: "bsc", MainnetChainID: big.NewInt(56),
		texts: map[string][]string{
			KindRange:   {"exceed maximum block range", "block range too large", "block range is too wide", "range too large"},
			KindResults: {"query returned more than", "log response size exceeded", "response size should not greater than"},
		}}
	// JavaTron is a java-tron full node's /jsonrpc (TronGrid serves the same).
	JavaTron = Dialect{Network: chain.TRC20, Node: "java-tron", MainnetChainID: big.NewInt(0x2b6653dc), tron: true,
		texts: map[string][]string{
			KindRange:   {"exceed max block range"},
			KindResults: {"query returned more than"},
		}}
)

// For returns network's dialect.
func For(network string) (Dialect, error) {
	switch network {
	case chain.BEP20:
		return BSC, nil
	case chain.TRC20:
		return JavaTron, nil
	}
	return Dialect{}, fmt.Errorf("no JSON-RPC dialect for network %q", network)
}

// The texts other nodes and providers send (geth, Erigon, Infura, Alchemy,
// QuickNode, Ankr, NodeReal, GetBlock …), by kind.
var common_ = map[string][]string{
	KindResults: {"query returned more than", "too many results", "more than 10000 results", "results exceed",
		"log response size", "response size exceeded", "too many logs", "returned too many"},
	KindRange: {"block range", "blocks range", "range too large", "range is too large", "exceed max block range",
		"exceed maximum block range", "max range", "too wide", "range limit", "range exceeds"},
	KindRateLimit: {"limit exceeded", "rate limit", "too many requests", "request limit", "exceeded the quota",
		"quota exceeded", "capacity exceeded", "throttl"},
	KindRefused: {"method not found", "does not exist", "is not available", "not supported", "is disabled",
		"not enabled", "method not allowed", "unsupported method"},
}

// classify names a JSON-RPC error's kind by the node's message first (a result cap
// arrives as -32005 on Infura and java-tron, the same code as a rate limit), then
// by its code.
func (d Dialect) classify(method string, code int, message string) string {
	m := strings.ToLower(message)
	for _, kind := range []string{KindResults, KindRange} {
		for _, t := range append(d.texts[kind], common_[kind]...) {
			if strings.Contains(m, t) {
				return kind
			}
		}
	}
	for _, kind := range []string{KindRateLimit, KindRefused} {
		for _, t := range common_[kind] {
			if strings.Contains(m, t) {
				return kind
			}
		}
	}
	switch code {
	case -32005, 429:
		return KindRateLimit
	case -32601:
		return KindRefused
	}
	return KindRPC
}

// filterAddress renders a contract for a log filter: 20-byte hex on both networks
// (java-tron takes it as BNB Smart Chain does).
func (d Dialect) filterAddress(a common.Address) string {
	return strings.ToLower(a.Hex())
}

func (d Dialect) address(s string) (common.Address, error) {
	b, err := hexBytes(s)
	if err != nil {
		return common.Address{}, err
	}
	if d.tron && len(b) == 21 && b[0] == chain.TronPrefix {
		b = b[1:]
	}
	if len(b) != common.AddressLength {
		return common.Address{}, fmt.Errorf("%q is not a 20-byte address", s)
	}
	return common.BytesToAddress(b), nil
}

// log reads one log leniently: what the watcher does not use may be missing.
func (d Dialect) log(r rawLog) (Log, error) {
	var lg Log
	var err error
	if lg.Address, err = d.address(r.Address); err != nil {
		return lg, err
	}
	for _, t := range r.Topics {
		h, err := hash(t)
		if err != nil {
			return lg, err
		}
		lg.Topics = append(lg.Topics, h)
	}
	if lg.Data, err = hexBytes(r.Data); err != nil {
		return lg, err
	}
	if lg.BlockNumber, err = quantity64(r.BlockNumber); err != nil {
		return lg, fmt.Errorf("log blockNumber: %w", err)
	}
	if lg.BlockHash, err = hash(r.BlockHash); err != nil {
		return lg, fmt.Errorf("log blockHash: %w", err)
	}
	if lg.TxHash, err = hash(r.TxHash); err != nil {
		return lg, fmt.Errorf("log transactionHash: %w", err)
	}
	idx, err := quantity64(r.LogIndex)
	if err != nil {
		return lg, fmt.Errorf("log logIndex: %w", err)
	}
	lg.Index, lg.Removed = uint(idx), r.Removed
	return lg, nil
}
