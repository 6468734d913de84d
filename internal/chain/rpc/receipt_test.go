package rpc

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
)

// java-tron's /jsonrpc answers eth_getTransactionReceipt as geth does, with its
// BlockId as the block hash, and a log address possibly in Tron's 21-byte form:
// the receipt reads into the same logs eth_getLogs gives.
func TestReceiptInJavaTronsDialect(t *testing.T) {
	t.Parallel()
	const body = `{"jsonrpc":"2.0","id":1,"result":{
		"blockHash":"0x00000000025ad523bf3d34c17ff81e2cf46824d38ff0373d172fd293ca7e651f","blockNumber":"0x25ad523",
		"contractAddress":null,"cumulativeGasUsed":"0x92864","effectiveGasPrice":"0x118","from":"0xa346f2bd7d43a5d90b7c57a18196be96b2840e61",
		"gasUsed":"0x73bf","logs":[{"address":"0x41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
		"blockHash":"0x00000000025ad523bf3d34c17ff81e2cf46824d38ff0373d172fd293ca7e651f","blockNumber":"0x25ad523",
		"data":"0x0000000000000000000000000000000000000000000000000000000022a640dc","logIndex":"0x1e","removed":false,
		"topics":["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
		"0x000000000000000000000000a346f2bd7d43a5d90b7c57a18196be96b2840e61",
		"0x00000000000000000000000001eb1a2d0528dd1d99592cd7baa98f2603804f76"],
		"transactionHash":"0x9ff75c018157f4504adc34058510516c603569238e5c3d156b1f0b096856b1a1","transactionIndex":"0x3e"}],
		"logsBloom":"0x00","status":"0x1","to":"0xa614f803b6fd780986a42c78ec9c7f77e6ded13c",
		"transactionHash":"0x9ff75c018157f4504adc34058510516c603569238e5c3d156b1f0b096856b1a1","transactionIndex":"0x3e","type":"0x0"}}`
	srv, _ := node(t, 200, nil, body)
	c, err := New(srv.URL, JavaTron, Options{})
	require.NoError(t, err)
	r, err := c.Receipt(context.Background(), common.HexToHash("9ff75c018157f4504adc34058510516c603569238e5c3d156b1f0b096856b1a1"))
	require.NoError(t, err)
	require.NotNil(t, r)
	require.False(t, r.Failed)
	require.Equal(t, uint64(0x25ad523), r.BlockNumber)
	require.Equal(t, common.HexToHash("0x00000000025ad523bf3d34c17ff81e2cf46824d38ff0373d172fd293ca7e651f"), r.BlockHash)
	require.Len(t, r.Logs, 1)
	lg := r.Logs[0]
	require.Equal(t, common.HexToAddress("0xa614f803b6fd780986a42c78ec9c7f77e6ded13c"), lg.Address)
	require.Equal(t, chain.TransferTopic, lg.Topics[0])
	require.Equal(t, uint(0x1e), lg.Index)
	require.Equal(t, big.NewInt(0x22a640dc), new(big.Int).SetBytes(lg.Data))
	require.Equal(t, common.HexToAddress("0x01eb1a2d0528dd1d99592cd7baa98f2603804f76"), common.BytesToAddress(lg.Topics[2].Bytes()))
}

// An unknown transaction is null (nil), a failed one has status 0x0.
func TestReceiptUnknownAndFailed(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{BSC, JavaTron} {
		srv, _ := node(t, 200, nil, `{"jsonrpc":"2.0","id":1,"result":null}`)
		c, err := New(srv.URL, d, Options{})
		require.NoError(t, err)
		r, err := c.Receipt(context.Background(), common.Hash{1})
		require.NoError(t, err)
		require.Nil(t, r, d.Node)

		srv, _ = node(t, 200, nil, `{"jsonrpc":"2.0","id":1,"result":{"blockHash":"0x`+common.Hash{2}.Hex()[2:]+`","blockNumber":"0x5","status":"0x0","logs":[]}}`)
		c, err = New(srv.URL, d, Options{})
		require.NoError(t, err)
		r, err = c.Receipt(context.Background(), common.Hash{1})
		require.NoError(t, err)
		require.True(t, r.Failed, d.Node)
		require.Equal(t, uint64(5), r.BlockNumber)
	}
}
