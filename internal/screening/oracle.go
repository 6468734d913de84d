package screening

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ethereum/go-ethereum/common"

	"partnerd/internal/chain"
)

// OracleCaller is what an Oracle reads the chain with: the head, and eth_call at a
// block. The network's providers.Pool is one (its failover covers the oracle's
// calls too); an rpc.Client is another.
type OracleCaller interface {
	BlockNumber(ctx context.Context) (uint64, error)
	Call(ctx context.Context, to common.Address, data []byte, block uint64) ([]byte, error)
}

// isSanctioned is the selector of the oracle's
// function isSanctioned(address addr) external view returns (bool): the first
// four bytes of keccak256("isSanctioned(address)") (the tests call the compiled contract with it). It is
// written out so the server does not link go-ethereum's crypto package (its
// secp256k1 is the development chain's, not the server's).
var isSanctioned = []byte{0xdf, 0x59, 0x2f, 0x7d}

// Oracle screens addresses with an on-chain sanctions oracle on one EVM network:
// a contract with Chainalysis' interface, isSanctioned(address) → bool, called
// with eth_call at the head the network's providers report. The answer is pinned
// to that block, so the finding says which state of the list it read. It answers
// for its own network only.
type Oracle struct {
	network  string
	contract common.Address
	caller   OracleCaller
}

// NewOracle returns the oracle at contract on network (e.g. "bep20"), read
// through caller (the network's provider pool).
func NewOracle(network string, contract common.Address, caller OracleCaller) *Oracle {
	return &Oracle{network: network, contract: contract, caller: caller}
}

// Kind is "oracle".
func (o *Oracle) Kind() string { return "oracle" }

// Covers reports whether network is the oracle's own: the contract's list says
// nothing about addresses on other networks.
func (o *Oracle) Covers(network string) bool { return network == o.network }

// Source names the oracle in findings: its network and contract, e.g.
// "bep20 oracle 0x40C5…".
func (o *Oracle) Source() string {
	return o.network + " oracle " + chain.FormatAddress(o.network, o.contract)
}

// Screen asks the oracle whether address (in the network's form: 0x hex on EVM
// networks) is sanctioned, at the current head. A hit carries the category
// "sanctions"; Version is the block read. An answer that is not an ABI bool (a
// contract that is not the oracle, an address without code) is an error, never
// a clear.
func (o *Oracle) Screen(ctx context.Context, network, address string) (Finding, error) {
	f := Finding{Screener: o.Kind(), Source: o.Source()}
	if !o.Covers(network) {
		return f, fmt.Errorf("the %s oracle does not answer for network %s", o.network, network)
	}
	addr, err := chain.ParseAddress(network, address)
	if err != nil {
		return f, fmt.Errorf("screen %q: %w", address, err)
	}
	head, err := o.caller.BlockNumber(ctx)
	if err != nil {
		return f, fmt.Errorf("read the %s head: %w", o.network, err)
	}
	data := make([]byte, 0, 4+32)
	data = append(data, isSanctioned...)
	data = append(data, common.LeftPadBytes(addr.Bytes(), 32)...)
	out, err := o.caller.Call(ctx, o.contract, data, head)
	if err != nil {
		return f, fmt.Errorf("isSanctioned at block %d: %w", head, err)
	}
	hit, err := abiBool(out)
	if err != nil {
		return f, fmt.Errorf("isSanctioned at block %d: %w (is %s the sanctions oracle?)", head, err, chain.FormatAddress(o.network, o.contract))
	}
	f.Version = "block " + strconv.FormatUint(head, 10)
	f.Hit = hit
	if hit {
		f.Category, f.Name = "sanctions", "sanctioned address"
	}
	return f, nil
}

// abiBool reads an ABI-encoded bool: 32 bytes, 0 or 1.
func abiBool(out []byte) (bool, error) {
	if len(out) != 32 {
		return false, fmt.Errorf("the answer is %d bytes, not a 32-byte bool", len(out))
	}
	for _, b := range out[:31] {
		if b != 0 {
			return false, errors.New("the answer is not a bool")
		}
	}
	switch out[31] {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, errors.New("the answer is not a bool")
}
