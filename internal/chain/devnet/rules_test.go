package devnet_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain/devnet"
)

func TestUnits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		amount   string
		decimals int
		want     string
		err      bool
	}{
		{"25", 18, "25000000000000000000", false},
		{"0.5", 6, "500000", false},
		{"1.000001", 6, "1000001", false},
		{"0", 18, "0", false},
		{"1.0000001", 6, "", true},
		{"-1", 6, "", true},
		{"abc", 6, "", true},
		{"1.2.3", 6, "", true},
	}
	for _, c := range cases {
		t.Run(c.amount, func(t *testing.T) {
			t.Parallel()
			v, err := devnet.Units(c.amount, c.decimals)
			if c.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, v.String())
		})
	}
}

// Each dialect answers as its node does: the chain id, the depth of the finalized
// block, and eth_getLogs' block range cap counted the node's way (BNB Smart Chain's
// providers count the blocks, java-tron the difference of the bounds); a deployed
// token's transfer shows in the logs.
func TestDialects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		dialect devnet.Dialect
		chainID string
		depth   uint64
		maxTo   uint64 // the widest [0, maxTo] allowed with a cap of 10
		refusal string
		// stateRoot: blocks carry a real state root (java-tron answers "0x")
		stateRoot bool
	}{
		{devnet.BSC, "1337", 2, 9, "exceed maximum block range: 10", true},
		{devnet.JavaTron, "", 19, 10, "exceed max block range: 10", false},
	}
	for _, c := range cases {
		t.Run(string(c.dialect), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ch, err := devnet.StartDialect(0, c.dialect)
			require.NoError(t, err)
			t.Cleanup(func() { _ = ch.Close() })
			cl, err := ethclient.DialContext(ctx, ch.URL)
			require.NoError(t, err)
			t.Cleanup(cl.Close)

			id, err := ch.ChainID(ctx)
			require.NoError(t, err)
			if c.chainID != "" {
				require.Equal(t, c.chainID, id)
			} else {
				require.Regexp(t, `^0x[0-9a-f]{1,8}$`, id, "the genesis block id's last 4 bytes")
			}
			n, err := cl.ChainID(ctx)
			require.NoError(t, err)
			want, ok := new(big.Int).SetString(id, 0)
			require.True(t, ok)
			require.Equal(t, want.String(), n.String(), "eth_chainId says the same")

			token, err := ch.Deploy(ctx, 6)
			require.NoError(t, err)
			to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
			raw, err := devnet.Units("12.5", 6)
			require.NoError(t, err)
			_, err = ch.Transfer(ctx, token, to, raw)
			require.NoError(t, err)
			for range 25 {
				ch.Backend.Commit()
			}
			head, err := cl.BlockNumber(ctx)
			require.NoError(t, err)
			require.GreaterOrEqual(t, head, uint64(25))
			var fin struct {
				Number    hexutil.Uint64 `json:"number"`
				StateRoot string         `json:"stateRoot"`
			}
			require.NoError(t, cl.Client().CallContext(ctx, &fin, "eth_getBlockByNumber", "finalized", false))
			require.Equal(t, head-c.depth, uint64(fin.Number))
			require.Equal(t, c.stateRoot, fin.StateRoot != "0x", "java-tron's blocks carry stateRoot \"0x\"")

			logs, err := cl.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: big.NewInt(0), ToBlock: new(big.Int).SetUint64(head), Addresses: []common.Address{token},
				Topics: [][]common.Hash{nil, nil, {common.BytesToHash(to.Bytes())}}})
			require.NoError(t, err)
			require.Len(t, logs, 1, "the one transfer")
			require.Equal(t, common.BytesToAddress(logs[0].Topics[2].Bytes()), to)
			require.Equal(t, raw.String(), new(big.Int).SetBytes(logs[0].Data).String())

			ch.Proxy.SetCaps(10, 0)
			_, err = cl.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: big.NewInt(0), ToBlock: new(big.Int).SetUint64(c.maxTo)})
			require.NoError(t, err)
			_, err = cl.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: big.NewInt(0), ToBlock: new(big.Int).SetUint64(c.maxTo + 1)})
			require.ErrorContains(t, err, c.refusal)
		})
	}
}
