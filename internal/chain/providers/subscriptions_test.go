package providers_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain/providers"
)

// subscribeAttempt is one eth_subscribe a pushNode answered.
type subscribeAttempt struct {
	conn     int // the connection's number, 1 for the first one the node saw
	at       time.Time
	accepted bool
}

// pushNode is a provider's ws(s) endpoint (go-ethereum's JSON-RPC server) that
// refuses newHeads "for the subscriptions open on the connection" on its first
// refuse connections, and on the others accepts it and pushes a head every
// few milliseconds.
type pushNode struct {
	refuse atomic.Int64
	head   atomic.Uint64

	mu       sync.Mutex
	conns    map[string]int // remote address → connection number
	closed   map[int]bool
	attempts []subscribeAttempt
	url      string
}

const refusal = "too many subscriptions on this connection"

func startPushNode(t *testing.T, refuse int64) *pushNode {
	t.Helper()
	n := &pushNode{conns: map[string]int{}, closed: map[int]bool{}}
	n.refuse.Store(refuse)
	n.head.Store(100)
	server := gethrpc.NewServer()
	require.NoError(t, server.RegisterName("eth", &pushService{n}))
	t.Cleanup(server.Stop)
	ws := server.WebsocketHandler([]string{"*"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		id := len(n.conns) + 1
		n.conns[r.RemoteAddr] = id
		n.mu.Unlock()
		ws.ServeHTTP(w, r) // until the connection ends
		n.mu.Lock()
		n.closed[id] = true
		n.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	n.url = "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/key-3b7e"
	return n
}

func (n *pushNode) tried() []subscribeAttempt {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]subscribeAttempt(nil), n.attempts...)
}

func (n *pushNode) isClosed(conn int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed[conn]
}

// pushService is the node's eth namespace.
type pushService struct{ n *pushNode }

func (s *pushService) BlockNumber() string { return hexutil.EncodeUint64(s.n.head.Load()) }

func (s *pushService) ChainId() string { return "0x38" }

func (s *pushService) GetBlockByNumber(string, bool) (map[string]any, error) { return nil, nil }

func (s *pushService) Syncing() bool { return false }

// NewHeads is eth_subscribe("newHeads").
func (s *pushService) NewHeads(ctx context.Context) (*gethrpc.Subscription, error) {
	n := s.n
	peer := gethrpc.PeerInfoFromContext(ctx)
	n.mu.Lock()
	conn := n.conns[peer.RemoteAddr]
	accepted := int64(conn) > n.refuse.Load()
	n.attempts = append(n.attempts, subscribeAttempt{conn: conn, at: time.Now(), accepted: accepted})
	n.mu.Unlock()
	if !accepted {
		return nil, errors.New(refusal)
	}
	notifier, ok := gethrpc.NotifierFromContext(ctx)
	if !ok {
		return nil, gethrpc.ErrNotificationsUnsupported
	}
	sub := notifier.CreateSubscription()
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sub.Err():
				return
			case <-tick.C:
				h := n.head.Add(1)
				_ = notifier.Notify(sub.ID, map[string]string{
					"number":     hexutil.EncodeUint64(h),
					"hash":       common.BigToHash(new(big.Int).SetUint64(h)).Hex(),
					"parentHash": common.BigToHash(new(big.Int).SetUint64(h - 1)).Hex(),
					"timestamp":  hexutil.EncodeUint64(uint64(time.Now().Unix())),
				})
			}
		}
	}()
	return sub, nil
}

// logLines collects what the pool logs.
type logLines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count returns how many lines at level contain s.
func (l *logLines) count(level, s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := 0
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, "level="+level) && strings.Contains(line, s) {
			c++
		}
	}
	return c
}

func (l *logLines) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// woken reports whether a pushed head woke the scanner.
func woken(pool *providers.Pool) bool {
	select {
	case <-pool.Wake():
		return true
	default:
		return false
	}
}

