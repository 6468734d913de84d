package rpc

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	gethnode "github.com/ethereum/go-ethereum/node"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// wsNode runs go-ethereum's simulated chain serving JSON-RPC over a WebSocket, as a
// BNB Smart Chain provider's wss:// endpoint does.
func wsNode(t *testing.T) (*simulated.Backend, string) {
	t.Helper()
	wsPort, authPort := freePort(t), freePort(t)
	backend := simulated.NewBackend(types.GenesisAlloc{}, func(nc *gethnode.Config, _ *ethconfig.Config) {
		nc.WSHost, nc.WSPort = "127.0.0.1", wsPort
		nc.WSModules = []string{"eth", "net", "web3"}
		nc.WSOrigins = []string{"*"}
		nc.AuthAddr, nc.AuthPort = "127.0.0.1", authPort
	})
	t.Cleanup(func() { _ = backend.Close() })
	return backend, fmt.Sprintf("ws://127.0.0.1:%d", wsPort)
}

// TestWebSocketNode: over a real node's WebSocket the client reads the chain as
// over HTTP, its errors go through the same classifier, and new heads arrive as
// blocks are mined.
func TestWebSocketNode(t *testing.T) {
	t.Parallel()
	backend, url := wsNode(t)
	cl, err := New(url, BSC, Options{Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	require.True(t, cl.Push())
	ctx := context.Background()

	id, err := cl.ChainID(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1337), id.Int64())
	backend.Commit()
	head, err := cl.BlockNumber(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), head)
	b, err := cl.BlockByNumber(ctx, head)
	require.NoError(t, err)
	want, err := backend.Client().HeaderByNumber(ctx, big.NewInt(1))
	require.NoError(t, err)
	require.Equal(t, want.Hash(), b.Hash)
	require.Equal(t, time.Unix(int64(want.Time), 0).UTC(), b.Time)
	logs, err := cl.Logs(ctx, 0, head, []common.Address{{1}}, chain.TransferTopic)
	require.NoError(t, err)
	require.Empty(t, logs)
	missing, err := cl.BlockByNumber(ctx, 1000)
	require.NoError(t, err)
	require.Nil(t, missing, "null is no block, as over HTTP")

	// go-ethereum's own errors, classified as the same answer over HTTP would be.
	err = cl.call(ctx, new(any), "eth_getLogs", map[string]any{"blockHash": common.Hash{1}.Hex()})
	require.Equal(t, KindNotReady, KindOf(err), err)
	require.Contains(t, err.Error(), "unknown block")
	err = cl.call(ctx, new(any), "eth_notAMethod")
	require.Equal(t, KindRefused, KindOf(err), err)
	require.Contains(t, err.Error(), "does not exist/is not available")

	// Heads: each Commit after the subscription is up arrives, in order, with
	// the block's own hash and parent hash.
	heads := make(chan uint64, 64)
	pushed := make(chan *Block, 64)
	subCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- cl.SubscribeHeads(subCtx, func(h *Block) {
			heads <- h.Number
			pushed <- h
		})
	}()
	var first uint64
	for tries := 0; first == 0; tries++ {
		// Mine until the first head arrives (the subscription starts asynchronously).
		require.Less(t, tries, 100, "no head arrived")
		backend.Commit()
		select {
		case first = <-heads:
		case err := <-done:
			t.Fatalf("the subscription ended: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	for len(heads) > 0 {
		first = max(first, <-heads)
	}
	for i := uint64(1); i <= 3; i++ {
		backend.Commit()
		select {
		case n := <-heads:
			require.Equal(t, first+i, n, "the head just mined")
			var h *Block
			for h == nil || h.Number != n {
				h = <-pushed
			}
			b, err := cl.BlockByNumber(ctx, n)
			require.NoError(t, err)
			require.Equal(t, b.Hash, h.Hash, "the node's own hash")
			require.Equal(t, b.ParentHash, h.ParentHash)
			require.Equal(t, b.Time, h.Time)
		case <-time.After(10 * time.Second):
			t.Fatal("no head after Commit")
		}
	}
	stop()
	require.NoError(t, <-done, "a cancelled subscription ends without error")
}

// wsService is a go-ethereum JSON-RPC service answering as a provider does.
type wsService struct{}

// providerError is a JSON-RPC error with data, as go-ethereum's server sends it.
type providerError struct {
	code int
	msg  string
	data any
}

func (e providerError) Error() string  { return e.msg }
func (e providerError) ErrorCode() int { return e.code }
func (e providerError) ErrorData() any { return e.data }

func (wsService) BlockNumber() string { return "0x10" }

func (wsService) GetLogs(_ map[string]any) ([]any, error) {
	return nil, providerError{-32602, "invalid params", map[string]any{"maxBlockRange": 2000}}
}

func (wsService) ChainId() (string, error) {
	return "", providerError{-32005, "project ID request rate exceeded", map[string]any{"rate": map[string]any{"backoff_seconds": 3}}}
}

// TestWebSocketServer: headers go with the handshake; a JSON-RPC error with data
// (a cap, a back-off) is read as over HTTP; a refused handshake by its status; a
// provider down at start fails calls, not New, and no error names the URL.
func TestWebSocketServer(t *testing.T) {
	t.Parallel()
	server := gethrpc.NewServer()
	require.NoError(t, server.RegisterName("eth", wsService{}))
	t.Cleanup(server.Stop)
	var mu sync.Mutex
	var keys []string
	ws := server.WebsocketHandler([]string{"*"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		if r.URL.Path == "/limited" {
			w.Header().Set("Retry-After", "4")
			http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
			return
		}
		ws.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http")

	cl, err := New(url+"/v3/key-0c41d7", BSC, Options{Headers: http.Header{"X-Api-Key": {"k7"}}, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx := context.Background()
	n, err := cl.BlockNumber(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(16), n)
	_, err = cl.Logs(ctx, 1, 9000, []common.Address{{1}}, chain.TransferTopic)
	require.Equal(t, KindRange, KindOf(err), err)
	require.Equal(t, uint64(2000), LimitOf(err), "the cap named only in error.data")
	_, err = cl.ChainID(ctx)
	require.Equal(t, KindRateLimit, KindOf(err), err)
	require.Equal(t, 3*time.Second, RetryAfterOf(err), "data.rate.backoff_seconds")
	mu.Lock()
	require.Equal(t, []string{"k7"}, keys, "one handshake, with the provider's headers")
	mu.Unlock()

	limited, err := New(url+"/limited", BSC, Options{Timeout: 5 * time.Second})
	require.NoError(t, err)
	_, err = limited.BlockNumber(ctx)
	require.Equal(t, KindRateLimit, KindOf(err), err)

	down, err := New(fmt.Sprintf("ws://127.0.0.1:%d/v3/key-0c41d7", freePort(t)), BSC, Options{Timeout: time.Second})
	require.NoError(t, err, "a provider down at start does not fail New")
	_, err = down.BlockNumber(ctx)
	require.Equal(t, KindTransport, KindOf(err), err)
	require.NotContains(t, err.Error(), "key-0c41d7")
	err = down.SubscribeHeads(ctx, func(*Block) {})
	require.Equal(t, KindTransport, KindOf(err))

	plain, err := New(srv.URL, BSC, Options{})
	require.NoError(t, err)
	require.False(t, plain.Push())
	require.True(t, errors.Is(plain.SubscribeHeads(ctx, func(*Block) {}), ErrNoPush))
}
