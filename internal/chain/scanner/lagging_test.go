package scanner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/chain/providers"
	"partnerd/internal/testsupport/testdb"
)

// faultWindow is how long each fault below lasts: long enough for the watcher
// to poll some hundred times through it (every 50 ms).
const faultWindow = 20 * time.Second

// lagging is a provider whose backends answer with success but wrongly, as one
// behind a load balancer does while a backend lags or syncs: it sits in front of
// the chain's dialect proxy and, while a fault is on, rewrites the answers the
// fault names; everything else passes through.
type lagging struct {
	URL   string
	chain *devnet.Chain
	// emptyNear: eth_getLogs of a range reaching within that many blocks of the
	// head answers [] (0: off); nullNear: eth_getBlockByNumber of a block
	// within that many blocks of the head answers null on a coin toss (0: off);
	// zeroHead: eth_blockNumber answers 0x0; capAbove: eth_getLogs over more
	// blocks than this answers capText (0: off).
	emptyNear atomic.Uint64
	nullNear  atomic.Uint64
	zeroHead  atomic.Bool
	capAbove  atomic.Uint64
	capText   string
	// faked counts the answers rewritten, by method.
	mu    sync.Mutex
	faked map[string]int
}

func newLagging(t *testing.T, ch *devnet.Chain) *lagging {
	t.Helper()
	u, err := url.Parse(ch.URL)
	require.NoError(t, err)
	l := &lagging{chain: ch, faked: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var req struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &req) == nil {
			if answer, ok := l.fake(r.Context(), req.Method, req.Params); ok {
				l.mu.Lock()
				l.faked[req.Method]++
				l.mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprintf(w, answer, string(req.ID))
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	l.URL = srv.URL
	return l
}

// fake returns the wrong answer (with %s for the request's id) when a fault
// covers the call.
func (l *lagging) fake(ctx context.Context, method string, params []json.RawMessage) (string, bool) {
	ok := `{"jsonrpc":"2.0","id":%s,"result":`
	switch method {
	case "eth_blockNumber":
		if l.zeroHead.Load() {
			return ok + `"0x0"}`, true
		}
	case "eth_getLogs":
		near, capAbove := l.emptyNear.Load(), l.capAbove.Load()
		if (near == 0 && capAbove == 0) || len(params) != 1 {
			return "", false
		}
		var f struct{ FromBlock, ToBlock string }
		if json.Unmarshal(params[0], &f) != nil {
			return "", false
		}
		from, err1 := hexutil.DecodeUint64(f.FromBlock)
		to, err2 := hexutil.DecodeUint64(f.ToBlock)
		if err1 != nil || err2 != nil {
			return "", false
		}
		if capAbove > 0 && to-from+1 > capAbove {
			return `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"` + l.capText + `"}}`, true
		}
		if near > 0 && to+near > l.head(ctx) {
			return ok + `[]}`, true
		}
	case "eth_getBlockByNumber":
		near := l.nullNear.Load()
		if near == 0 || len(params) == 0 {
			return "", false
		}
		var tag string
		if json.Unmarshal(params[0], &tag) != nil {
			return "", false
		}
		n, err := hexutil.DecodeUint64(tag)
		if err != nil {
			return "", false // a tag: "finalized", "latest"
		}
		if n+near > l.head(ctx) && rand.IntN(2) == 0 {
			return ok + `null}`, true
		}
	}
	return "", false
}

func (l *lagging) head(ctx context.Context) uint64 {
	h, err := l.chain.Backend.Client().BlockNumber(ctx)
	if err != nil {
		return 0
	}
	return h
}

func (l *lagging) fakedCalls(method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.faked[method]
}

// mine commits a block every interval until the test ends, as a live chain
// makes them (devnet's Chain.Mine, stopped at the test's end).
func mine(t *testing.T, ch *devnet.Chain, interval time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch.Mine(ctx, interval)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// laggingRig is a watcher reading network through one provider, a lagging one.
func laggingRig(t *testing.T, db testdb.Database, network string) (*watched, *lagging) {
	t.Helper()
	decimals := uint8(18)
	if network == chain.TRC20 {
		decimals = 6
	}
	ch, token := newChainIn(t, dialectOf(network), decimals)
	lg := newLagging(t, ch)
	w := watch(t, db, ch, token, network, decimals)
	w.start(map[string]string{"CHAIN_RPC_" + strings.ToUpper(network): lg.URL})
	return w, lg
}

// onlyOnce asserts a transaction went through its deposit once: detected once,
// never sent back to waiting, deposit.detected sent once.
func onlyOnce(t *testing.T, w *watched, id uuid.UUID) {
	t.Helper()
	reasons := w.reasons(id)
	n := 0
	for _, r := range reasons {
		if r == "deposit:detected" {
			n++
		}
		require.NotContains(t, r, "reorg", "the deposit never left its state: %v", reasons)
	}
	require.Equal(t, 1, n, "detected once: %v", reasons)
	events := 0
	for _, e := range eventTypes(t, w.rig, id) {
		if e == "deposit.detected" {
			events++
		}
	}
	require.Equal(t, 1, events, "deposit.detected sent once")
}

// TestEmptyLogsNearHeadLoseNoDeposit (a): for 20 s the provider answers
// eth_getLogs with [] for any range within 5 blocks of the head, while block reads
// reach the real node (a backend behind its load balancer). A deposit sent in
// that window is detected: on BNB Smart Chain the block's logsBloom says it may
// hold the transfer and the scan waits below it; on Tron (no blooms) the blocks
// are asked again once deep.
func TestEmptyLogsNearHeadLoseNoDeposit(t *testing.T) {
	t.Parallel()
	for _, network := range []string{chain.BEP20, chain.TRC20} {
		for _, db := range testdb.Both(t) {
			t.Run(network+"/"+db.Name, func(t *testing.T) {
				t.Parallel()
				w, lg := laggingRig(t, db, network)
				mine(t, w.chain, 100*time.Millisecond)
				tx := w.create("15500")
				lg.emptyNear.Store(5)
				w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
				window := time.Now()
				require.Eventually(t, func() bool { return lg.fakedCalls("eth_getLogs") > 0 }, faultWindow, 10*time.Millisecond)
				<-time.After(time.Until(window.Add(faultWindow)))
				lg.emptyNear.Store(0)
				w.waitWithin(tx.Id, time.Minute, "detection", detected)
				w.waitWithin(tx.Id, time.Minute, "confirmation", status(client.TransactionStatusOrderFilled))
				onlyOnce(t, w, tx.Id)
				require.Positive(t, w.metric(errSeries(network, "missing_logs")), "the wrong answer is counted")
			})
		}
	}
}

// TestNullBlocksNearHeadDropNothing (b): for 20 s a random half of the block
// reads near the head answer null (a load balancer shared with other clients):
// no detected deposit leaves its state, and deposit.detected is sent once.
func TestNullBlocksNearHeadDropNothing(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			w, lg := laggingRig(t, db, chain.BEP20)
			mine(t, w.chain, 200*time.Millisecond)
			txs := []client.Transaction{w.create("15500"), w.create("15500"), w.create("15500")}
			lg.nullNear.Store(5)
			window := time.Now()
			require.Eventually(t, func() bool { return lg.fakedCalls("eth_getBlockByNumber") > 0 }, faultWindow, 10*time.Millisecond, "the fault answers")
			for i, tx := range txs {
				w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
				// The next one once this one is seen, so each meets the fault.
				w.waitWithin(tx.Id, faultWindow, fmt.Sprintf("deposit %d detected", i), detected)
			}
			<-time.After(time.Until(window.Add(faultWindow)))
			lg.nullNear.Store(0)
			for _, tx := range txs {
				w.waitWithin(tx.Id, time.Minute, "confirmation", status(client.TransactionStatusOrderFilled))
				onlyOnce(t, w, tx.Id)
			}
			require.Positive(t, w.metric(errSeries(chain.BEP20, "missing_block")), "the wrong answers are counted")
			require.NotContains(t, w.logs.String(), "chain reorganised", "no null was taken for a reorganisation")
			require.NotContains(t, w.logs.String(), "deposit dropped")
		})
	}
}