// TestSubscriptionRefusedReconnects: a provider that refuses newHeads for the
// subscriptions open on the connection is subscribed to again on a new
// connection (the refusing one is closed), and its heads then arrive; the
// refusal is logged, and once is no reason to say the provider refuses push.
func TestSubscriptionRefusedReconnects(t *testing.T) {
	t.Parallel()
	node := startPushNode(t, 1)
	var logs logLines
	pool := newPool(providers.Options{MaxBackoff: 100 * time.Millisecond, Log: logs.logger()},
		providers.Provider{URL: node.url, Client: client(t, node.url)})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, err := pool.BlockNumber(ctx) // in use: it subscribes
	require.NoError(t, err)
	go pool.Run(ctx)

	require.Eventually(t, func() bool { return woken(pool) }, 10*time.Second, 10*time.Millisecond,
		"after the refusal, pushed heads wake the scanner")
	tried := node.tried()
	require.GreaterOrEqual(t, len(tried), 2)
	require.Equal(t, subscribeAttempt{conn: 1, at: tried[0].at}, tried[0], "refused on the first connection")
	last := tried[len(tried)-1]
	require.True(t, last.accepted)
	require.Greater(t, last.conn, 1, "accepted on a new connection")
	require.Eventually(t, func() bool { return node.isClosed(1) }, 5*time.Second, 10*time.Millisecond,
		"the refusing connection is closed")
	require.Equal(t, 1, logs.count("INFO", "refused the new-heads subscription"), "the refusal is logged")
	require.Zero(t, logs.count("WARN", "refuses push"))
	require.Eventually(t, func() bool { return logs.count("INFO", "chain provider pushes new heads") == 1 },
		5*time.Second, 10*time.Millisecond)

	n, err := pool.BlockNumber(ctx)
	require.NoError(t, err)
	require.Greater(t, n, uint64(100), "the head pushed")
}

// TestSubscriptionRefusedRepeatedly: a provider that refuses newHeads on every new
// connection is said to refuse push in one WARN after refusalsBeforeWarn
// refusals, and is asked again every MaxBackoff, each time on a new connection,
// every refusal logged, never in a tight loop; the watcher reads the chain by
// calls meanwhile, and once the provider accepts, its heads arrive again.
func TestSubscriptionRefusedRepeatedly(t *testing.T) {
	t.Parallel()
	node := startPushNode(t, 1<<40)
	var logs logLines
	const maxBackoff = 150 * time.Millisecond
	pool := newPool(providers.Options{MaxBackoff: maxBackoff, Log: logs.logger()},
		providers.Provider{URL: node.url, Client: client(t, node.url)})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, err := pool.BlockNumber(ctx)
	require.NoError(t, err)
	go pool.Run(ctx)

	require.Eventually(t, func() bool { return len(node.tried()) >= 6 }, 20*time.Second, 10*time.Millisecond)
	tried := node.tried()
	conns := map[int]bool{}
	for i, a := range tried {
		require.False(t, a.accepted)
		require.False(t, conns[a.conn], "attempt %d on a new connection", i+1)
		conns[a.conn] = true
		if i > 0 {
			require.GreaterOrEqual(t, a.at.Sub(tried[i-1].at), maxBackoff, "attempt %d waited", i+1)
		}
	}
	require.Equal(t, 1, logs.count("WARN", "refuses push"), "one WARN for the refusals in a row")
	require.Equal(t, 2, logs.count("INFO", "refused the new-heads subscription"), "the refusals before it")
	require.Eventually(t, func() bool {
		return logs.count("DEBUG", "refused the new-heads subscription again") >= len(tried)-3
	}, 5*time.Second, 10*time.Millisecond, "each later refusal is logged too")
	require.Zero(t, logs.count("WARN", "subscription failed"), "a refusal is not reported as a failure")
	require.False(t, woken(pool), "no head was pushed")

	n, err := pool.BlockNumber(ctx)
	require.NoError(t, err, "the watcher polls meanwhile")
	require.Equal(t, uint64(100), n)

	node.refuse.Store(0) // the provider accepts again
	require.Eventually(t, func() bool { return woken(pool) }, 10*time.Second, 10*time.Millisecond,
		"push resumes once the provider accepts")
	require.Equal(t, 1, logs.count("WARN", "refuses push"), "still one WARN")
}
