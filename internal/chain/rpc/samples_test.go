package rpc

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
)

// sample is one answer of testdata/rpcanswers: the exact bytes a node or provider
// sent (or, where marked reconstructed, sends according to its source) and what
// it means.
type sample struct {
	Name       string      `json:"name"`
	Source     string      `json:"source"`
	Provenance string      `json:"provenance"`
	Network    string      `json:"network"`
	Dialect    string      `json:"dialect"`
	Method     string      `json:"method"`
	Status     int         `json:"status"`
	Headers    http.Header `json:"headers"`
	Body       string      `json:"body"`
	Expect     struct {
		Kind string `json:"kind"`
		Cap  uint64 `json:"cap"`
		Wait string `json:"wait"`
	} `json:"expect"`
	// Call "finalized" asks through Finalized (the tag's own reading);
	// ClientKind is then the kind the client returns.
	Call       string `json:"call"`
	ClientKind string `json:"client_kind"`
}

const samplesDir = "../../../testdata/rpcanswers"

func loadSamples(t *testing.T) []sample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(samplesDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var all []sample
	names := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var ss []sample
		require.NoError(t, json.Unmarshal(raw, &ss), f)
		for i, s := range ss {
			h := http.Header{}
			for k, vs := range s.Headers {
				h[http.CanonicalHeaderKey(k)] = vs
			}
			ss[i].Headers = h
			require.NotEmpty(t, s.Name, f)
			require.False(t, names[s.Name], "two samples named %q", s.Name)
			names[s.Name] = true
			require.NotEmpty(t, s.Source, s.Name)
			require.Contains(t, []string{"recorded", "reconstructed"}, s.Provenance, s.Name)
			require.Contains(t, []string{chain.BEP20, chain.TRC20}, s.Network, s.Name)
			require.NotEmpty(t, s.Method, s.Name)
			require.NotZero(t, s.Status, s.Name)
		}
		all = append(all, ss...)
	}
	return all
}

func (s sample) wait(t *testing.T) time.Duration {
	if s.Expect.Wait == "" {
		return 0
	}
	d, err := time.ParseDuration(s.Expect.Wait)
	require.NoError(t, err, s.Name)
	return d
}

// TestSamples: every recorded or reconstructed answer reads as its sample says,
// through Classify and through a real client against a server answering those
// exact bytes.
func TestSamples(t *testing.T) {
	t.Parallel()
	samples := loadSamples(t)
	kinds := map[string]int{}
	for _, s := range samples {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			d, err := For(s.Network)
			require.NoError(t, err)
			require.Equal(t, d.Node, s.Dialect)

			v := Classify(d, s.Method, s.Status, s.Headers, []byte(s.Body))
			require.Equal(t, s.Expect.Kind, v.Kind, "kind of %s", s.Body)
			require.Equal(t, s.Expect.Cap, v.Cap, "cap of %s", s.Body)
			require.Equal(t, s.wait(t), v.Wait, "wait of %s", s.Body)
			if v.Kind != "" {
				require.NotEmpty(t, v.Message)
			}

			url, requests := s.serve(t)
			cl, err := New(url, d, Options{})
			require.NoError(t, err)
			t.Cleanup(cl.Close)
			err = s.call(cl)
			require.Equal(t, 1, requests(), "one answer, one request")
			if s.Expect.Kind == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			want := s.Expect.Kind
			if s.ClientKind != "" {
				want = s.ClientKind
			}
			require.Equal(t, want, KindOf(err), err.Error())
			require.Equal(t, s.Expect.Cap, LimitOf(err))
			require.Equal(t, s.wait(t), RetryAfterOf(err))
			require.Contains(t, err.Error(), v.Message, "the node's own answer is in the error")
			require.NotContains(t, err.Error(), "key-5f3a9c")
		})
		kinds[s.Expect.Kind]++
	}
	for _, k := range []string{"", KindRateLimit, KindRange, KindResults, KindRefused, KindNotReady, KindHTTP, KindDecode, KindRPC, KindOperator, KindSubscriptions} {
		require.NotZero(t, kinds[k], "no sample of kind %q", k)
	}
}

// serve starts a server answering the sample's exact bytes: over HTTP, or over a
// WebSocket for eth_subscribe (a subscription is asked over a ws(s) endpoint
// only). It returns the endpoint (with a key in its path) and a count of the
// requests the server read.
func (s sample) serve(t *testing.T) (string, func() int) {
	t.Helper()
	if s.Method == "eth_subscribe" {
		srv, seen := wsAnswering(t, s.Body)
		return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/key-5f3a9c", func() int { return int(seen.Load()) }
	}
	srv, seen := node(t, s.Status, s.Headers, s.Body)
	return srv.URL + "/v1/key-5f3a9c", func() int { return len(*seen) }
}

