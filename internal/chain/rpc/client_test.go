package rpc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
)

// node answers every call with status, headers and body (a JSON-RPC answer as a
// real node sends it), recording the requests.
func node(t *testing.T, status int, header http.Header, body string) (*httptest.Server, *[]*http.Request) {
	t.Helper()
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		seen = append(seen, r)
		for k, vs := range header {
			w.Header()[k] = vs
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func rpcErr(code int, msg string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"error":{"code":%d,"message":%q}}`, code, msg)
}

// TestErrorKinds: the answers of geth, BNB Smart Chain, java-tron and the common
// providers, classified by message first and code second.
func TestErrorKinds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		d      Dialect
		status int
		header http.Header
		body   string
		kind   string
		limit  uint64
		retry  time.Duration
	}{
		// java-tron (LogFilterWrapper, LogBlockQuery): range refusals are -32602, a
		// result cap is -32005 — the code rate limits use elsewhere.
		{JavaTron, 200, nil, rpcErr(-32602, "exceed max block range: 5000"), KindRange, 5000, 0},
		{JavaTron, 200, nil, rpcErr(-32005, "query returned more than 10000 results"), KindResults, 10000, 0},
		{JavaTron, 200, nil, rpcErr(-32601, "method eth_getLogs not found"), KindRefused, 0, 0},
		// BNB Smart Chain nodes and providers.
		{BSC, 200, nil, rpcErr(-32000, "exceed maximum block range: 5000"), KindRange, 5000, 0},
		{BSC, 200, nil, rpcErr(-32005, "limit exceeded"), KindRateLimit, 0, 0},
		{BSC, 200, nil, rpcErr(-32005, "query returned more than 10000 results. Try with this block range [0x1, 0x2]."), KindResults, 10000, 0},
		{BSC, 200, nil, rpcErr(-32600, "Under the Free tier plan, you can make eth_getLogs requests with up to a 10 block range."), KindRange, 10, 0},
		{BSC, 200, nil, rpcErr(-32601, "the method eth_getLogs does not exist/is not available"), KindRefused, 0, 0},
		{BSC, 200, nil, rpcErr(-32000, "header not found"), KindNotReady, 0, 0},
		{BSC, 429, http.Header{"Retry-After": {"2"}}, "Too Many Requests", KindRateLimit, 0, 2 * time.Second},
		{BSC, 429, nil, rpcErr(-32005, "daily request count exceeded, request rate limited"), KindRateLimit, 0, 0},
		{BSC, 200, http.Header{"Retry-After": {"1"}}, rpcErr(-32005, "limit exceeded"), KindRateLimit, 0, time.Second},
		{BSC, 503, nil, "upstream unavailable", KindHTTP, 0, 0},
		{BSC, 200, nil, "<html>gateway</html>", KindDecode, 0, 0},
	}
	for _, c := range cases {
		srv, _ := node(t, c.status, c.header, c.body)
		cl, err := New(srv.URL, c.d, Options{})
		require.NoError(t, err)
		_, err = cl.Logs(context.Background(), 1, 9000, []common.Address{{1}}, chain.TransferTopic)
		require.Error(t, err, c.body)
		require.Equal(t, c.kind, KindOf(err), c.body)
		require.Equal(t, c.limit, LimitOf(err), c.body)
		require.Equal(t, c.retry, RetryAfterOf(err), c.body)
		if strings.HasPrefix(c.body, "{") {
			require.Contains(t, err.Error(), strings.Split(c.body, `"message":"`)[1][:10], "the node's own answer is in the error")
		}
	}
}