// TestZeroHeadIsBehind (c): for 20 s eth_blockNumber answers 0x0 (a node
// syncing): the cursor never moves back more than the reorganisation depth,
// /readyz says the provider is behind meanwhile, and a deposit sent after is
// detected within 15 s.
func TestZeroHeadIsBehind(t *testing.T) {
	t.Parallel()
	for _, network := range []string{chain.BEP20, chain.TRC20} {
		for _, db := range testdb.Both(t) {
			t.Run(network+"/"+db.Name, func(t *testing.T) {
				t.Parallel()
				w, lg := laggingRig(t, db, network)
				mine(t, w.chain, 200*time.Millisecond)
				w.scanned()
				// Watch the cursor through the fault: the highest block it reached,
				// and the furthest it went back from there.
				var highest, back atomic.Uint64
				stop := make(chan struct{})
				watching := make(chan struct{})
				go func() {
					defer close(watching)
					for {
						select {
						case <-stop:
							return
						default:
						}
						cur, err := w.env.Store.ChainCursor(context.Background(), network)
						if err == nil && cur != nil {
							if cur.Block > highest.Load() {
								highest.Store(cur.Block)
							} else if d := highest.Load() - cur.Block; d > back.Load() {
								back.Store(d)
							}
						}
						time.Sleep(10 * time.Millisecond)
					}
				}()
				lg.zeroHead.Store(true)
				window := time.Now()
				require.Eventually(t, func() bool {
					r := readyz(t, w.in.root)
					return r.Status == "degraded" && strings.Contains(strings.Join(r.Reasons, "\n"), network+": every provider is behind or syncing")
				}, faultWindow, 50*time.Millisecond, "/readyz says the provider is behind")
				series := `partnerd_chain_provider_state{network="` + network + `",provider="` + providers.Name(lg.URL) + `",state="behind"}`
				require.Equal(t, 1.0, w.metric(series))
				<-time.After(time.Until(window.Add(faultWindow)))
				lg.zeroHead.Store(false)
				tx := w.create("15500")
				w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
				sent := time.Now()
				w.waitWithin(tx.Id, 15*time.Second, "detection", detected)
				t.Logf("detected %s after the fault", time.Since(sent))
				close(stop)
				<-watching
				require.LessOrEqual(t, back.Load(), uint64(2*required), "the cursor never went back more than the reorganisation depth")
				require.NotContains(t, strings.Join(readyz(t, w.in.root).Reasons, "\n"), "behind or syncing", "ready again once it answers")
				require.Positive(t, w.metric(errSeries(network, "behind")))
				require.Contains(t, w.logs.String(), "it is behind, not a reorganisation")
			})
		}
	}
}

