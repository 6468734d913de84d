package scanner_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/app"
	"partnerd/internal/chain"
	"partnerd/internal/config"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// logBuf is a log output tests read while the server writes.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// metric reads one series' value from root's /metrics (0 when absent).
func metric(t *testing.T, root, series string) float64 {
	t.Helper()
	res, err := http.Get(root + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return f
		}
	}
	return 0
}

func errSeries(network, kind string) string {
	return fmt.Sprintf(`partnerd_chain_rpc_errors_total{kind=%q,network=%q}`, kind, network)
}

// TestTronFinality: a deposit with enough confirmations does not confirm while its
// block is above the node's finalized (solidified) block, and confirms once it is
// final; its confirmations keep rising meanwhile.
func TestTronFinality(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, db, chain.TRC20, 6, nil)
			r.chain.Proxy.SetFinalizedDepth(6, false)
			tx := r.create("15500")
			r.send(r.token, tx.DepositAddress, tx.CryptoAmount)
			r.chain.Backend.Commit()
			r.waitFor(tx.Id, "detection", status(client.TransactionStatusDepositConfirming))
			// Confirmations 3 to 6: enough by count, but the finalized block is 6 behind.
			for n := 2; n <= 6; n++ {
				r.chain.Backend.Commit()
				d := r.waitFor(tx.Id, "confirmations", confirmations(n))
				require.Equal(t, client.TransactionStatusDepositConfirming, d.Status, "%d confirmations, not final", n)
				// The partner is told what holds the deposit back once the count is there.
				require.Equal(t, n >= required, *d.AwaitingFinality, "awaiting finality at %d of %d confirmations", n, required)
			}
			r.scanned()
			require.Equal(t, client.TransactionStatusDepositConfirming, r.get(tx.Id).Status)
			require.Positive(t, metric(t, r.env.Root, `partnerd_chain_finalized_block{network="trc20"}`))
			r.chain.Backend.Commit() // the deposit's block is now the finalized one
			d := r.waitFor(tx.Id, "confirmation once final", status(client.TransactionStatusOrderFilled))
			// 7, or 6 when the poll read the head just before the block and the
			// finalized block just after it.
			require.GreaterOrEqual(t, *d.Confirmations, 6)
			require.False(t, *d.AwaitingFinality, "confirmed: nothing awaited")
		})
	}
}

// TestDenseBacklogUnderCaps: a backlog at 80 transfers a block (to addresses the
// service never issued, and a few deposits) behind nodes capping eth_getLogs: a BNB
// Smart Chain provider at 5,000 blocks and (scaled down) 1,000 results, java-tron
// at (scaled down) 10 blocks and 10,000 results. Caught up with every deposit
// recorded once, and no request refused for a cap after the first.
func TestDenseBacklogUnderCaps(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		for _, c := range []struct {
			network        string
			decimals       uint8
			blocks         uint64
			results        int
			refused, other string
		}{
			{chain.BEP20, 18, 5000, 1000, "results", "range"},
			{chain.TRC20, 6, 10, 10000, "range", "results"},
		} {
			t.Run(db.Name+"/"+c.network, func(t *testing.T) {
				t.Parallel()
				ch, token := newChainIn(t, dialectOf(c.network), c.decimals)
				ch.Proxy.SetCaps(c.blocks, c.results)
				r := rigOn(t, db, ch, token, c.network, c.decimals, map[string]string{"CONFIRMATIONS": "bep20=3,trc20=3"})
				const blocks, perBlock = 20, 80
				var txs []client.Transaction
				for b := 0; b < blocks; b++ {
					n := perBlock
					if b%4 == 0 {
						tx := r.create("15500")
						txs = append(txs, tx)
						r.send(token, tx.DepositAddress, tx.CryptoAmount)
						n--
					}
					strangers := make([]common.Address, n)
					for i := range strangers {
						_, _ = rand.Read(strangers[i][:])
					}
					milli := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.decimals)-3), nil) // 0.001 USDT
					require.NoError(t, ch.TransferMany(context.Background(), token, strangers, milli))
					ch.Backend.Commit()
				}
				for i := 0; i < required; i++ {
					ch.Backend.Commit()
				}
				settings := chainSettings(c.network, ch.URL, token, int(c.decimals))
				id, err := ch.ChainID(context.Background())
				require.NoError(t, err)
				settings["CHAIN_ID_"+strings.ToUpper(c.network)] = id
				settings["CHAIN_START_BLOCK_"+strings.ToUpper(c.network)] = "1"
				logs := &logBuf{}
				in := startInstanceLog(t, db.URL, settings, logs)
				t.Cleanup(func() {
					if t.Failed() {
						t.Log(logs.String())
					}
				})
				for _, tx := range txs {
					r.waitFor(tx.Id, "confirmation", status(client.TransactionStatusOrderFilled))
				}
				r.scanned()
				require.Len(t, r.transfers(false), len(txs), "every deposit recorded once")
				require.Equal(t, 1.0, metric(t, in.root, errSeries(c.network, c.refused)), "the first request is refused for the cap, none after")
				require.Zero(t, metric(t, in.root, errSeries(c.network, c.other)))
				require.Zero(t, metric(t, in.root, errSeries(c.network, "rate_limit")), "a cap is never read as a rate limit")
			})
		}
	}
}

