package rpc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// rpcError envelopes a message as a node's JSON-RPC error.
func errBody(code int, msg string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": code, "message": msg}})
	return string(b)
}

// TestNotReadyBlocks: a block the node does not hold yet, named by its number,
// hash or tag, in any words, is a node behind (not_ready), whatever the code; a
// range of blocks or a number of blocks is never one.
func TestNotReadyBlocks(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{
		"block not found",
		"Block not found.",
		"block #123 not found",
		"block #-1 not found",
		"header #51234 not found",
		"block 36077340 not found",
		"block 0x2d3c5e1 not found",
		"Block 0x2D3C5E1 was not found",
		"block with number 123 does not exist",
		"block number 77 doesn't exist",
		"header for hash not found",
		"block hash 0xab12 not found",
		`block "finalized" not found`,
		"requested block number 0x2d3c5e1 is out of range",
		"requested block is out of range",
		"block number out of range",
		"Block number out of range.",
		"BLOCK IS OUT OF RANGE",
		"block height 1234 is out of range",
		"block 0x10 (requested) is out of bounds",
		"block 99 is in the future",
		"block number too high",
		"block 51 not yet produced",
		"cannot find block 1234",
		"unable to load the requested block",
		"no block found for number 0x1234",
		"block 50162452 is beyond the latest block 50162448 of this node, retry later",
		"toBlock 0x10 is greater than the latest block 0xf",
		"requested block is ahead of the current head",
		"Internal error: height 61453 must be less than or equal to the current blockchain height 10245 (code: -32603)",
		"backend is 1200 blocks behind, try another",
		"node is still catching up",
	} {
		for _, code := range []int{-32000, -32602, -32603, -32001, 0} {
			v := Classify(BSC, "eth_getLogs", 200, nil, []byte(errBody(code, msg)))
			require.Equal(t, KindNotReady, v.Kind, "code %d: %s", code, msg)
			require.Zero(t, v.Cap, msg)
			require.Equal(t, code, v.Code)
			require.Equal(t, msg, v.Message)
		}
	}

	// Range refusals stay range refusals, wherever "out of range" or a number of
	// blocks appears.
	for msg, want := range map[string]uint64{
		"block range out of range":                          0,
		"block range out of range, max 5000":                5000,
		"exceeds max block range 5000":                      5000,
		"block range is out of range (9000 > 2000)":         2000,
		"requested blocks out of range (max 1000)":          1000,
		"query exceeds max block range 100000":              100000,
		"block range extends past 5000 blocks, not allowed": 5000,
	} {
		v := Classify(BSC, "eth_getLogs", 200, nil, []byte(errBody(-32000, msg)))
		require.Equal(t, KindRange, v.Kind, msg)
		require.Equal(t, want, v.Cap, msg)
	}

	// Texts that name a block without saying the node lacks it are not read as a
	// node behind.
	for _, msg := range []string{
		"intrinsic gas exceeds the current block gas limit",
		"filter not found",
		"transaction 0xab not found",
		"blocks 10 - 5010 requested; block range too large",
	} {
		v := Classify(BSC, "eth_call", 200, nil, []byte(errBody(-32000, msg)))
		require.NotEqual(t, KindNotReady, v.Kind, msg)
	}
}

