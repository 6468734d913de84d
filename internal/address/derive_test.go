package address

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/base58"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/stretchr/testify/require"
)

// TestAddressMatchesHDKeychain checks the Deriver's own BIP-32 step against
// hdkeychain's Derive, index by index: the first indexes (those handed out
// first), pseudo-random ones across the whole non-hardened range and the last
// one, for the demo xpubs and for an xpub of another seed.
func TestAddressMatchesHDKeychain(t *testing.T) {
	t.Parallel()

	seed := sha256.Sum256([]byte("partnerd address derivation test seed"))
	master, err := hdkeychain.NewMaster(seed[:], &chaincfg.MainNetParams)
	require.NoError(t, err)
	other, err := master.Neuter()
	require.NoError(t, err)

	indexes := make([]uint32, 0, 501+300+1)
	for i := range uint32(501) {
		indexes = append(indexes, i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		indexes = append(indexes, rng.Uint32N(hdkeychain.HardenedKeyStart))
	}
	indexes = append(indexes, hdkeychain.HardenedKeyStart-1)

	tests := []struct{ name, network, xpub string }{
		{"demo bep20", networkBEP20, DemoXPubs[networkBEP20]},
		{"demo trc20", networkTRC20, DemoXPubs[networkTRC20]},
		{"other bep20", networkBEP20, other.String()},
		{"other trc20", networkTRC20, other.String()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			d, err := NewDeriver(tc.network, tc.xpub)
			require.NoError(t, err)
			key, err := hdkeychain.NewKeyFromString(tc.xpub)
			require.NoError(t, err)
			chain, err := key.Derive(externalChain)
			require.NoError(t, err)

			for _, i := range indexes {
				got, err := d.Address(i)
				require.NoError(t, err)
				require.Equal(t, hdkeychainAddress(t, chain, tc.network, i), got, "index %d", i)
			}
		})
	}
}

// hdkeychainAddress is the deposit address at chain/index the way hdkeychain
// derives it: Derive, then parse the child's compressed key.
func hdkeychainAddress(t *testing.T, chain *hdkeychain.ExtendedKey, network string, index uint32) string {
	t.Helper()

	child, err := chain.Derive(index)
	require.NoError(t, err)
	pub, err := child.ECPubKey()
	require.NoError(t, err)
	acct := accountHash(pub.SerializeUncompressed())
	if network == networkTRC20 {
		return base58.CheckEncode(acct, tronPrefix)
	}
	return eip55(acct)
}

// TestAddressInvalidChild checks that a child at infinity, I_L·G + K = ∞, is
// reported as hdkeychain.ErrInvalidChild. No real xpub is known to have such an
// index, so the test builds a Deriver whose chain point is -I_L·G for the I_L of
// one index.
func TestAddressInvalidChild(t *testing.T) {
	t.Parallel()

	const index = 7
	d := &Deriver{network: networkBEP20}
	copy(d.chainCode[:], "any chain code of thirty-two b..")
	d.chainSer[0] = 0x02
	d.chainSer[1] = 0x01

	var data [btcec.PubKeyBytesLenCompressed + 4]byte
	copy(data[:], d.chainSer[:])
	binary.BigEndian.PutUint32(data[btcec.PubKeyBytesLenCompressed:], index)
	mac := hmac.New(sha512.New, d.chainCode[:])
	_, _ = mac.Write(data[:])
	var il btcec.ModNScalar
	require.False(t, il.SetByteSlice(mac.Sum(nil)[:32]))
	btcec.ScalarBaseMultNonConst(&il, &d.chainKey)
	d.chainKey.ToAffine()
	d.chainKey.Y.Negate(1).Normalize()

	_, err := d.Address(index)
	require.ErrorIs(t, err, hdkeychain.ErrInvalidChild)

	// Any other index has a valid child.
	_, err = d.Address(index + 1)
	require.NoError(t, err)
}
