package devnet_test

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain/devnet"
)

// decimals is the test token's decimals() selector.
const decimals = "0x313ce567"

// six is the token's answer to decimals(): 6 as an ABI uint8.
var six = hexutil.Encode(common.LeftPadBytes([]byte{6}, 32))

// Each dialect answers eth_call as its node does: BNB Smart Chain runs the call
// on the state of the block asked for (before the contract existed, there is no
// code to answer); java-tron runs it only at its head and refuses a block number
// and the tags it does not take, with the codes, texts and data jsonrpc4j sends.
func TestCallDialects(t *testing.T) {
	t.Parallel()
	type want struct {
		result string
		code   int
		msg    string
	}
	refused := func(code int, msg string) want { return want{code: code, msg: msg} }
	for _, d := range []devnet.Dialect{devnet.BSC, devnet.JavaTron} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ch, err := devnet.StartDialect(0, d)
			require.NoError(t, err)
			t.Cleanup(func() { _ = ch.Close() })
			token, err := ch.Deploy(ctx, 6)
			require.NoError(t, err)
			at, err := ch.Backend.Client().BlockNumber(ctx) // the block the token was deployed in
			require.NoError(t, err)
			require.Positive(t, at)
			before, err := ch.Backend.Client().HeaderByNumber(ctx, new(big.Int).SetUint64(at-1))
			require.NoError(t, err)
			cl, err := gethrpc.DialContext(ctx, ch.URL)
			require.NoError(t, err)
			t.Cleanup(cl.Close)
			msg := map[string]string{"to": token.Hex(), "data": decimals}

			cases := []struct {
				name  string
				block any
				bsc   want
				tron  want
			}{
				{"latest", "latest", want{result: six}, want{result: six}},
				{"the token's block", hexutil.EncodeUint64(at), want{result: six},
					refused(-32602, "QUANTITY not supported, just support TAG as latest")},
				{"the block before", hexutil.EncodeUint64(at - 1), want{result: "0x"},
					refused(-32602, "QUANTITY not supported, just support TAG as latest")},
				{"earliest", "earliest", want{result: "0x"}, refused(-32602, "TAG [earliest | pending | finalized] not supported")},
				{"pending", "pending", want{result: six}, refused(-32602, "TAG [earliest | pending | finalized] not supported")},
				{"finalized", "finalized", want{}, refused(-32602, "TAG [earliest | pending | finalized] not supported")},
				{"tags in any case", "Latest", want{}, want{result: six}},
				{"a decimal number", "12", want{}, refused(-32602, "QUANTITY not supported, just support TAG as latest")},
				{"no tag java-tron knows", "safe", want{}, refused(-32602, "invalid block number")},
				// The object form names a block that must exist; the call still runs at
				// the head, where the token exists.
				{"object: a block before the token", map[string]string{"blockNumber": hexutil.EncodeUint64(at - 1)}, want{result: "0x"}, want{result: six}},
				{"object: a block not yet made", map[string]string{"blockNumber": hexutil.EncodeUint64(at + 100)}, want{},
					refused(-32000, "header not found")},
				{"object: a block id before the token", map[string]string{"blockHash": devnet.BlockID(before).Hex()}, want{}, want{result: six}},
				{"object: an unknown block id", map[string]string{"blockHash": common.HexToHash("0x01").Hex()}, want{},
					refused(-32000, "header for hash not found")},
				{"object: neither field", map[string]string{"requireCanonical": "true"}, want{}, refused(-32600, "invalid json request")},
				{"a bare number", 5, want{}, refused(-32600, "invalid json request")},
			}
			for _, c := range cases {
				w := c.bsc
				if d == devnet.JavaTron {
					w = c.tron
				}
				if w == (want{}) {
					continue // not asked of this dialect
				}
				var got string
				err := cl.CallContext(ctx, &got, "eth_call", msg, c.block)
				if w.code == 0 {
					require.NoError(t, err, c.name)
					require.Equal(t, w.result, got, c.name)
					continue
				}
				var re gethrpc.Error
				require.True(t, errors.As(err, &re), "%s: %v", c.name, err)
				require.Equal(t, w.code, re.ErrorCode(), c.name)
				require.Equal(t, w.msg, re.Error(), c.name)
				var de gethrpc.DataError
				require.True(t, errors.As(err, &de), c.name)
				require.Equal(t, "{}", de.ErrorData(), "%s: jsonrpc4j sends the annotation's data", c.name)
			}
		})
	}
}
