package rpc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"
)

type headService struct{}

func (headService) BlockNumber() string { return "0x2a" }

// TestReconnect: Reconnect closes a ws(s) client's connection and the next call
// dials a new one; an http(s) client and a closed one are left as they are.
func TestReconnect(t *testing.T) {
	t.Parallel()
	server := gethrpc.NewServer()
	require.NoError(t, server.RegisterName("eth", headService{}))
	t.Cleanup(server.Stop)
	var opened, closed atomic.Int32
	ws := server.WebsocketHandler([]string{"*"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opened.Add(1)
		defer closed.Add(1)
		ws.ServeHTTP(w, r) // until the connection ends
	}))
	t.Cleanup(srv.Close)

	cl, err := New("ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/key-91c2", BSC, Options{Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		n, err := cl.BlockNumber(ctx)
		require.NoError(t, err)
		require.Equal(t, uint64(42), n)
	}
	require.Equal(t, int32(1), opened.Load(), "one connection for every call")

	cl.Reconnect()
	require.Eventually(t, func() bool { return closed.Load() == 1 }, 5*time.Second, 10*time.Millisecond,
		"the server sees the connection end")
	n, err := cl.BlockNumber(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(42), n)
	require.Equal(t, int32(2), opened.Load(), "the next call dials a new connection")

	cl.Close()
	cl.Reconnect()
	_, err = cl.BlockNumber(ctx)
	require.Equal(t, KindTransport, KindOf(err), "a closed client stays closed")
	require.Equal(t, int32(2), opened.Load())

	plain, err := New(srv.URL, BSC, Options{})
	require.NoError(t, err)
	plain.Reconnect() // nothing to drop
}