// TestJavaTronShapes: a java-tron block (stateRoot "0x", BlockId hash, its extra
// fields) and log (addresses as java-tron writes them) decode; the hash is the
// node's, as sent.
func TestJavaTronShapes(t *testing.T) {
	t.Parallel()
	id := "0x0000000003d8b1a27d3d8be8f1b5e1d8b7c5c3f1f4a1c2b3d4e5f60718293a4b"
	srv, _ := node(t, 200, nil, `{"jsonrpc":"2.0","id":1,"result":{"baseFeePerGas":"0x0","difficulty":"0x0","extraData":"0x",
		"gasLimit":"0x0","gasUsed":"0x0","hash":"`+id+`","logsBloom":"0x00","miner":"0x0000000000000000000000000000000000000000",
		"mixHash":"0x0000000000000000000000000000000000000000000000000000000000000000","nonce":"0x0000000000000000",
		"number":"0x3d8b1a2","parentHash":"0x0000000003d8b1a1aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"receiptsRoot":"0x00","sha3Uncles":"0x00","size":"0x1a2b","stateRoot":"0x","timestamp":"0x6740a1b2",
		"totalDifficulty":"0x0","transactions":[],"transactionsRoot":"0x00","uncles":[]}}`)
	cl, err := New(srv.URL, JavaTron, Options{})
	require.NoError(t, err)
	b, err := cl.BlockByNumber(context.Background(), 0x3d8b1a2)
	require.NoError(t, err)
	require.Equal(t, uint64(0x3d8b1a2), b.Number)
	require.Equal(t, common.HexToHash(id), b.Hash)
	require.Equal(t, time.Unix(0x6740a1b2, 0).UTC(), b.Time)

	contract, err := chain.TronToAddress("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
	require.NoError(t, err)
	for _, addr := range []string{"0x" + chain.TronHex(contract), strings.ToLower(contract.Hex())} {
		srv, _ := node(t, 200, nil, `{"jsonrpc":"2.0","id":1,"result":[{"address":"`+addr+`","blockHash":"`+id+`","blockNumber":"0x3d8b1a2",
			"data":"0x00000000000000000000000000000000000000000000000000000000017d7840","logIndex":"0x3","removed":false,
			"topics":["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef","0x000000000000000000000000aa","0x000000000000000000000000bb"],
			"transactionHash":"0x5f0b2d1c3e4a5b6c7d8e9f00112233445566778899aabbccddeeff0011223344","transactionIndex":"0x1"}]}`)
		cl, err := New(srv.URL, JavaTron, Options{})
		require.NoError(t, err)
		_, err = cl.Logs(context.Background(), 1, 2, []common.Address{contract}, chain.TransferTopic)
		require.Error(t, err, "a topic that is not 32 bytes is refused, not guessed")
	}
	srv, _ = node(t, 200, nil, `{"jsonrpc":"2.0","id":1,"result":[{"address":"0x`+chain.TronHex(contract)+`","blockHash":"`+id+`","blockNumber":"0x3d8b1a2",
		"data":"0x00000000000000000000000000000000000000000000000000000000017d7840","logIndex":"0x3",
		"topics":["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"],
		"transactionHash":"0x5f0b2d1c3e4a5b6c7d8e9f00112233445566778899aabbccddeeff0011223344"}]}`)
	cl, err = New(srv.URL, JavaTron, Options{})
	require.NoError(t, err)
	logs, err := cl.Logs(context.Background(), 1, 2, []common.Address{contract}, chain.TransferTopic)
	require.NoError(t, err)
	require.Len(t, logs, 1)
	require.Equal(t, contract, logs[0].Address, "Tron's 0x41 prefix is read")
	require.Equal(t, common.HexToHash(id), logs[0].BlockHash)
	require.Equal(t, uint(3), logs[0].Index)
}

// TestHeadersAndTimeout: the configured headers go with every call; a node that
// does not answer costs one timeout.
func TestHeadersAndTimeout(t *testing.T) {
	t.Parallel()
	srv, seen := node(t, 200, nil, `{"jsonrpc":"2.0","id":1,"result":"0x2b6653dc"}`)
	cl, err := New(srv.URL, JavaTron, Options{Headers: http.Header{"Tron-Pro-Api-Key": {"k1"}}})
	require.NoError(t, err)
	id, err := cl.ChainID(context.Background())
	require.NoError(t, err)
	require.Equal(t, 0, id.Cmp(JavaTron.MainnetChainID))
	_, err = cl.BlockNumber(context.Background())
	require.NoError(t, err)
	require.Len(t, *seen, 2)
	for _, r := range *seen {
		require.Equal(t, "k1", r.Header.Get("TRON-PRO-API-KEY"))
	}

	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(stop) })
	cl, err = New(hang.URL, BSC, Options{Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	_, err = cl.BlockNumber(context.Background())
	require.Equal(t, KindTimeout, KindOf(err))
	_, err = New("ftp://127.0.0.1:1", BSC, Options{})
	require.Error(t, err)

	// A failed connection's error leaves out the URL (providers put keys in it).
	cl, err = New("http://127.0.0.1:1/v3/key-77a1", BSC, Options{Timeout: time.Second})
	require.NoError(t, err)
	_, err = cl.BlockNumber(context.Background())
	require.Equal(t, KindTransport, KindOf(err))
	require.NotContains(t, err.Error(), "key-77a1")
}

func TestParseQuantity(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"56": 56, "0x38": 56, "0x2b6653dc": 0x2b6653dc, "0x": 0, "0X10": 16} {
		v, err := ParseQuantity(in)
		require.NoError(t, err, in)
		require.Equal(t, want, v.Int64(), in)
	}
	for _, bad := range []string{"", "-1", "0xzz", "fifty"} {
		_, err := ParseQuantity(bad)
		require.Error(t, err, bad)
	}
}

// TestMillisecondTimestamps: java-tron before August 2022 sends a block's
// timestamp in milliseconds; read as seconds it is the year 54000, and the late
// payment window by block time breaks. A timestamp in seconds still reads as one.
func TestMillisecondTimestamps(t *testing.T) {
	t.Parallel()
	block := func(ts string) string {
		return `{"jsonrpc":"2.0","id":1,"result":{"baseFeePerGas":"0x0","difficulty":"0x0","extraData":"0x","gasLimit":"0x0",
		"gasUsed":"0x0","hash":"0x0000000002625a0f9b1c6d5e8e7a0c7f3d2b1a09f8e7d6c5b4a3928170605040","logsBloom":"0x00",
		"miner":"0x0000000000000000000000000000000000000000","mixHash":"0x0000000000000000000000000000000000000000000000000000000000000000",
		"nonce":"0x0000000000000000","number":"0x2625a0f","parentHash":"0x0000000002625a0e111111111111111111111111111111111111111111111111",
		"receiptsRoot":"0x00","sha3Uncles":"0x00","size":"0x1a2b","stateRoot":"0x","timestamp":"` + ts + `",
		"totalDifficulty":"0x0","transactions":[],"transactionsRoot":"0x00","uncles":[]}}`
	}
	for ts, want := range map[string]time.Time{
		"0x1802ba9f47b": time.UnixMilli(1650000000123).UTC(), // milliseconds (2022-04-15)
		"0x6740a1b2":    time.Unix(0x6740a1b2, 0).UTC(),      // seconds
		"0x174876e7ff":  time.Unix(99_999_999_999, 0).UTC(),  // the last second read as seconds (year 5138)
	} {
		srv, _ := node(t, 200, nil, block(ts))
		cl, err := New(srv.URL, JavaTron, Options{})
		require.NoError(t, err)
		b, err := cl.BlockByNumber(context.Background(), 0x2625a0f)
		require.NoError(t, err)
		require.Equal(t, want, b.Time, ts)
	}
	require.Equal(t, 2022, blockTime(1650000000123).Year())
}
