// Package chain holds what the deposit watcher knows about the chains it reads:
// the token contracts (TOKEN_CONTRACTS), Tron's address forms, and the exact
// conversion of token base units to the service's 6-decimal crypto amounts. The
// scanner itself (package chain/scanner) reads blocks and logs through package
// chain/rpc; this package has no RPC code.
package chain

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/shopspring/decimal"
)

// The networks the service knows.
const (
	BEP20 = "bep20"
	TRC20 = "trc20"
)

// DefaultTokenContracts are the mainnet USDT contracts.
const DefaultTokenContracts = "usdt:bep20=0x55d398326f99059fF775485246999027B3197955/18,usdt:trc20=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t/6"

// TransferTopic is topic 0 of Transfer(address indexed from, address indexed to, uint256 value).
var TransferTopic = common.HexToHash("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef")

// Token is one configured token contract.
type Token struct {
	Symbol  string
	Network string
	// Contract is the contract's 20-byte address, what log filters take.
	Contract common.Address
	// Decimals is the token's decimals (18 for USDT on BNB Smart Chain, 6 on Tron).
	Decimals int
}

// ParseTokenContracts parses TOKEN_CONTRACTS: comma-separated
// token:network=contract/decimals. A bep20 contract is 0x hex; a trc20 contract is a
// base58check Tron address or 0x hex (20 bytes, or 21 with the 0x41 prefix).
func ParseTokenContracts(s string) ([]Token, error) {
	var out []Token
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		pair, rest, ok1 := strings.Cut(item, "=")
		symbol, network, ok2 := strings.Cut(pair, ":")
		contract, dec, ok3 := strings.Cut(rest, "/")
		if !ok1 || !ok2 || !ok3 || symbol == "" || network == "" {
			return nil, fmt.Errorf("%q: want token:network=contract/decimals", item)
		}
		symbol, network = strings.ToLower(symbol), strings.ToLower(network)
		d, err := strconv.Atoi(dec)
		if err != nil || d < 0 || d > 36 {
			return nil, fmt.Errorf("%q: decimals must be an integer from 0 to 36", item)
		}
		addr, err := ParseAddress(network, contract)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		if seen[symbol+":"+network] {
			return nil, fmt.Errorf("%q: %s on %s is listed twice", item, symbol, network)
		}
		seen[symbol+":"+network] = true
		out = append(out, Token{Symbol: symbol, Network: network, Contract: addr, Decimals: d})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no token contract listed")
	}
	return out, nil
}

// ParseAddress reads an address in network's form into its 20 bytes: 0x hex on
// EVM networks; base58check (T…) or hex on Tron.
func ParseAddress(network, s string) (common.Address, error) {
	if network == TRC20 && !strings.HasPrefix(s, "0x") {
		return TronToAddress(s)
	}
	h := strings.TrimPrefix(s, "0x")
	if network == TRC20 && len(h) == 42 && strings.HasPrefix(strings.ToLower(h), "41") {
		h = h[2:]
	}
	if len(h) != 40 || !common.IsHexAddress(h) {
		return common.Address{}, fmt.Errorf("%q is not a 20-byte hex address", s)
	}
	return common.HexToAddress(h), nil
}

// AddressForm says in words what an address of network looks like, for the
// errors that refuse one given in another form.
func AddressForm(network string) string {
	if network == TRC20 {
		return "a base58 T… address"
	}
	return "0x and 40 hex digits"
}

// FormatAddress renders a 20-byte address in network's own form: EIP-55 hex on EVM
// networks, base58check on Tron. Deposit addresses are stored in this form.
func FormatAddress(network string, a common.Address) string {
	if network == TRC20 {
		return TronFromAddress(a)
	}
	return a.Hex()
}

// FormatHash renders a chain transaction hash in network's form: 0x and 64 hex
// digits on EVM networks, 64 hex digits on Tron (as Tron's explorers show it).
func FormatHash(network string, h common.Hash) string {
	if network == TRC20 {
		return strings.TrimPrefix(h.Hex(), "0x")
	}
	return h.Hex()
}

// ParseHash reads a hash written by FormatHash.
func ParseHash(s string) common.Hash {
	if !strings.HasPrefix(s, "0x") {
		s = "0x" + s
	}
	return common.HexToHash(s)
}

// AmountScale is the number of decimals of crypto amounts in the service.
const AmountScale = 6

// ToAmount converts raw base units of a token with decimals decimals into the
// service's 6-decimal amount, rounding down (a fraction of a micro-unit is never
// credited). Exact: integer arithmetic only.
func ToAmount(raw *big.Int, decimals int) decimal.Decimal {
	d := decimal.NewFromBigInt(raw, int32(-decimals))
	return d.RoundDown(AmountScale)
}

