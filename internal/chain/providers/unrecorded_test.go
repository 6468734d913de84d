package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/chain/providers"
	"partnerd/internal/chain/rpc"
)

// answering is a provider in front of a real node that answers eth_getLogs with
// its own bytes when say returns a body, and records every span it was asked.
type answering struct {
	URL   string
	mu    sync.Mutex
	spans []uint64
	say   func(method string, from, to uint64) (int, string)
}

func newAnswering(t *testing.T, target string, say func(method string, from, to uint64) (int, string)) *answering {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	a := &answering{say: say}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var call struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(body, &call)
		var from, to uint64
		if call.Method == "eth_getLogs" && len(call.Params) == 1 {
			var q struct{ FromBlock, ToBlock string }
			_ = json.Unmarshal(call.Params[0], &q)
			from, _ = strconv.ParseUint(strings.TrimPrefix(q.FromBlock, "0x"), 16, 64)
			to, _ = strconv.ParseUint(strings.TrimPrefix(q.ToBlock, "0x"), 16, 64)
			a.mu.Lock()
			a.spans = append(a.spans, to-from+1)
			a.mu.Unlock()
		}
		if status, text := a.say(call.Method, from, to); status != 0 {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, strings.ReplaceAll(text, "$ID", string(call.ID)))
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

func (a *answering) asked() []uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]uint64(nil), a.spans...)
}

// TestBehindIsNoCap: a load-balanced provider whose logs come from a backend
// behind its head, in words that read as a range cap and that no sample holds,
// while its eth_blockNumber is fresh. The deposit in that window is read through
// the other provider, and once the backend catches up the provider is asked the
// full span again: nothing was learnt as a cap.
func TestBehindIsNoCap(t *testing.T) {
	t.Parallel()
	ch, token := tokenChain(t)
	ctx := context.Background()
	_, err := ch.Transfer(ctx, token, common.Address{7}, big.NewInt(1_000_000))
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		ch.Backend.Commit()
	}
	head, err := ch.Backend.Client().BlockNumber(ctx)
	require.NoError(t, err)
	var lagging sync.Mutex
	behind := true
	a := newAnswering(t, ch.URL, func(method string, _, to uint64) (int, string) {
		lagging.Lock()
		defer lagging.Unlock()
		if method == "eth_getLogs" && behind && to > head-8 {
			return 200, `{"jsonrpc":"2.0","id":$ID,"error":{"code":-32000,"message":"block range not available on this backend"}}`
		}
		return 0, ""
	})
	b := addProxy(t, ch)
	pool := newPool(providers.Options{},
		providers.Provider{URL: a.URL, Client: client(t, a.URL)},
		providers.Provider{URL: b.URL, Client: client(t, b.URL)})
	_, err = pool.BlockNumber(ctx)
	require.NoError(t, err)

	logs, err := pool.Logs(ctx, head-11, head, []common.Address{token}, topic)
	require.NoError(t, err)
	require.True(t, paid(logs), "the deposit, read through the other provider")
	require.Positive(t, b.Calls("eth_getLogs"))

	lagging.Lock()
	behind = false
	lagging.Unlock()
	for i := 0; i < 3; i++ {
		ch.Backend.Commit()
	}
	require.Eventually(t, func() bool {
		_, err := pool.BlockNumber(ctx)
		require.NoError(t, err)
		return stateOf(pool, providers.Name(a.URL)).State == chain.ProviderActive
	}, 10*time.Second, 20*time.Millisecond, "the provider is back in its turn")
	before := len(a.asked())
	logs, err = pool.Logs(ctx, head-11, head, []common.Address{token}, topic)
	require.NoError(t, err)
	require.True(t, paid(logs))
	spans := a.asked()[before:]
	require.Equal(t, []uint64{12}, spans, "asked the whole span at once: no cap was learnt from a backend behind")
}

// TestCapIsTheCapNotTheRefusedSize: a cap written after the refused size (in
// words no sample holds) is learnt as the cap once a request of that size is
// served; the next requests are split at it without a refusal, and the caller
// gets the whole range.
func TestCapIsTheCapNotTheRefusedSize(t *testing.T) {
	t.Parallel()
	ch, token := tokenChain(t)
	ctx := context.Background()
	for i := 0; i < 12; i++ {
		ch.Backend.Commit()
	}
	head, err := ch.Backend.Client().BlockNumber(ctx)
	require.NoError(t, err)
	refused := 0
	var mu sync.Mutex
	a := newAnswering(t, ch.URL, func(method string, from, to uint64) (int, string) {
		if method == "eth_getLogs" && to-from+1 > 4 {
			mu.Lock()
			refused++
			mu.Unlock()
			return 200, `{"jsonrpc":"2.0","id":$ID,"error":{"code":-32602,"message":"your block range of ` +
				strconv.FormatUint(to-from+1, 10) + ` blocks is above the maximum allowed of 4 for this key"}}`
		}
		return 0, ""
	})
	pool := newPool(providers.Options{}, providers.Provider{URL: a.URL, Client: client(t, a.URL)})
	_, err = pool.Logs(ctx, head-9, head, []common.Address{token}, topic)
	require.NoError(t, err, "the range served in pieces")
	require.Equal(t, 1, refused)
	require.Equal(t, []uint64{10, 4, 4, 2}, a.asked())
	_, err = pool.Logs(ctx, head-9, head, []common.Address{token}, topic)
	require.NoError(t, err)
	require.Equal(t, 1, refused, "the cap is believed: no refusal after")
}

// TestOperatorMustAct: a provider whose key is refused leaves the rotation, is
// shown as action_needed, and the pool says it is stranded when it was the last.
func TestOperatorMustAct(t *testing.T) {
	t.Parallel()
	ch := startChain(t)
	a := newAnswering(t, ch.URL, func(string, uint64, uint64) (int, string) {
		return 401, "invalid project id\n"
	})
	b := addProxy(t, ch)
	ctx := context.Background()
	obs := &observer{}
	two := newPool(providers.Options{Observer: obs},
		providers.Provider{URL: a.URL, Client: client(t, a.URL)},
		providers.Provider{URL: b.URL, Client: client(t, b.URL)})
	_, err := two.BlockNumber(ctx)
	require.NoError(t, err, "the other provider answers")
	require.Equal(t, chain.ProviderActionNeeded, stateOf(two, providers.Name(a.URL)).State)
	require.True(t, obs.saw(providers.Name(a.URL), chain.ProviderActionNeeded))
	require.Nil(t, two.Stranded(), "another provider serves")

	one := newPool(providers.Options{}, providers.Provider{URL: a.URL, Client: client(t, a.URL)})
	_, err = one.BlockNumber(ctx)
	require.Equal(t, rpc.KindOperator, rpc.KindOf(err))
	_, err = one.BlockNumber(ctx)
	require.Equal(t, rpc.KindOperator, rpc.KindOf(err))
	require.Len(t, one.Stranded(), 1)
	require.Contains(t, one.Stranded()[0], "invalid project id")
}

// paid reports whether logs hold the transfer to address 7.
func paid(logs []rpc.Log) bool {
	for _, lg := range logs {
		if len(lg.Topics) == 3 && common.BytesToAddress(lg.Topics[2].Bytes()) == (common.Address{7}) {
			return true
		}
	}
	return false
}
