package chain

import (
	"fmt"

	"github.com/btcsuite/btcd/btcutil/base58"
	"github.com/ethereum/go-ethereum/common"
	"golang.org/x/crypto/sha3"
)

// TronPrefix is the version byte of Tron mainnet addresses: a Tron address is
// base58check(0x41 ‖ the 20 account bytes EVM chains use).
const TronPrefix = 0x41

// TronToAddress decodes a base58check Tron address (T…) into its 20 bytes, the form
// Tron's Ethereum-compatible JSON-RPC takes in log filters and returns in logs.
func TronToAddress(s string) (common.Address, error) {
	payload, version, err := base58.CheckDecode(s)
	if err != nil {
		return common.Address{}, fmt.Errorf("%q is not a base58check Tron address: %w", s, err)
	}
	if version != TronPrefix || len(payload) != common.AddressLength {
		return common.Address{}, fmt.Errorf("%q is not a Tron mainnet address (0x41 and 20 bytes)", s)
	}
	return common.BytesToAddress(payload), nil
}

// TronFromAddress renders 20 account bytes as a base58check Tron address.
func TronFromAddress(a common.Address) string {
	return base58.CheckEncode(a.Bytes(), TronPrefix)
}

// TronHex renders a as Tron's 21-byte hex form: 41 followed by the 20 bytes.
func TronHex(a common.Address) string {
	return fmt.Sprintf("41%x", a.Bytes())
}

// crypto256 is Keccak-256 (Ethereum's, the legacy padding), from golang.org/x/crypto:
// go-ethereum's crypto package would link its cgo secp256k1, which the server
// never uses (and which is a third of a cold build's C compiling).
func crypto256(b []byte) []byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(b)
	return h.Sum(nil)
}