// TestRateLimitBackOff: an episode of HTTP 429 with Retry-After is answered with
// back-off (a handful of calls, not one every poll) and then catch-up.
func TestRateLimitBackOff(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, db, chain.BEP20, 18, nil)
			tx := r.create("15500")
			r.scanned()
			before := r.chain.Proxy.Calls("")
			r.chain.Proxy.RateLimit(2500*time.Millisecond, 1)
			r.send(r.token, tx.DepositAddress, tx.CryptoAmount)
			r.chain.Backend.Commit()
			time.Sleep(2500 * time.Millisecond)
			during := r.chain.Proxy.Calls("") - before
			require.LessOrEqual(t, during, 8, "back-off honouring Retry-After: 1 (a poll every 50 ms would make ~50 calls)")
			r.waitFor(tx.Id, "catch-up", status(client.TransactionStatusDepositConfirming))
			require.Positive(t, rpcErrors(t, r, "rate_limit"))
			require.Zero(t, rpcErrors(t, r, "range", "results"), "a rate limit is never read as a cap")
		})
	}
}

// TestHangingNode: calls that hang longer than CHAIN_RPC_TIMEOUT are abandoned; the
// watcher goes on (without the timeout these calls would never return).
func TestHangingNode(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, db, chain.BEP20, 18, map[string]string{"CHAIN_RPC_TIMEOUT": "300ms"})
			tx := r.create("15500")
			r.scanned()
			r.chain.Proxy.Hang(2)
			r.send(r.token, tx.DepositAddress, tx.CryptoAmount)
			r.chain.Backend.Commit()
			r.waitFor(tx.Id, "detection past the hanging calls", status(client.TransactionStatusDepositConfirming))
			require.Positive(t, rpcErrors(t, r, "timeout"))
		})
	}
}

// TestLimitExceededAndRefusalVisible: -32005 "limit exceeded" on eth_getLogs (the
// public BNB Smart Chain endpoints) is a rate limit, shown in the log and the
// metrics; a node refusing eth_getLogs outright is an error line naming its answer.
func TestLimitExceededAndRefusalVisible(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			r := rigOn(t, db, ch, token, chain.BEP20, 18, map[string]string{"CONFIRMATIONS": "bep20=3,trc20=3"})
			tx := r.create("15500")
			r.send(token, tx.DepositAddress, tx.CryptoAmount)
			ch.Backend.Commit()
			ch.Proxy.LimitExceeded(2)
			logs := &logBuf{}
			in := startInstanceLog(t, db.URL, chainSettings(chain.BEP20, ch.URL, token, 18), logs)
			r.waitFor(tx.Id, "detection after the limit", status(client.TransactionStatusDepositConfirming))
			require.Equal(t, 2.0, metric(t, in.root, errSeries("bep20", "rate_limit")))
			require.Contains(t, logs.String(), "limit exceeded")
			require.Contains(t, logs.String(), "code -32005")

			ch.Proxy.RefuseLogs(true)
			ch.Backend.Commit()
			require.Eventually(t, func() bool { return metric(t, in.root, errSeries("bep20", "refused")) > 0 }, 10*time.Second, 20*time.Millisecond)
			require.Contains(t, logs.String(), "level=ERROR")
			require.Contains(t, logs.String(), "the method eth_getLogs does not exist/is not available")
		})
	}
}

// TestHeadersOnEveryCall: CHAIN_RPC_HEADERS_TRC20 goes with every call to the node
// and never into the log.
func TestHeadersOnEveryCall(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChainIn(t, dialectOf(chain.TRC20), 6)
			ch.Proxy.WatchHeader("TRON-PRO-API-KEY", "key-5f2c9a")
			r := rigOn(t, db, ch, token, chain.TRC20, 6, map[string]string{"CONFIRMATIONS": "bep20=3,trc20=3"})
			settings := chainSettings(chain.TRC20, ch.URL, token, 6)
			settings["CHAIN_ID_TRC20"], _ = ch.ChainID(context.Background())
			settings["CHAIN_RPC_HEADERS_TRC20"] = "TRON-PRO-API-KEY=key-5f2c9a, X-Client=partnerd"
			logs := &logBuf{}
			startInstanceLog(t, db.URL, settings, logs)
			tx := r.create("15500")
			r.send(token, tx.DepositAddress, tx.CryptoAmount)
			for i := 0; i < required; i++ {
				ch.Backend.Commit()
			}
			r.waitFor(tx.Id, "confirmation", status(client.TransactionStatusOrderFilled))
			with, without := ch.Proxy.HeaderCounts()
			require.Positive(t, with)
			require.Zero(t, without, "every call carries the header")
			require.NotContains(t, logs.String(), "key-5f2c9a")
		})
	}
}