// TestBlockCountCaps: a cap stated in any words with a number of blocks is a range
// cap, that number, even where the words also say "limit exceeded" (which alone is
// a rate limit); the number may be written 2.000, 2,000 or 2K.
func TestBlockCountCaps(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]uint64{
		"Limit exceeded: Query requested more than 2.000 blocks":  2000,
		"Limit exceeded: Query requested more than 10.000 blocks": 10000,
		"Limit exceeded. Query requested more than 10,000 blocks": 10000,
		"cannot query logs for more than 10000 blocks":            10000,
		"query exceeds 5000 blocks":                               5000,
		"you can't request more than 1.000 blocks at once":        1000,
		"eth_getLogs is limited to 2.000 blocks":                  2000,
		"max 5000 blocks per query":                               5000,
		"a 3000 block limit applies to eth_getLogs":               3000,
		"queries over 2K blocks are refused":                      2000,
		"the range may span up to 1.500 blocks":                   1500,
		"requested 9000 blocks, more than 2000 blocks allowed":    2000,
		"request exceeds the maximum of 800 blocks":               800,
		"Limit exceeded: query range of 5000 blocks":              0, // the refused size, no cap
	} {
		for _, code := range []int{-32000, -32005, -32602, 0} {
			v := Classify(BSC, "eth_getLogs", 200, nil, []byte(errBody(code, msg)))
			require.Equal(t, KindRange, v.Kind, "code %d: %s", code, msg)
			require.Equal(t, want, v.Cap, "code %d: %s", code, msg)
			require.Zero(t, v.Wait)
		}
	}
	// Without a number of blocks, "limit exceeded" is still a rate limit, and a
	// count of logs still a result cap.
	for msg, want := range map[string]string{
		"limit exceeded": KindRateLimit,
		"Limit exceeded: 100 requests per second": KindRateLimit,
		"query returned more than 10.000 results": KindResults,
		"more than 2.000 logs matched":            KindResults,
	} {
		v := Classify(BSC, "eth_getLogs", 200, nil, []byte(errBody(-32005, msg)))
		require.Equal(t, want, v.Kind, msg)
	}
}

// TestNormalizeNumbers: counts with dots between their thousands read as numbers
// before the words blocks, logs and results; decimals elsewhere (a wait of 1.5s)
// are left alone.
func TestNormalizeNumbers(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Query requested more than 2.000 blocks":   "Query requested more than 2000 blocks",
		"more than 10.000 blocks":                  "more than 10000 blocks",
		"a 10.000-block range":                     "a 10000-block range",
		"more than 1.000.000 Results":              "more than 1000000 Results",
		"5.000 logs":                               "5000 logs",
		"try again in 1.5s":                        "try again in 1.5s",
		"retry after 2.500 seconds":                "retry after 2.500 seconds",
		"version 1.10.000 blocks":                  "version 1.10.000 blocks",
		"0.250 blocks":                             "0.250 blocks",
		"10,000 blocks and 10K logs":               "10000 blocks and 10000 logs",
		"rate 1.000 requests, 2.000 blocks":        "rate 1.000 requests, 2000 blocks",
		"eth_getLogs is limited to a 10,000 range": "eth_getLogs is limited to a 10000 range",
	} {
		require.Equal(t, want, normalizeNumbers(in), in)
	}
	v := Classify(BSC, "eth_getLogs", 200, nil, []byte(errBody(-32000, "rate limited, try again in 1.5s")))
	require.Equal(t, KindRateLimit, v.Kind)
	require.Equal(t, "1.5s", v.Wait.String())
}

// TestBusyAndTooQuickly: a server that says it is busy, or that requests come too
// quickly, is a rate limit in any envelope and on any status.
func TestBusyAndTooQuickly(t *testing.T) {
	t.Parallel()
	hints := []string{
		"server is busy", "Server is busy, try again later", "Server busy", "node is overloaded, please retry",
		"service temporarily overloaded", "backend busy; retry later", "SERVER_BUSY",
		"request too quickly", "You are requesting too quickly", "requests too frequent, slow down",
		"calls too fast", "Please slow down", "Max calls per sec rate limit reached (5/sec)",
	}
	wraps := []func(string) string{
		func(s string) string { return s },
		func(s string) string { return "<html><body><h1>" + s + "</h1></body></html>" },
		func(s string) string { return errBody(-32000, s) },
		func(s string) string { return errBody(-32009, s) },
		func(s string) string { return `{"error":"` + s + `"}` },
		func(s string) string { return `{"code":403,"message":"` + s + `"}` },
		func(s string) string { return `{"Error":"` + s + `"}` },
		func(s string) string { return `{"status":"0","message":"NOTOK","result":"` + s + `"}` },
	}
	for _, st := range []int{200, 403, 500, 503} {
		for _, h := range hints {
			for i, w := range wraps {
				v := Classify(BSC, "eth_getLogs", st, http.Header{}, []byte(w(h)))
				require.Equal(t, KindRateLimit, v.Kind, "status %d, form %d: %s", st, i, w(h))
				require.Zero(t, v.Cap)
			}
		}
	}
}

