package address

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/base58"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/stretchr/testify/require"
)

// abandonSeed is the BIP-39 seed (empty passphrase) of the test mnemonic
// "abandon abandon abandon abandon abandon abandon abandon abandon abandon
// abandon abandon about".
const abandonSeed = "5eb00bbddcf069084889a8ab9155568165f5c453ccb85e70811aaed6f6da5fc19a5ac40b389cd370d086206dec8aa6c43daea6690f20ad3d8d48b2d2ce9e38e4"

func TestAddressVectors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		network string
		index   uint32
		want    string
	}{
		{"bep20", 0, "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"},
		{"bep20", 1, "0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0"},
		{"bep20", 2, "0xb6716976A3ebe8D39aCEB04372f22Ff8e6802D7A"},
		{"trc20", 0, "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"},
		{"trc20", 1, "TSeJkUh4Qv67VNFwY8LaAxERygNdy6NQZK"},
		{"trc20", 2, "TYJPRrdB5APNeRs4R7fYZSwW3TcrTKw2gx"},
	}
	for _, tc := range tests {
		t.Run(tc.network+"/"+tc.want, func(t *testing.T) {
			t.Parallel()

			d, err := NewDeriver(tc.network, DemoXPubs[tc.network])
			require.NoError(t, err)
			require.Equal(t, tc.network, d.Network())

			got, err := d.Address(tc.index)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.True(t, Valid(tc.network, got))

			// Derivation is deterministic.
			again, err := d.Address(tc.index)
			require.NoError(t, err)
			require.Equal(t, got, again)
		})
	}
}

// TestDemoXPubsMatchMnemonic checks that DemoXPubs really are the account
// xpubs of the abandon mnemonic at the documented BIP-44 paths.
func TestDemoXPubsMatchMnemonic(t *testing.T) {
	t.Parallel()

	for network, coin := range map[string]uint32{"bep20": 60, "trc20": 195} {
		acct := accountXPrv(t, coin)
		pub, err := acct.Neuter()
		require.NoError(t, err)
		require.Equal(t, DemoXPubs[network], pub.String(), network)
	}
	require.Len(t, DemoXPubs, 2)
}

func TestNewDeriverAcceptsOtherVersionBytes(t *testing.T) {
	t.Parallel()

	key, err := hdkeychain.NewKeyFromString(DemoXPubs["bep20"])
	require.NoError(t, err)
	tpub, err := key.CloneWithVersion(chaincfg.TestNet3Params.HDPublicKeyID[:])
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(tpub.String(), "tpub"))

	d, err := NewDeriver("bep20", tpub.String())
	require.NoError(t, err)
	got, err := d.Address(0)
	require.NoError(t, err)
	require.Equal(t, "0x9858EfFD232B4033E47d90003D41EC34EcaEda94", got)
}

func TestNewDeriverRejects(t *testing.T) {
	t.Parallel()

	xprv := accountXPrv(t, 60).String()
	require.True(t, strings.HasPrefix(xprv, "xprv"))

	// Corrupt the last character so the base58 checksum fails.
	xpub := DemoXPubs["bep20"]
	badChecksum := xpub[:len(xpub)-1] + "u"
	require.NotEqual(t, xpub, badChecksum)

	tests := []struct {
		name    string
		network string
		xpub    string
		wantErr error
	}{
		{"empty", "bep20", "", hdkeychain.ErrInvalidKeyLen},
		{"garbage", "bep20", "not an xpub", hdkeychain.ErrInvalidKeyLen},
		{"truncated", "trc20", xpub[:len(xpub)-5], hdkeychain.ErrInvalidKeyLen},
		{"bad checksum", "bep20", badChecksum, hdkeychain.ErrBadChecksum},
		{"xprv", "bep20", xprv, errPrivateKey},
		{"xprv trc20", "trc20", accountXPrv(t, 195).String(), errPrivateKey},
		{"unknown network", "erc20", xpub, errUnknownNetwork},
		{"empty network", "", xpub, errUnknownNetwork},
		{"network case", "BEP20", xpub, errUnknownNetwork},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			d, err := NewDeriver(tc.network, tc.xpub)
			require.ErrorIs(t, err, tc.wantErr)
			require.Nil(t, d)
		})
	}
}

func TestAddressRejectsHardenedIndex(t *testing.T) {
	t.Parallel()

	for network, xpub := range DemoXPubs {
		d, err := NewDeriver(network, xpub)
		require.NoError(t, err)

		for _, index := range []uint32{hdkeychain.HardenedKeyStart, hdkeychain.HardenedKeyStart + 1, ^uint32(0)} {
			got, err := d.Address(index)
			require.ErrorIs(t, err, errHardenedIndex, "%s index %d", network, index)
			require.Empty(t, got)
		}

		got, err := d.Address(hdkeychain.HardenedKeyStart - 1)
		require.NoError(t, err)
		require.True(t, Valid(network, got))
	}
}