// TestWrongChainID: a node on another chain than CHAIN_ID_<NETWORK> refuses the
// start in production, and switches that network's watcher off (an error line) in
// staging.
func TestWrongChainID(t *testing.T) {
	t.Parallel()
	ch, token := newChain(t, 18) // reports 1337; the default CHAIN_ID_BEP20 is 56
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"usdt":"1550.00"}`)
	}))
	t.Cleanup(feed.Close)
	settings := chainSettings(chain.BEP20, ch.URL, token, 18)
	delete(settings, "CHAIN_ID_BEP20")
	prod := map[string]string{"APP_ENV": "production", "RATE_SOURCE": "http", "RATE_FEED_URL": feed.URL, "RATE_FEED_FIELDS": "usdt=usdt",
		"XPUB_BEP20": apitest.TestXPub, "XPUB_TRC20": apitest.TestXPub, "CURSOR_SECRET": strings.Repeat("s", 32), "SECRETS_KEYS": "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"CHAIN_RPC_TRC20": "http://127.0.0.1:9", "DATABASE_URL": testdb.PostgresSchema(t), "SCREENING": "list", "PUBLIC_URL": "https://partnerd.test",
		"TOKEN_CONTRACTS": settings["TOKEN_CONTRACTS"] + ",usdt:trc20=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t/6"}
	for k, v := range settings {
		if _, ok := prod[k]; !ok {
			prod[k] = v
		}
	}
	cfg, err := config.Load(func(k string) string { return prod[k] })
	require.NoError(t, err)
	_, err = app.Open(context.Background(), cfg, discardLog())
	require.ErrorContains(t, err, "CHAIN_ID_BEP20")
	require.ErrorContains(t, err, "1337")

	for _, db := range testdb.Both(t) {
		t.Run("staging/"+db.Name, func(t *testing.T) {
			t.Parallel()
			logs := &logBuf{}
			in := startInstanceLog(t, db.URL, settings, logs)
			require.Contains(t, logs.String(), "deposit watcher is off for this network: the node is not the chain CHAIN_ID_BEP20 names")
			require.NotContains(t, logs.String(), "deposit watcher on")
			res, err := http.Get(in.root + "/readyz")
			require.NoError(t, err)
			var ready struct {
				Status  string   `json:"status"`
				Reasons []string `json:"reasons"`
			}
			require.NoError(t, json.NewDecoder(res.Body).Decode(&ready))
			_ = res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode, "the API still takes traffic")
			require.Equal(t, "degraded", ready.Status, "a network whose watcher is off is loud")
			require.Contains(t, strings.Join(ready.Reasons, "\n"), "bep20: deposit watcher is off: no provider of CHAIN_RPC_BEP20 is on the chain CHAIN_ID_BEP20 names")
			m, err := http.Get(in.root + "/metrics")
			require.NoError(t, err)
			body, _ := io.ReadAll(m.Body)
			_ = m.Body.Close()
			require.Contains(t, string(body), `partnerd_chain_watcher_off{network="bep20"} 1`)
		})
	}
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestFinalityRuleLogged: the start-up line names each network's rule; a node
// without the finalized tag confirms by confirmations alone.
func TestFinalityRuleLogged(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		for _, tagged := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/finalized=%v", db.Name, tagged), func(t *testing.T) {
				t.Parallel()
				ch, token := newChain(t, 18)
				ch.Proxy.SetFinalizedDepth(required-1, !tagged)
				r := rigOn(t, db, ch, token, chain.BEP20, 18, map[string]string{"CONFIRMATIONS": "bep20=3,trc20=3"})
				logs := &logBuf{}
				startInstanceLog(t, db.URL, chainSettings(chain.BEP20, ch.URL, token, 18), logs)
				tx := r.create("15500")
				r.send(token, tx.DepositAddress, tx.CryptoAmount)
				for i := 0; i < required; i++ {
					ch.Backend.Commit()
				}
				d := r.waitFor(tx.Id, "confirmation", status(client.TransactionStatusOrderFilled))
				require.Equal(t, required, *d.Confirmations)
				rule := `finality="confirmations and the node's finalized block"`
				if !tagged {
					rule = `finality="confirmations only (the node does not answer the finalized block tag)"`
				}
				require.Contains(t, logs.String(), rule)
			})
		}
	}
}
