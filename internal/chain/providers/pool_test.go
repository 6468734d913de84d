package providers_test

import (
	"context"
	"io"
	"log/slog"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/chain/providers"
	"partnerd/internal/chain/rpc"
)

// startChain runs a chain answering as BNB Smart Chain behind a provider, with a
// few blocks mined.
func startChain(t *testing.T) *devnet.Chain {
	t.Helper()
	ch, err := devnet.Start(0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	for i := 0; i < 8; i++ {
		ch.Backend.Commit()
	}
	return ch
}

func client(t *testing.T, url string) *rpc.Client {
	t.Helper()
	d, err := rpc.For(chain.BEP20)
	require.NoError(t, err)
	c, err := rpc.New(url, d, rpc.Options{Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func addProxy(t *testing.T, ch *devnet.Chain) *devnet.Proxy {
	t.Helper()
	px, err := ch.AddProxy(devnet.BSC)
	require.NoError(t, err)
	return px
}

// observer records what the pool reports.
type observer struct {
	mu   sync.Mutex
	seen [][]chain.ProviderState
}

func (o *observer) ChainProviders(network string, states []chain.ProviderState) {
	o.mu.Lock()
	o.seen = append(o.seen, states)
	o.mu.Unlock()
}

func (o *observer) saw(name, state string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ss := range o.seen {
		for _, s := range ss {
			if s.Name == name && s.State == state {
				return true
			}
		}
	}
	return false
}

func newPool(opts providers.Options, ps ...providers.Provider) *providers.Pool {
	if opts.Network == "" {
		opts.Network = chain.BEP20
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return providers.New(opts, ps)
}

func stateOf(p *providers.Pool, name string) chain.ProviderState {
	for _, s := range p.States() {
		if s.Name == name {
			return s
		}
	}
	return chain.ProviderState{}
}

var topic = chain.TransferTopic

// TestNameHidesKeys: a provider is shown by scheme and host only.
func TestNameHidesKeys(t *testing.T) {
	t.Parallel()
	require.Equal(t, "https://bsc-mainnet.infura.io", providers.Name("https://bsc-mainnet.infura.io/v3/0123456789abcdef"))
	require.Equal(t, "wss://go.getblock.io", providers.Name("wss://go.getblock.io/abcdef0123?api_key=secret"))
	require.Equal(t, "https://node.example:8545", providers.Name("https://user:password@node.example:8545/rpc"))
}

// TestSingleProviderCallsAsAClient: a pool of one provider sends exactly the calls
// the client alone sends, method by method.
func TestSingleProviderCallsAsAClient(t *testing.T) {
	t.Parallel()
	ch := startChain(t)
	direct, pooled := addProxy(t, ch), addProxy(t, ch)
	pool := newPool(providers.Options{CheckDepth: 3}, providers.Provider{URL: pooled.URL, Client: client(t, pooled.URL)})
	var alone providers.Client = client(t, direct.URL)
	ctx := context.Background()
	for _, c := range []providers.Client{alone, pool} {
		_, err := c.ChainID(ctx)
		require.NoError(t, err)
		head, err := c.BlockNumber(ctx)
		require.NoError(t, err)
		_, err = c.Logs(ctx, 0, head, []common.Address{{1}}, topic)
		require.NoError(t, err)
		b, err := c.BlockByNumber(ctx, head)
		require.NoError(t, err)
		require.NotNil(t, b)
		b, err = c.BlockByNumber(ctx, head+10)
		require.NoError(t, err)
		require.Nil(t, b, "a block above the head does not exist: the node says so")
		_, err = c.Finalized(ctx)
		require.NoError(t, err)
	}
	for _, m := range []string{"eth_chainId", "eth_blockNumber", "eth_getLogs", "eth_getBlockByNumber", ""} {
		require.Equal(t, direct.Calls(m), pooled.Calls(m), m)
	}
	s := pool.States()
	require.Len(t, s, 1)
	require.Equal(t, chain.ProviderActive, s[0].State)
}

// TestLaggingProviderNeverAskedAboveItsHead: a provider whose head stopped is
// passed over once another is ahead by more than MaxLag, and is never asked for
// logs or blocks above its head; with the other one down it still answers for the
// blocks it has.
func TestLaggingProviderNeverAskedAboveItsHead(t *testing.T) {
	t.Parallel()
	ch := startChain(t)
	first, second := addProxy(t, ch), addProxy(t, ch)
	relay, err := devnet.NewRelay(first.URL)
	require.NoError(t, err)
	t.Cleanup(relay.Kill)
	ctx := context.Background()
	frozen, err := ch.Backend.Client().BlockNumber(ctx)
	require.NoError(t, err)
	relay.Freeze(frozen)
	obs := &observer{}
	pool := newPool(providers.Options{MaxLag: 2, HeadEvery: time.Millisecond, Observer: obs},
		providers.Provider{URL: relay.URL, Client: client(t, relay.URL)},
		providers.Provider{URL: second.URL, Client: client(t, second.URL)})
	for i := 0; i < 5; i++ {
		ch.Backend.Commit()
	}
	head, err := pool.BlockNumber(ctx)
	require.NoError(t, err)
	require.Equal(t, frozen, head, "the first provider answers while nothing says it lags")
	require.Eventually(t, func() bool { return stateOf(pool, providers.Name(second.URL)).Head == frozen+5 }, 10*time.Second, 5*time.Millisecond,
		"the second provider's head is read in the background")

	head, err = pool.BlockNumber(ctx)
	require.NoError(t, err)
	require.Equal(t, frozen+5, head, "the provider ahead answers for the head")
	require.Equal(t, chain.ProviderLagging, stateOf(pool, providers.Name(relay.URL)).State)
	require.Equal(t, chain.ProviderActive, stateOf(pool, providers.Name(second.URL)).State)
	require.True(t, obs.saw(providers.Name(relay.URL), chain.ProviderLagging), "the observer heard it")

	logsBefore := first.Calls("eth_getLogs")
	_, err = pool.Logs(ctx, frozen-1, head, []common.Address{{1}}, topic)
	require.NoError(t, err)
	b, err := pool.BlockByNumber(ctx, head)
	require.NoError(t, err)
	require.NotNil(t, b, "read from the provider that has it")
	require.Equal(t, logsBefore, first.Calls("eth_getLogs"), "no eth_getLogs above the lagging provider's head")
	require.Equal(t, 1, second.Calls("eth_getLogs"))

	blocksBefore := first.Calls("eth_getBlockByNumber")
	b, err = pool.BlockByNumber(ctx, frozen-1)
	require.NoError(t, err)
	require.NotNil(t, b)
	require.Equal(t, blocksBefore, first.Calls("eth_getBlockByNumber"), "the provider that does not lag answers first")

	second.RateLimit(time.Hour, 600)
	b, err = pool.BlockByNumber(ctx, frozen-2)
	require.NoError(t, err)
	require.NotNil(t, b)
	require.Equal(t, blocksBefore+1, first.Calls("eth_getBlockByNumber"), "the other one waiting: a block it has, from the lagging one")
	_, err = pool.BlockByNumber(ctx, head)
	require.Error(t, err, "never a block above its head")
	require.Equal(t, blocksBefore+1, first.Calls("eth_getBlockByNumber"))
}

// TestRateLimitedProviderSkippedUntilItsWait: a provider answering 429 with
// Retry-After is not called again before the wait; alone, the pool answers with a
// rate limit carrying the remaining wait, without a call.
func TestRateLimitedProviderSkippedUntilItsWait(t *testing.T) {
	t.Parallel()
	ch := startChain(t)
	first, second := addProxy(t, ch), addProxy(t, ch)
	first.RateLimit(time.Hour, 600)
	ctx := context.Background()
	pool := newPool(providers.Options{},
		providers.Provider{URL: first.URL, Client: client(t, first.URL)},
		providers.Provider{URL: second.URL, Client: client(t, second.URL)})
	for i := 0; i < 5; i++ {
		_, err := pool.BlockNumber(ctx)
		require.NoError(t, err)
	}
	require.Equal(t, 1, first.Calls(""), "one 429, then skipped")
	require.Equal(t, chain.ProviderRateLimited, stateOf(pool, providers.Name(first.URL)).State)
	require.Contains(t, stateOf(pool, providers.Name(first.URL)).Error, "429")

	alone := newPool(providers.Options{}, providers.Provider{URL: first.URL, Client: client(t, first.URL)})
	_, err := alone.BlockNumber(ctx)
	require.Equal(t, rpc.KindRateLimit, rpc.KindOf(err))
	calls := first.Calls("")
	_, err = alone.BlockNumber(ctx)
	require.Equal(t, rpc.KindRateLimit, rpc.KindOf(err))
	require.Greater(t, rpc.RetryAfterOf(err), 500*time.Second, "the wait it asked for, less what has passed")
	require.Equal(t, calls, first.Calls(""), "no call during the wait")
}

// TestNoLogsProvider: a refusal of eth_getLogs takes the provider out of its
// rotation (its other methods still answer); so does "limit exceeded" to every
// eth_getLogs, NoLogsAfter times in a row. With no provider serving eth_getLogs the
// pool still asks them, answering their refusal.
func TestNoLogsProvider(t *testing.T) {
	t.Parallel()
	ch := startChain(t)
	refusing, limited, good := addProxy(t, ch), addProxy(t, ch), addProxy(t, ch)
	refusing.RefuseLogs(true)
	limited.LimitExceeded(1 << 30)
	ctx := context.Background()
	addr := []common.Address{{1}}

	pool := newPool(providers.Options{},
		providers.Provider{URL: refusing.URL, Client: client(t, refusing.URL)},
		providers.Provider{URL: good.URL, Client: client(t, good.URL)})
	head, err := pool.BlockNumber(ctx)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err = pool.Logs(ctx, 0, head, addr, topic)
		require.NoError(t, err)
	}
	require.Equal(t, 1, refusing.Calls("eth_getLogs"), "refused once, never asked again")
	require.Equal(t, chain.ProviderNoLogs, stateOf(pool, providers.Name(refusing.URL)).State)
	_, err = pool.BlockByNumber(ctx, head)
	require.NoError(t, err)
	require.Positive(t, refusing.Calls("eth_getBlockByNumber"), "its other methods still serve")

	// With no provider serving eth_getLogs the pool still asks (the scanner spaces
	// its attempts), so a provider that starts serving it is noticed at once.
	alone := newPool(providers.Options{}, providers.Provider{URL: refusing.URL, Client: client(t, refusing.URL)})
	_, err = alone.Logs(ctx, 0, head, addr, topic)
	require.Equal(t, rpc.KindRefused, rpc.KindOf(err))
	calls0 := refusing.Calls("eth_getLogs")
	_, err = alone.Logs(ctx, 0, head, addr, topic)
	require.Equal(t, rpc.KindRefused, rpc.KindOf(err))
	require.Equal(t, calls0+1, refusing.Calls("eth_getLogs"), "asked, not refused without a call")
	require.Equal(t, chain.ProviderNoLogs, stateOf(alone, providers.Name(refusing.URL)).State)

	// Tried again after NoLogsRetry: it serves eth_getLogs now, and is back.
	again := newPool(providers.Options{NoLogsRetry: 300 * time.Millisecond},
		providers.Provider{URL: refusing.URL, Client: client(t, refusing.URL)},
		providers.Provider{URL: good.URL, Client: client(t, good.URL)})
	head, err = again.BlockNumber(ctx)
	require.NoError(t, err)
	_, err = again.Logs(ctx, 0, head, addr, topic)
	require.NoError(t, err)
	require.Equal(t, chain.ProviderNoLogs, stateOf(again, providers.Name(refusing.URL)).State)
	refusing.RefuseLogs(false)
	calls := refusing.Calls("eth_getLogs")
	_, err = again.Logs(ctx, 0, head, addr, topic)
	require.NoError(t, err)
	require.Equal(t, calls, refusing.Calls("eth_getLogs"), "not before its retry")
	time.Sleep(300 * time.Millisecond)
	_, err = again.Logs(ctx, 0, head, addr, topic)
	require.NoError(t, err)
	require.Equal(t, calls+1, refusing.Calls("eth_getLogs"), "tried again")
	require.Equal(t, chain.ProviderActive, stateOf(again, providers.Name(refusing.URL)).State)

	const after = 3
	lim := newPool(providers.Options{NoLogsAfter: after},
		providers.Provider{URL: limited.URL, Client: client(t, limited.URL)},
		providers.Provider{URL: good.URL, Client: client(t, good.URL)})
	require.Eventually(t, func() bool {
		head, err := lim.BlockNumber(ctx)
		require.NoError(t, err)
		_, err = lim.Logs(ctx, 0, head, addr, topic)
		require.NoError(t, err, "the other provider reads the logs meanwhile")
		return stateOf(lim, providers.Name(limited.URL)).State == chain.ProviderNoLogs
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, after, limited.Calls("eth_getLogs"), "a bounded number of tries")
	require.Contains(t, stateOf(lim, providers.Name(limited.URL)).Error, "limit exceeded")
}

// TestCrossCheckAtASwitch: when the first provider fails, the next one is checked
// against a block read before: a provider of the same chain agrees (one block read)
// and answers; one on another chain with the same chain id disagrees, is reported
// lagging, and is not used.
func TestCrossCheckAtASwitch(t *testing.T) {
	t.Parallel()
	ch, other := startChain(t), startChain(t)
	for i := 0; i < 3; i++ {
		other.Backend.Commit() // its own blocks, above the first chain's head
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		chain *devnet.Chain
		agree bool
	}{{"same chain", ch, true}, {"another chain", other, false}} {
		t.Run(tc.name, func(t *testing.T) {
			first := addProxy(t, ch)
			relay, err := devnet.NewRelay(first.URL)
			require.NoError(t, err)
			t.Cleanup(relay.Kill)
			next := addProxy(t, tc.chain)
			pool := newPool(providers.Options{CheckDepth: 2, ChainID: big.NewInt(1337)},
				providers.Provider{URL: relay.URL, Client: client(t, relay.URL), ChainIDChecked: true},
				providers.Provider{URL: next.URL, Client: client(t, next.URL)})
			head, err := pool.BlockNumber(ctx)
			require.NoError(t, err)
			for n := head - 3; n <= head; n++ {
				_, err := pool.BlockByNumber(ctx, n)
				require.NoError(t, err)
			}
			relay.Kill()
			before := next.Calls("eth_getBlockByNumber")
			_, err = pool.BlockNumber(ctx)
			name := providers.Name(next.URL)
			if tc.agree {
				require.NoError(t, err)
				require.Equal(t, chain.ProviderActive, stateOf(pool, name).State)
				require.Equal(t, chain.ProviderFailing, stateOf(pool, providers.Name(relay.URL)).State)
				require.Equal(t, before+1, next.Calls("eth_getBlockByNumber"), "one block compared")
				return
			}
			require.Error(t, err)
			require.Equal(t, chain.ProviderLagging, stateOf(pool, name).State)
			require.Contains(t, stateOf(pool, name).Error, "elsewhere")
			logs := next.Calls("eth_getLogs")
			_, err = pool.Logs(ctx, head, head, []common.Address{{1}}, topic)
			require.Error(t, err)
			require.Equal(t, logs, next.Calls("eth_getLogs"), "a provider on another branch is not asked")
		})
	}
}

// TestChainIDCheckedBeforeFirstUse: a provider not checked at start (it was down)
// is checked before it answers; one reporting another chain id is out of the pool.
func TestChainIDCheckedBeforeFirstUse(t *testing.T) {
	t.Parallel()
	ch := startChain(t)
	px := addProxy(t, ch)
	pool := newPool(providers.Options{ChainID: big.NewInt(56)}, providers.Provider{URL: px.URL, Client: client(t, px.URL)})
	_, err := pool.BlockNumber(context.Background())
	require.ErrorContains(t, err, "chain id 1337, want 56")
	_, err = pool.BlockNumber(context.Background())
	require.Error(t, err)
	require.Equal(t, 1, px.Calls("eth_chainId"), "checked once")
	require.Zero(t, px.Calls("eth_blockNumber"), "never used")
	require.Equal(t, chain.ProviderFailing, pool.States()[0].State)
}

// TestQuotaSpreadsCalls: a provider capped at a call a second takes what its cap
// allows; the calls beyond it go to the next provider instead of waiting.
func TestQuotaSpreadsCalls(t *testing.T) {
	t.Parallel()
	ch := startChain(t)
	first, second := addProxy(t, ch), addProxy(t, ch)
	pool := newPool(providers.Options{HeadEvery: time.Hour},
		providers.Provider{URL: first.URL, Client: client(t, first.URL), Rate: 1},
		providers.Provider{URL: second.URL, Client: client(t, second.URL)})
	ctx := context.Background()
	start := time.Now()
	const n = 20
	for i := 0; i < n; i++ {
		_, err := pool.ChainID(ctx)
		require.NoError(t, err)
	}
	allowed := 1 + int(time.Since(start)/time.Second) // the burst, then one a second
	require.LessOrEqual(t, first.Calls(""), allowed, "the cap holds")
	require.Positive(t, first.Calls(""))
	require.Equal(t, n, first.Calls("eth_chainId")+second.Calls("eth_chainId"), "every call answered once")

	// Alone, a capped provider waits for its next slot rather than failing.
	alone := newPool(providers.Options{}, providers.Provider{URL: first.URL, Client: client(t, first.URL), Rate: 50})
	for i := 0; i < 3; i++ {
		_, err := alone.ChainID(ctx)
		require.NoError(t, err)
	}
}

// TestPushOnlyWhileScanning: a ws:// provider is subscribed to only once the
// scanner calls the pool (an instance whose scanner waits for another's lock
// never subscribes); then each new head wakes the scanner.
func TestPushOnlyWhileScanning(t *testing.T) {
	t.Parallel()
	ch := startChain(t)
	pool := newPool(providers.Options{}, providers.Provider{URL: ch.WSURL, Client: client(t, ch.WSURL)})
	require.True(t, pool.States()[0].Push)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go pool.Run(ctx)

	time.Sleep(1500 * time.Millisecond) // more than a check of whether the pool is in use
	ch.Backend.Commit()
	select {
	case <-pool.Wake():
		t.Fatal("a pool nobody calls does not subscribe")
	case <-time.After(500 * time.Millisecond):
	}

	_, err := pool.BlockNumber(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ch.Backend.Commit()
		select {
		case <-pool.Wake():
			return true
		default:
			return false
		}
	}, 10*time.Second, 200*time.Millisecond, "in use: a pushed head wakes the scanner")
}

// TestPushedHeadersAnswerAsTheNode: with a ws:// provider pushing new heads, the
// head and the newest blocks come from the pushed headers, and they are the
// node's own; after a reorganisation the blocks of the new branch are answered,
// never a pushed header of the branch left.
func TestPushedHeadersAnswerAsTheNode(t *testing.T) {
	t.Parallel()
	ch := startChain(t)
	c := client(t, ch.WSURL)
	pool := newPool(providers.Options{}, providers.Provider{URL: ch.WSURL, Client: c})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go pool.Run(ctx)
	_, err := pool.BlockNumber(ctx) // in use: it subscribes
	require.NoError(t, err)

	node := ch.Backend.Client()
	// same checks the pool's head and blocks against the node's.
	same := func() bool {
		head, err := pool.BlockNumber(ctx)
		require.NoError(t, err)
		want, err := node.BlockNumber(ctx)
		require.NoError(t, err)
		if head != want {
			return false
		}
		for _, n := range []uint64{head, head - 1, head - 2} {
			b, err := pool.BlockByNumber(ctx, n)
			require.NoError(t, err)
			h, err := node.HeaderByNumber(ctx, new(big.Int).SetUint64(n))
			require.NoError(t, err)
			require.Equal(t, h.Hash(), b.Hash, "block %d", n)
			require.Equal(t, h.ParentHash, b.ParentHash)
		}
		return true
	}
	require.Eventually(t, func() bool {
		ch.Backend.Commit()
		select {
		case <-pool.Wake():
			return same()
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}, 10*time.Second, 50*time.Millisecond, "pushed heads answer as the node")

	// A reorganisation: the two newest blocks replaced by three others.
	head, err := node.HeaderByNumber(ctx, nil)
	require.NoError(t, err)
	base, err := node.HeaderByNumber(ctx, new(big.Int).Sub(head.Number, big.NewInt(2)))
	require.NoError(t, err)
	require.NoError(t, ch.Backend.Fork(base.Hash()))
	for i := 0; i < 3; i++ {
		ch.Backend.Commit()
	}
	require.Eventually(t, func() bool {
		select {
		case <-pool.Wake():
		default:
		}
		return same()
	}, 10*time.Second, 50*time.Millisecond, "the new branch's blocks")
}