// Transfer is one Transfer log of a configured token to a deposit address.
type Transfer struct {
	Network  string
	Token    string
	TxHash   common.Hash
	LogIndex uint
	Block    uint64
	// BlockHash is the hash of the block holding the log, re-checked before confirming.
	BlockHash common.Hash
	BlockTime time.Time
	From, To  common.Address
	// ToAddress is To in the network's form (how deposit addresses are stored).
	ToAddress string
	// Raw is the value in base units; Amount is Raw as a 6-decimal amount (rounded down).
	Raw    *big.Int
	Amount decimal.Decimal
	// Confirmations is head − Block + 1 when the transfer was read.
	Confirmations int
}

// DepositID is the stable deposit id of the transfer (network, tx hash, log index):
// seeing the same log again, even in another block after a reorg, yields the same id.
func DepositID(network string, txHash common.Hash, logIndex uint) string {
	h := common.BytesToHash(crypto256([]byte(fmt.Sprintf("%s/%s/%d", network, txHash.Hex(), logIndex))))
	return "dep_" + h.Hex()[2:26]
}

// Cursor is a scanner's position: the last block fully processed and its hash (to
// notice when that block is reorganised away).
type Cursor struct {
	Block uint64
	Hash  common.Hash
}

// Pending is a detected deposit that is not final yet: its confirmations rise with
// every block until the network's requirement, and its block is re-checked against
// the canonical chain before it confirms.
type Pending struct {
	Network       string
	TxHash        common.Hash
	LogIndex      uint
	Block         uint64
	BlockHash     common.Hash
	Confirmations int
	// Unmatched marks a transfer kept for the operators (no deposit of a
	// transaction), checked against reorganisations until it is final.
	Unmatched bool
}

// ProviderState is one JSON-RPC provider of a network as the watcher last saw it:
// what the overview, the console and the metrics show of each.
type ProviderState struct {
	// Name identifies the provider without its secrets: scheme and host (keys in
	// paths and query strings are never shown).
	Name string `json:"name"`
	// State is one of the Provider* states.
	State string `json:"state"`
	// Head is the provider's head block when last read (0: never read).
	Head uint64 `json:"head"`
	// Error is the last failure, when State is not ProviderActive or ProviderStandby.
	Error string `json:"error,omitempty"`
	// Push is true when the provider pushes new heads (a ws(s):// subscription).
	Push bool `json:"push"`
	// Since is when the provider entered State.
	Since time.Time `json:"since"`
}

// Provider states.
const (
	// ProviderActive: the provider the watcher currently reads.
	ProviderActive = "active"
	// ProviderStandby: healthy, ready for a fail-over.
	ProviderStandby = "standby"
	// ProviderFailing: its last calls failed (errors, timeouts).
	ProviderFailing = "failing"
	// ProviderRateLimited: it asked the watcher to wait.
	ProviderRateLimited = "rate_limited"
	// ProviderLagging: its head is behind the others' by more than a few blocks.
	ProviderLagging = "lagging"
	// ProviderBehind: its successful answers show it behind its own head (a head
	// gone back further than a reorganisation goes, a load balancer's backend
	// behind): not believed until it catches up.
	ProviderBehind = "behind"
	// ProviderSyncing: as ProviderBehind, and eth_syncing says it is catching up.
	ProviderSyncing = "syncing"
	// ProviderNoLogs: it does not serve eth_getLogs (taken out of the rotation for it).
	ProviderNoLogs = "no_logs"
	// ProviderActionNeeded: it refuses the watcher until a person acts (a bad or
	// revoked key, an exhausted quota or plan, a retired endpoint, a method or
	// history outside the plan); it is out of the rotation, tried again now and then.
	ProviderActionNeeded = "action_needed"
)

// Finality states of a network's watcher, as the overview and metrics show them.
const (
	// FinalityTag: deposits wait for the node's finalized block.
	FinalityTag = "tag"
	// FinalityConfirmations: deposits confirm by count alone (pinned, or the node
	// does not serve the tag).
	FinalityConfirmations = "confirmations"
	// FinalityUnknown: the node serves the tag but has not answered it lately:
	// nothing confirms until it does.
	FinalityUnknown = "unknown"
)

// Sighting is one chain transaction read again by its hash (a rescan): whether a
// provider knows it, whether its block is deep enough to believe, and its
// transfers of the network's tokens to deposit addresses, as the scanner would
// have handed them to the deposits service.
type Sighting struct {
	// Found: a provider knows the transaction, and it succeeded.
	Found bool
	// Final: its block has the network's confirmations and is still the block
	// at its height (Transfers is read only then).
	Final bool
	// Block and Confirmations are its block and head − Block + 1 (0 above the head).
	Block         uint64
	Confirmations int
	Transfers     []Transfer
}
