// Package address derives watch-only deposit addresses for BNB Smart Chain
// (BEP-20 tokens) and Tron (TRC-20 tokens) from account-level extended public
// keys, and validates addresses for those networks.
//
// The service hands every transaction its own deposit address so that an
// incoming payment can be matched to the transaction by address alone. The
// addresses are derived with BIP-32 public derivation at <account xpub>/0/i,
// which means the server only ever needs the account xpub: it can generate any
// number of addresses while the private keys stay offline with the wallet that
// produced the xpub.
package address

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/base58"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"golang.org/x/crypto/sha3"
)

const (
	networkBEP20 = "bep20"
	networkTRC20 = "trc20"

	// externalChain is the BIP-44 "change" level used for receiving
	// addresses; every deposit address lives under <account xpub>/0.
	externalChain = 0

	// tronPrefix is the version byte of Tron mainnet addresses.
	tronPrefix = 0x41
	// tronDecodedLen is the decoded length of a Tron address:
	// prefix (1) + account hash (20) + checksum (4).
	tronDecodedLen = 1 + 20 + 4

	// uncompressedLen is the length of an uncompressed secp256k1 public key:
	// 0x04 || X (32) || Y (32).
	uncompressedLen = 1 + 32 + 32
)

var (
	errUnknownNetwork = errors.New("address: unknown network")
	errPrivateKey     = errors.New("address: extended key is private; only an xpub is accepted")
	errHardenedIndex  = errors.New("address: index must be below 2^31 (hardened indexes cannot be derived from an xpub)")
)

// DemoXPubs are public account-level test xpubs for staging only, derived from
// the well-known "abandon abandon ... about" BIP-39 test mnemonic: bep20 at
// m/44'/60'/0' and trc20 at m/44'/195'/0'. They exist so that staging can run
// the full deposit flow without a real wallet; since anyone can compute the
// matching private keys, funds sent to these addresses are not safe and the
// xpubs must never be configured in production.
var DemoXPubs = map[string]string{
	networkBEP20: "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt",
	networkTRC20: "xpub6D1AabNHCupeiLM65ZR9UStMhJ1vCpyV4XbZdyhMZBiJXALQtmn9p42VTQckoHVn8WNqS7dqnJokZHAHcHGoaQgmv8D45oNUKx6DZMNZBCd",
}

// DemoKey reports which network's demo key xpub is, comparing key material: the
// public key and chain code, which alone determine every derived address. The
// version bytes (xpub, ypub, zpub, tpub, …), depth, parent fingerprint and child
// number are ignored, since the same key re-encoded with other ones derives the
// same addresses, whose private keys are just as public. A key that does
// not parse is no demo key (NewDeriver reports why it does not parse).
func DemoKey(xpub string) (network string, ok bool) {
	mat, err := keyMaterial(xpub)
	if err != nil {
		return "", false
	}
	for _, n := range []string{networkBEP20, networkTRC20} {
		if demo, err := keyMaterial(DemoXPubs[n]); err == nil && bytes.Equal(mat, demo) {
			return n, true
		}
	}
	return "", false
}

// keyMaterial returns an extended public key's compressed public key followed by
// its chain code.
func keyMaterial(xpub string) ([]byte, error) {
	key, err := hdkeychain.NewKeyFromString(strings.TrimSpace(xpub))
	if err != nil {
		return nil, err
	}
	pub, err := key.ECPubKey()
	if err != nil {
		return nil, err
	}
	return append(pub.SerializeCompressed(), key.ChainCode()...), nil
}

