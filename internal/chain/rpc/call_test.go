package rpc

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"
)

// TestCallSendsTheCallAtTheBlock: eth_call carries {to, data} and the block as a
// hex quantity, and the result's hex comes back as bytes.
func TestCallSendsTheCallAtTheBlock(t *testing.T) {
	t.Parallel()
	var got request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &got)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":"0x00000000000000000000000000000000000000000000000000000000000000ff"}`)
	}))
	t.Cleanup(srv.Close)
	cl, err := New(srv.URL, BSC, Options{})
	require.NoError(t, err)
	to := common.HexToAddress("0x40C57923924B5c5c5455c48D93317139ADDaC8fb")
	out, err := cl.Call(context.Background(), to, []byte{0xdf, 0x59, 0x2f, 0x7d}, 300)
	require.NoError(t, err)
	require.Len(t, out, 32)
	require.Equal(t, byte(0xff), out[31])

	require.Equal(t, "eth_call", got.Method)
	require.Len(t, got.Params, 2)
	msg, ok := got.Params[0].(map[string]any)
	require.True(t, ok, "the call object first")
	require.Equal(t, "0x40c57923924b5c5c5455c48d93317139addac8fb", msg["to"])
	require.Equal(t, "0xdf592f7d", msg["data"])
	require.Equal(t, "0x12c", got.Params[1], "the block as a hex quantity")
}

// TestCallErrors: a revert is KindReverted (about the call, not the node) by
// geth's code 3 or another node's text; a gateway's error and a node's other
// errors keep their kinds; an answer that is not hex is a decode error.
func TestCallErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		body   string
		kind   string
	}{
		{200, `{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted: Ownable: caller is not the owner","data":"0x08c379a0"}}`, KindReverted},
		{200, `{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted: rate limit reached in the contract"}}`, KindReverted},
		{200, rpcErr(-32000, "execution reverted"), KindReverted},
		{200, rpcErr(-32000, "REVERT opcode executed"), KindReverted},
		{200, rpcErr(-32000, "header not found"), KindNotReady},
		{200, rpcErr(-32000, "out of gas"), KindRPC},
		{429, rpcErr(-32005, "too many requests"), KindRateLimit},
		{500, "revert proxy failed", KindHTTP},
		{200, `{"jsonrpc":"2.0","id":1,"result":"0xnothex"}`, KindDecode},
	}
	for _, c := range cases {
		srv, _ := node(t, c.status, nil, c.body)
		cl, err := New(srv.URL, BSC, Options{})
		require.NoError(t, err)
		_, err = cl.Call(context.Background(), common.Address{1}, []byte{1}, 1)
		require.Error(t, err, c.body)
		require.Equal(t, c.kind, KindOf(err), c.body)
	}
}

// TestCallEmptyResult: an address without code answers "0x", an empty result the
// caller judges (the client does not take it for an error).
func TestCallEmptyResult(t *testing.T) {
	t.Parallel()
	srv, _ := node(t, 200, nil, `{"jsonrpc":"2.0","id":1,"result":"0x"}`)
	cl, err := New(srv.URL, BSC, Options{})
	require.NoError(t, err)
	out, err := cl.Call(context.Background(), common.Address{1}, []byte{1}, 1)
	require.NoError(t, err)
	require.Empty(t, out)
}