func TestValid(t *testing.T) {
	t.Parallel()

	const evm = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
	const tron = "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"

	acct, _, err := base58.CheckDecode(tron)
	require.NoError(t, err)
	require.Len(t, acct, 20)

	tests := []struct {
		name    string
		network string
		addr    string
		want    bool
	}{
		{"bep20 ok", "bep20", evm, true},
		{"bep20 ok 2", "bep20", "0xb6716976A3ebe8D39aCEB04372f22Ff8e6802D7A", true},
		// EIP-55 reference vectors.
		{"bep20 eip55 all caps", "bep20", "0x52908400098527886E0F7030069857D2E4169EE7", true},
		{"bep20 eip55 all lower", "bep20", "0xde709f2102306220921060314715629080e2fb77", true},
		{"bep20 eip55 mixed", "bep20", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", true},
		{"bep20 wrong checksum case", "bep20", "0x9858efFD232B4033E47d90003D41EC34EcaEda94", false},
		{"bep20 all lower", "bep20", strings.ToLower(evm), false},
		{"bep20 all upper digits", "bep20", "0x" + strings.ToUpper(evm[2:]), false},
		{"bep20 no prefix", "bep20", evm[2:], false},
		{"bep20 0X prefix", "bep20", "0X" + evm[2:], false},
		{"bep20 short", "bep20", evm[:len(evm)-2], false},
		{"bep20 long", "bep20", evm + "00", false},
		{"bep20 non hex", "bep20", "0x9858EfFD232B4033E47d90003D41EC34EcaEda9g", false},
		{"bep20 empty", "bep20", "", false},
		{"bep20 tron address", "bep20", tron, false},

		{"trc20 ok", "trc20", tron, true},
		{"trc20 ok 2", "trc20", "TYJPRrdB5APNeRs4R7fYZSwW3TcrTKw2gx", true},
		{"trc20 bad checksum", "trc20", "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdJ", false},
		{"trc20 bad checksum case", "trc20", "tUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", false},
		{"trc20 wrong prefix", "trc20", base58.CheckEncode(acct, 0x00), false},
		{"trc20 too short", "trc20", base58.CheckEncode(acct[:19], tronPrefix), false},
		{"trc20 too long", "trc20", base58.CheckEncode(append(append([]byte{}, acct...), 0), tronPrefix), false},
		{"trc20 truncated", "trc20", tron[:len(tron)-1], false},
		{"trc20 invalid base58 char", "trc20", "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYd0", false},
		{"trc20 empty", "trc20", "", false},
		{"trc20 evm address", "trc20", evm, false},

		{"unknown network", "erc20", evm, false},
		{"empty network", "", tron, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, Valid(tc.network, tc.addr), tc.addr)
		})
	}
}

func TestDeriverConcurrentUse(t *testing.T) {
	t.Parallel()

	for network, xpub := range DemoXPubs {
		d, err := NewDeriver(network, xpub)
		require.NoError(t, err)

		const n = 16
		want := make([]string, n)
		for i := range want {
			want[i], err = d.Address(uint32(i))
			require.NoError(t, err)
		}

		got := make([]string, n)
		errs := make([]error, n)
		done := make(chan struct{})
		for i := range n {
			go func() {
				defer func() { done <- struct{}{} }()
				got[i], errs[i] = d.Address(uint32(i))
			}()
		}
		for range n {
			<-done
		}
		for i := range n {
			require.NoError(t, errs[i])
		}
		require.Equal(t, want, got)
	}
}

func BenchmarkAddress(b *testing.B) {
	for _, network := range []string{"bep20", "trc20"} {
		b.Run(network, func(b *testing.B) {
			d, err := NewDeriver(network, DemoXPubs[network])
			require.NoError(b, err)
			var i uint32
			for b.Loop() {
				if _, err := d.Address(i % hdkeychain.HardenedKeyStart); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// accountXPrv returns the private account key m/44'/coin'/0' of the abandon
// mnemonic.
func accountXPrv(t *testing.T, coin uint32) *hdkeychain.ExtendedKey {
	t.Helper()

	seed, err := hex.DecodeString(abandonSeed)
	require.NoError(t, err)
	key, err := hdkeychain.NewMaster(seed, &chaincfg.MainNetParams)
	require.NoError(t, err)
	for _, child := range []uint32{44, coin, 0} {
		key, err = key.Derive(hdkeychain.HardenedKeyStart + child)
		require.NoError(t, err)
	}
	require.True(t, key.IsPrivate())
	return key
}