// Deriver derives deposit addresses for one network from one account xpub.
//
// It keeps only public key material, so a compromised server cannot spend
// deposits. The external chain key (<account xpub>/0) is derived once up
// front, so each Address call costs a single BIP-32 step; and that key is kept
// as a parsed curve point beside its compressed form, so the step is one
// HMAC, one base-point multiplication and one point addition, with none of
// the square roots that re-parsing the compressed parent and child keys
// would cost on every call. A Deriver is immutable after construction and
// safe for concurrent use.
type Deriver struct {
	network string
	// The external chain key <account xpub>/0: its point (affine, Z = 1), the
	// compressed serialization serP(K) that BIP-32 hashes, and its chain code.
	chainKey  btcec.JacobianPoint
	chainSer  [btcec.PubKeyBytesLenCompressed]byte
	chainCode [32]byte
}

// NewDeriver parses an account-level extended public key for network ("bep20"
// or "trc20") and returns a Deriver for it.
//
// The xpub's version bytes are ignored, because wallets export EVM and Tron
// account keys with Bitcoin "xpub" (or other) prefixes and the bytes carry no
// meaning for these chains. A private extended key is rejected even though it
// could derive the same addresses: the service is designed never to hold
// private keys, and accepting one would silently break that guarantee.
func NewDeriver(network, xpub string) (*Deriver, error) {
	if network != networkBEP20 && network != networkTRC20 {
		return nil, fmt.Errorf("%w: %q", errUnknownNetwork, network)
	}
	key, err := hdkeychain.NewKeyFromString(xpub)
	if err != nil {
		return nil, fmt.Errorf("address: parse %s xpub: %w", network, err)
	}
	if key.IsPrivate() {
		return nil, errPrivateKey
	}
	chain, err := key.Derive(externalChain)
	if err != nil {
		return nil, fmt.Errorf("address: derive %s external chain: %w", network, err)
	}
	pub, err := chain.ECPubKey()
	if err != nil {
		return nil, fmt.Errorf("address: %s external chain public key: %w", network, err)
	}
	d := &Deriver{network: network}
	pub.AsJacobian(&d.chainKey)
	copy(d.chainSer[:], pub.SerializeCompressed())
	copy(d.chainCode[:], chain.ChainCode())
	return d, nil
}

// Network returns the network name ("bep20" or "trc20") the Deriver was built
// for, so callers holding several Derivers can tell which one produced an
// address.
func (d *Deriver) Network() string { return d.network }

// Address returns the deposit address at <account xpub>/0/index, formatted
// for the Deriver's network: an EIP-55 checksummed 0x address for bep20, or a
// base58check T-address for trc20.
//
// index must be below 2^31: hardened children cannot be derived from a public
// key. The result is deterministic, so the same index always yields the same
// address and the caller only needs to persist the index per transaction. In
// the astronomically unlikely case that an index has no valid child key, the
// error from hdkeychain (ErrInvalidChild) is returned and the caller should
// move on to the next index.
func (d *Deriver) Address(index uint32) (string, error) {
	if index >= hdkeychain.HardenedKeyStart {
		return "", fmt.Errorf("%w: got %d", errHardenedIndex, index)
	}
	var pub [uncompressedLen]byte
	if err := d.childKey(index, &pub); err != nil {
		return "", fmt.Errorf("address: derive %s index %d: %w", d.network, index, err)
	}
	acct := accountHash(pub[:])
	if d.network == networkTRC20 {
		return base58.CheckEncode(acct, tronPrefix), nil
	}
	return eip55(acct), nil
}

