package screening

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ethereum/go-ethereum/common"

	"partnerd/internal/chain"
	"partnerd/internal/chain/rpc"
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
// to that block, so the finding says which state of the list it read. Where the
// node runs eth_call only at its own head (java-tron: a block number is refused)
// the answer cannot be pinned: it is the state at the node's head when the call
// ran, which is no older than the head read just before (the pool sends the call
// only to a provider that has reached it), and the finding says so. It answers
// for its own network only.
type Oracle struct {
	network  string
	contract common.Address
	caller   OracleCaller
	// atLatest: the caller's eth_call runs at the node's head, not at the block
	// asked for.
	atLatest bool
}

// NewOracle returns the oracle at contract on network (e.g. "bep20"), read
// through caller (the network's provider pool).
func NewOracle(network string, contract common.Address, caller OracleCaller) *Oracle {
	return &Oracle{network: network, contract: contract, caller: caller, atLatest: callsAtLatest(network, caller)}
}

// callsAtLatest reports whether caller's eth_call runs only at the node's head.
// A client that names its dialect (rpc.Client) says it; otherwise (the provider
// pool) the network's dialect does, the one its providers' clients are built
// with.
func callsAtLatest(network string, caller OracleCaller) bool {
	if c, ok := caller.(interface{ Dialect() rpc.Dialect }); ok {
		return c.Dialect().CallsAtLatest
	}
	d, err := rpc.For(network)
	return err == nil && d.CallsAtLatest
}

// at names the state an answer came from, given the head read before the call:
// "block N" when the call was pinned to it; "latest, at or after block N" when
// the node ran it at its own head, N being the least that head can be.
func (o *Oracle) at(head uint64) string {
	n := strconv.FormatUint(head, 10)
	if o.atLatest {
		return "latest, at or after block " + n
	}
	return "block " + n
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
// "sanctions"; Version is the block read ("block N"), or on a network whose node
// calls only at its head, the least block the answer is for ("latest, at or after
// block N"). An answer that is not an ABI bool (a contract that is not the
// oracle, an address without code) is an error, never a clear.
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
		return f, fmt.Errorf("isSanctioned at %s: %w", o.at(head), err)
	}
	hit, err := abiBool(out)
	if err != nil {
		return f, fmt.Errorf("isSanctioned at %s: %w (is %s the sanctions oracle?)", o.at(head), err, chain.FormatAddress(o.network, o.contract))
	}
	f.Version = o.at(head)
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