// wsAnswering serves JSON-RPC over a WebSocket, answering every request with
// body, its bytes as they are: the sample's "id" must be the request's (a new
// client's first request has id 1).
func wsAnswering(t *testing.T, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var seen atomic.Int32
	var want struct {
		ID json.RawMessage `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &want))
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(msg, &req) != nil {
				t.Errorf("not a JSON-RPC request: %s", msg)
				return
			}
			seen.Add(1)
			if string(req.ID) != string(want.ID) {
				t.Errorf("the sample answers id %s, the request is id %s", want.ID, req.ID)
				return
			}
			if conn.WriteMessage(websocket.TextMessage, []byte(body)) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// call asks the client what the sample answers.
func (s sample) call(cl *Client) error {
	ctx := context.Background()
	var err error
	switch {
	case s.Method == "eth_subscribe":
		// An accepted subscription runs until ctx is done (then nil).
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err = cl.SubscribeHeads(ctx, func(*Block) {})
	case s.Method == "eth_getLogs":
		_, err = cl.Logs(ctx, 1, 9000, []common.Address{{1}}, chain.TransferTopic)
	case s.Method == "eth_blockNumber":
		_, err = cl.BlockNumber(ctx)
	case s.Method == "eth_chainId":
		_, err = cl.ChainID(ctx)
	case s.Method == "eth_getBlockByNumber" && s.Call == "finalized":
		_, err = cl.Finalized(ctx)
	case s.Method == "eth_getBlockByNumber":
		_, err = cl.BlockByNumber(ctx, 1)
	default:
		panic("no call for " + s.Method)
	}
	return err
}

// TestVerdictRules: the rules that hold for every answer, and the header forms no
// fixed sample can hold (a date, a Unix time).
func TestVerdictRules(t *testing.T) {
	t.Parallel()
	for _, s := range loadSamples(t) {
		v := Classify(BSC, s.Method, s.Status, s.Headers, []byte(s.Body))
		if v.Kind != KindRange && v.Kind != KindResults {
			require.Zero(t, v.Cap, "only a cap names a cap: %s", s.Name)
		}
		if v.Kind == KindRange || v.Kind == KindResults {
			require.Zero(t, v.Wait, "a cap is retried at once, smaller: %s", s.Name)
		}
	}

	body := []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit exceeded"}}`)
	at := time.Now().Add(90 * time.Second)
	v := Classify(BSC, "eth_getLogs", 429, http.Header{"Retry-After": {at.UTC().Format(http.TimeFormat)}}, body)
	require.Equal(t, KindRateLimit, v.Kind)
	require.InDelta(t, 90, v.Wait.Seconds(), 2, "Retry-After as an HTTP date")
	v = Classify(BSC, "eth_getLogs", 429, http.Header{"X-Ratelimit-Reset": {strings.TrimSpace(jsonNumber(at.Unix()))}}, body)
	require.InDelta(t, 90, v.Wait.Seconds(), 2, "X-RateLimit-Reset as a Unix time")
	v = Classify(BSC, "eth_getLogs", 429, http.Header{"Retry-After": {"86400000"}}, body)
	require.Equal(t, maxWait, v.Wait, "a wait is bounded")

	// The thousands separator and K suffix, and numbers that are no cap.
	require.Equal(t, "eth_getLogs is limited to a 10000 range", normalizeNumbers("eth_getLogs is limited to a 10,000 range"))
	require.Equal(t, "a 2000 block range, a cap of 10000 logs, [0x1k]", normalizeNumbers("a 2K block range, a cap of 10K logs, [0x1k]"))
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestAnswersNobodyRecorded: answers in no sample, built from parts, read safely:
// whatever speaks of a rate, a limit or too many is a rate limit on any status and
// in any envelope or none; a page that says nothing is unnamed (never a cap, never
// ok); a cap is never the refused size written beside it.
func TestAnswersNobodyRecorded(t *testing.T) {
	t.Parallel()
	statuses := []int{200, 400, 403, 500, 502, 503, 520}
	hints := []string{"Rate exceeded", "slow down: request limit", "too many concurrent calls", "per-IP limit hit", "burst rate"}
	wraps := []func(string) string{
		func(s string) string { return s },
		func(s string) string { return "<!DOCTYPE html><html><body><h2>" + s + "</h2></body></html>" },
		func(s string) string { return `{"status":"fail","detail":"` + s + `"}` },
		func(s string) string { return `{"jsonrpc":"2.0","id":1,"error":{"code":-32099,"message":"` + s + `"}}` },
	}
	for _, st := range statuses {
		for _, h := range hints {
			for i, w := range wraps {
				v := Classify(BSC, "eth_getLogs", st, http.Header{}, []byte(w(h)))
				require.Equal(t, KindRateLimit, v.Kind, "status %d, form %d: %s", st, i, w(h))
			}
		}
		for i, w := range wraps[:3] {
			v := Classify(BSC, "eth_getLogs", st, http.Header{}, []byte(w("something went wrong")))
			require.Contains(t, []string{KindDecode, KindHTTP}, v.Kind, "status %d, form %d", st, i)
			require.Zero(t, v.Cap)
		}
	}
	for _, c := range []struct {
		msg string
		cap uint64
	}{
		{"requested block range 7500 is above the maximum of 3000", 3000},
		{"range 0 - 9000 exceeds limit 1200", 1200},
		{"block range 4000 not allowed, allowed: 1000", 1000},
		{"blocks 10 - 5010 requested; block range too large", 0},
	} {
		body := `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"` + c.msg + `"}}`
		v := Classify(BSC, "eth_getLogs", 200, http.Header{}, []byte(body))
		require.Equal(t, KindRange, v.Kind, c.msg)
		require.Equal(t, c.cap, v.Cap, c.msg)
	}
}
