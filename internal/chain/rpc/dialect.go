package rpc

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"partnerd/internal/chain"
)

// Dialect is what differs between the nodes of the networks: the chain id mainnet
// reports and the address form of logs. Everything else is one client, and the
// error texts of every node and provider are read by one classifier (Classify).
type Dialect struct {
	Network string
	// Node names the node software the texts come from.
	Node string
	// MainnetChainID is the chain id mainnet reports (CHAIN_ID_<NETWORK>'s default).
	MainnetChainID *big.Int
	// tron: addresses may come with Tron's 0x41 prefix (21 bytes).
	tron bool
	// NoBlooms: the node sends no logsBloom (java-tron writes 256 zero bytes,
	// "no value", in BlockResult), so a block's header cannot say whether a log
	// may be in it; the watcher then trusts an empty answer near the head only
	// once it is asked again deep enough (package chain/scanner).
	NoBlooms bool
	// CallsAtLatest: eth_call runs only at "latest" (java-tron refuses a block
	// number: "QUANTITY not supported, just support TAG as latest").
	CallsAtLatest bool
}

// Dialects per network.
var (
	// BSC is BNB Smart Chain (bsc, a geth fork) and its providers.
	BSC = Dialect{Network: chain.BEP20, Node: "bsc", MainnetChainID: big.NewInt(56)}
	// JavaTron is a java-tron full node's /jsonrpc (TronGrid serves the same).
	JavaTron = Dialect{Network: chain.TRC20, Node: "java-tron", MainnetChainID: big.NewInt(0x2b6653dc), tron: true,
		NoBlooms: true, CallsAtLatest: true}
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
