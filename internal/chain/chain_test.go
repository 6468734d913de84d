package chain

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/internal/address"
)

func TestDefaultTokenContracts(t *testing.T) {
	toks, err := ParseTokenContracts(DefaultTokenContracts)
	require.NoError(t, err)
	require.Len(t, toks, 2)
	require.Equal(t, Token{Symbol: "usdt", Network: BEP20, Contract: common.HexToAddress("0x55d398326f99059fF775485246999027B3197955"), Decimals: 18}, toks[0])
	require.Equal(t, TRC20, toks[1].Network)
	require.Equal(t, 6, toks[1].Decimals)
	// The mainnet USDT contract on Tron, TR7NHq…, is 41a614f803b6fd780986a42c78ec9c7f77e6ded13c.
	require.Equal(t, "41a614f803b6fd780986a42c78ec9c7f77e6ded13c", TronHex(toks[1].Contract))
	require.Equal(t, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", TronFromAddress(toks[1].Contract))
}

func TestParseTokenContractsForms(t *testing.T) {
	toks, err := ParseTokenContracts("usdt:trc20=0x41a614f803b6fd780986a42c78ec9c7f77e6ded13c/6, usdt:bep20=0xa614f803b6fd780986a42c78ec9c7f77e6ded13c/18")
	require.NoError(t, err)
	require.Equal(t, toks[0].Contract, toks[1].Contract)
	for _, bad := range []string{"", "usdt:bep20=0x12/18", "usdt=0x55d398326f99059fF775485246999027B3197955/18",
		"usdt:bep20=0x55d398326f99059fF775485246999027B3197955", "usdt:bep20=0x55d398326f99059fF775485246999027B3197955/x",
		"usdt:trc20=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u/6",
		"usdt:bep20=0x55d398326f99059fF775485246999027B3197955/18,usdt:bep20=0x55d398326f99059fF775485246999027B3197955/18"} {
		_, err := ParseTokenContracts(bad)
		require.Error(t, err, bad)
	}
}

func TestTronRoundTripWithDepositAddresses(t *testing.T) {
	d, err := address.NewDeriver(TRC20, address.DemoXPubs[TRC20])
	require.NoError(t, err)
	for i := uint32(0); i < 5; i++ {
		s, err := d.Address(i)
		require.NoError(t, err)
		a, err := TronToAddress(s)
		require.NoError(t, err)
		require.Equal(t, s, TronFromAddress(a))
		require.Equal(t, s, FormatAddress(TRC20, a))
		b, err := ParseAddress(TRC20, "0x"+TronHex(a))
		require.NoError(t, err)
		require.Equal(t, a, b)
	}
	_, err = TronToAddress("0x55d398326f99059fF775485246999027B3197955")
	require.Error(t, err)
}

func TestToAmountExact(t *testing.T) {
	raw, _ := new(big.Int).SetString("25123456789012345678", 10) // 25.123456789012345678 at 18 decimals
	require.Equal(t, "25.123456", ToAmount(raw, 18).String())
	raw, _ = new(big.Int).SetString("999999999999999999999999999999", 10)
	require.Equal(t, "999999999999.999999", ToAmount(raw, 18).StringFixed(6))
	require.Equal(t, "25", ToAmount(big.NewInt(25_000_000), 6).String())
	require.Equal(t, "0", ToAmount(big.NewInt(999_999_999_999), 18).String())
	require.Equal(t, "7", ToAmount(big.NewInt(7), 0).String())
}

func TestDepositIDStable(t *testing.T) {
	h := common.HexToHash("0x01")
	require.Equal(t, DepositID(BEP20, h, 3), DepositID(BEP20, h, 3))
	require.NotEqual(t, DepositID(BEP20, h, 3), DepositID(BEP20, h, 4))
	require.Len(t, DepositID(BEP20, h, 3), 28)
}