// TestCapInWordsBacklog (d): a backlog of more than 10,000 blocks behind a
// provider that refuses any span above 2,000 blocks with a public node's words
// ("Limit exceeded: Query requested more than 2.000 blocks", code -32000) is
// caught up with every deposit in it detected.
func TestCapInWordsBacklog(t *testing.T) {
	t.Parallel()
	if raceDetector {
		// 10,500 blocks take minutes to mine under the race detector; the
		// catch-up shares its code with TestUnnamedLogsFailureShrinksSpan's, which
		// runs there. make test runs this one on both databases.
		t.Skip("the 10,500-block backlog is mined by make test, not under the race detector")
	}
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			ch.Proxy.SetCaps(0, 0)
			lg := newLagging(t, ch)
			lg.capText = "Limit exceeded: Query requested more than 2.000 blocks"
			lg.capAbove.Store(2000)
			w := watch(t, db, ch, token, chain.BEP20, 18)
			var txs []client.Transaction
			for i := 0; i < 5; i++ {
				tx := w.create("15500")
				txs = append(txs, tx)
				w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
				w.commit(2100)
			}
			w.start(map[string]string{"CHAIN_RPC_BEP20": lg.URL, "CHAIN_START_BLOCK_BEP20": "1"})
			for _, tx := range txs {
				d := w.waitWithin(tx.Id, time.Minute, "confirmation", status(client.TransactionStatusOrderFilled))
				require.Equal(t, tx.CryptoAmount, *d.DepositAmount)
				onlyOnce(t, w, tx.Id)
			}
			w.scanned()
			require.Len(t, w.transfers(false), len(txs), "each transfer stored once")
			require.Positive(t, lg.fakedCalls("eth_getLogs"), "the cap was met")
			require.Zero(t, w.metric(errSeries(chain.BEP20, "rate_limit")), "the cap is no rate limit")
		})
	}
}