// childKey writes the uncompressed public key (0x04 || X || Y) of the
// non-hardened child index of the external chain key to out, by BIP-32 CKDpub:
// I = HMAC-SHA512(chain code, serP(K) || ser32(index)), child = parse256(I_L)·G + K.
// It returns hdkeychain.ErrInvalidChild when I_L is not a valid scalar (zero
// or not below the group order) or the child is the point at infinity, the
// cases BIP-32 says to skip; hdkeychain's Derive gives the same keys, but
// parses the parent's compressed key on every call and leaves the child
// compressed, to be parsed again.
func (d *Deriver) childKey(index uint32, out *[uncompressedLen]byte) error {
	var data [btcec.PubKeyBytesLenCompressed + 4]byte
	copy(data[:], d.chainSer[:])
	binary.BigEndian.PutUint32(data[btcec.PubKeyBytesLenCompressed:], index)
	mac := hmac.New(sha512.New, d.chainCode[:])
	_, _ = mac.Write(data[:])
	var sum [sha512.Size]byte
	i := mac.Sum(sum[:0])

	var il btcec.ModNScalar
	if overflow := il.SetByteSlice(i[:32]); overflow || il.IsZero() {
		return hdkeychain.ErrInvalidChild
	}
	var ilG, child btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(&il, &ilG)
	btcec.AddNonConst(&ilG, &d.chainKey, &child)
	if (child.X.IsZero() && child.Y.IsZero()) || child.Z.IsZero() {
		return hdkeychain.ErrInvalidChild
	}
	child.ToAffine()
	out[0] = 0x04
	child.X.PutBytesUnchecked(out[1:33])
	child.Y.PutBytesUnchecked(out[33:])
	return nil
}

// Valid reports whether addr is a well-formed address for network, so that
// addresses supplied from outside can be checked before money is sent to them.
//
// For bep20 the address must be "0x" followed by 40 hex digits whose letter
// case matches the EIP-55 checksum exactly; all-lowercase or all-uppercase
// forms are rejected because they carry no checksum and a typo would go
// unnoticed. For trc20 the address must be base58check with a valid double
// SHA-256 checksum, decode to 25 bytes and carry the 0x41 mainnet prefix.
// Unknown networks are never valid.
func Valid(network, addr string) bool {
	switch network {
	case networkBEP20:
		return validEVM(addr)
	case networkTRC20:
		return validTron(addr)
	default:
		return false
	}
}

// accountHash returns the 20-byte account identifier shared by EVM chains and
// Tron: the last 20 bytes of the legacy Keccak-256 of the 64-byte uncompressed
// public key (the 0x04 prefix is dropped).
func accountHash(uncompressed []byte) []byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(uncompressed[1:])
	sum := h.Sum(nil)
	return sum[len(sum)-20:]
}

// eip55 renders a 20-byte account as a 0x-prefixed EIP-55 checksummed address.
func eip55(acct []byte) string {
	lower := hex.EncodeToString(acct)
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte(lower))
	hash := h.Sum(nil)

	out := make([]byte, 2+len(lower))
	out[0], out[1] = '0', 'x'
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		nibble := hash[i/2]
		if i%2 == 0 {
			nibble >>= 4
		}
		if c >= 'a' && c <= 'f' && nibble&0x0f >= 8 {
			c -= 'a' - 'A'
		}
		out[2+i] = c
	}
	return string(out)
}

// Canonical returns addr in the form deposit addresses are stored, so a search
// finds an address however it was typed: an EVM hex address (0x and 40 hex
// digits, any letter case, whose case is only a checksum) in its EIP-55 form;
// anything else (a Tron address, whose base58 is case-sensitive) unchanged.
func Canonical(addr string) string {
	if len(addr) != 42 || (addr[:2] != "0x" && addr[:2] != "0X") {
		return addr
	}
	acct, err := hex.DecodeString(addr[2:])
	if err != nil {
		return addr
	}
	return eip55(acct)
}

func validEVM(addr string) bool {
	digits, ok := strings.CutPrefix(addr, "0x")
	if !ok || len(digits) != 40 {
		return false
	}
	acct, err := hex.DecodeString(digits)
	if err != nil {
		return false
	}
	return eip55(acct) == addr
}

func validTron(addr string) bool {
	decoded := base58.Decode(addr)
	if len(decoded) != tronDecodedLen || decoded[0] != tronPrefix {
		return false
	}
	// CheckDecode verifies the 4-byte double SHA-256 checksum.
	_, _, err := base58.CheckDecode(addr)
	return err == nil
}