// TestNotJSONRPC: a 2xx object with neither "jsonrpc" nor "id" is no node's
// answer, even with a "result": one that speaks of a rate is a rate limit, one of
// a key the operator's, any other is decode, never ok. A JSON-RPC answer (2.0, or
// 1.0 with an id alone) is read as before.
func TestNotJSONRPC(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"status":"0","message":"NOTOK","result":"Max calls per sec rate limit reached (5/sec)"}`:                          KindRateLimit,
		`{"status":"0","message":"NOTOK","result":"Max rate limit reached, please use API Key for higher rate limit"}`:      KindRateLimit,
		`{"status":"0","message":"NOTOK","result":"Max calls per sec rate limit reached (2/sec). Please switch to API V2"}`: KindRateLimit,
		`{"ok":false,"result":"too many calls, slow down"}`:                                                                 KindRateLimit,
		`{"status":"0","message":"NOTOK","result":"Invalid API Key"}`:                                                       KindOperator,
		`{"status":"1","message":"OK","result":"0x10"}`:                                                                     KindDecode,
		`{"status":"0","message":"No transactions found","result":[]}`:                                                      KindDecode,
		`{"result":[{"gasLimit":"0x1c9c380","rateLimitHint":"none"}]}`:                                                      KindDecode,
		`{"result":"0x1"}`:                        KindDecode,
		`{"status":"ok"}`:                         KindDecode,
		`{"jsonrpc":"2.0","id":1,"result":"0x1"}`: "",
		`{"id":1,"result":"0x1"}`:                 "",
		`{"jsonrpc":"2.0","result":"0x1"}`:        "",
	} {
		v := Classify(BSC, "eth_blockNumber", 200, http.Header{}, []byte(body))
		require.Equal(t, want, v.Kind, body)
		if want != "" {
			require.NotEmpty(t, v.Message, body)
		}
	}
}

// TestSubscriptionRefusals: a subscription refused for the number already open on
// the connection is its own kind (a new connection ends it, no wait does), never
// a rate limit by its "too many" or its code, and not a plan's subscription.
func TestSubscriptionRefusals(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{
		"too many subscriptions on this connection",
		"Too many subscriptions",
		"too many active subscriptions",
		"subscription limit reached for this connection",
		"subscriptions limit exceeded on this websocket",
		"max subscriptions per connection",
		"max subscriptions per connection reached (100)",
		"Maximum 5 subscriptions are allowed for a websocket connection. The limit can be updated with 'admin_setMaxSubscriptionPerWSConn' API",
		"max number of subscriptions reached",
		"exceeded the maximum number of subscriptions",
		"reached the limit of allowed subscriptions",
		"Limit of 1000 subscriptions per client exceeded",
	} {
		for _, code := range []int{-32000, -32005, -32603, 429, 0} {
			v := Classify(BSC, "eth_subscribe", 200, nil, []byte(errBody(code, msg)))
			require.Equal(t, KindSubscriptions, v.Kind, "code %d: %s", code, msg)
			require.Zero(t, v.Cap)
		}
		v := Classify(BSC, "eth_subscribe", 429, nil, []byte(errBody(-32005, msg)))
		require.Equal(t, KindSubscriptions, v.Kind, "429: %s", msg)
		v = Classify(BSC, "eth_subscribe", 200, nil, []byte(msg))
		require.Equal(t, KindSubscriptions, v.Kind, "text: %s", msg)
		v = Classify(BSC, "eth_subscribe", 200, nil, []byte(fmt.Sprintf(`{"error":%q}`, msg)))
		require.Equal(t, KindSubscriptions, v.Kind, "bare error: %s", msg)
	}
	for msg, want := range map[string]string{
		"subscription not found":                 KindRPC,
		"your subscription has expired":          KindOperator,
		"notifications not supported":            KindRefused,
		"too many requests":                      KindRateLimit,
		"too many connections":                   KindRateLimit,
		"monthly subscription quota exhausted":   KindOperator,
		"rate limit exceeded for eth_subscribe":  KindRateLimit,
		"subscription rate limited, retry in 2s": KindRateLimit,
	} {
		v := Classify(BSC, "eth_subscribe", 200, nil, []byte(errBody(-32000, msg)))
		require.Equal(t, want, v.Kind, msg)
	}
}
