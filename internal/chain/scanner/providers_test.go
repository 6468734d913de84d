package scanner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/testsupport/testdb"
)

// TestFailoverToSecondProvider: with two providers in front of the same chain,
// the first killed, hung, rate-limited or lagging, every deposit of a backlog
// spread over many blocks is still detected through the second, recorded once,
// and confirmed; the second provider answered eth_getLogs.
func TestFailoverToSecondProvider(t *testing.T) {
	t.Parallel()
	faults := []struct {
		name  string
		extra map[string]string
		// apply breaks the first provider (f in front of px).
		apply func(t *testing.T, f *devnet.Relay, px *devnet.Proxy, ch *devnet.Chain)
	}{
		{"killed", nil, func(t *testing.T, f *devnet.Relay, _ *devnet.Proxy, _ *devnet.Chain) { f.Kill() }},
		{"hung", map[string]string{"CHAIN_RPC_TIMEOUT": "1s"}, func(t *testing.T, _ *devnet.Relay, px *devnet.Proxy, _ *devnet.Chain) { px.Hang(1 << 30) }},
		// Retry-After: 600 s, far beyond the test's deadline: the deposits are found
		// because the provider is skipped, not because its wait ended.
		{"rate-limited", nil, func(t *testing.T, _ *devnet.Relay, px *devnet.Proxy, _ *devnet.Chain) { px.RateLimit(time.Hour, 600) }},
		{"lagging", map[string]string{"CHAIN_RPC_MAX_LAG_BEP20": "2"}, func(t *testing.T, f *devnet.Relay, _ *devnet.Proxy, ch *devnet.Chain) {
			head, err := ch.Backend.Client().BlockNumber(context.Background())
			require.NoError(t, err)
			f.Freeze(head)
		}},
	}
	for _, fault := range faults {
		for _, db := range testdb.Both(t) {
			t.Run(fault.name+"/"+db.Name, func(t *testing.T) {
				t.Parallel()
				ch, token := newChain(t, 18)
				first, err := ch.AddProxy(devnet.BSC)
				require.NoError(t, err)
				second, err := ch.AddProxy(devnet.BSC)
				require.NoError(t, err)
				f, err := devnet.NewRelay(first.URL)
				require.NoError(t, err)
				t.Cleanup(f.Kill)
				settings := chainSettings(chain.BEP20, f.URL+","+second.URL, token, 18)
				for k, v := range fault.extra {
					settings[k] = v
				}
				r := rigOn(t, db, ch, token, chain.BEP20, 18, settings)
				const n = 6
				txs := make([]client.Transaction, n)
				for i := range txs {
					txs[i] = r.create("15500")
				}
				r.scanned()
				require.Zero(t, second.Calls("eth_getLogs"), "the first provider answers while it can")

				fault.apply(t, f, first, ch)
				// A backlog: each deposit in its own block, a few empty blocks between.
				for _, tx := range txs {
					r.send(token, tx.DepositAddress, tx.CryptoAmount)
					for j := 0; j < 4; j++ {
						ch.Backend.Commit()
					}
				}
				for _, tx := range txs {
					d := r.waitFor(tx.Id, "confirmation through the second provider", status(client.TransactionStatusOrderFilled))
					require.Equal(t, tx.CryptoAmount, *d.DepositAmount)
					require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled"}, r.reasons(tx.Id))
				}
				r.scanned()
				require.Len(t, r.transfers(false), n, "each deposit recorded once")
				require.Positive(t, second.Calls("eth_getLogs"), "the second provider served the logs")
			})
		}
	}
}

// TestProviderWithoutLogs: a provider that does not serve eth_getLogs (a refusal,
// or bsc-dataseed's "limit exceeded" to every eth_getLogs while its other methods
// answer) is taken out of the rotation for it with an error logged once, and the
// deposits are read through the other provider.
func TestProviderWithoutLogs(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"refused", "limit exceeded"} {
		for _, db := range testdb.Both(t) {
			t.Run(how+"/"+db.Name, func(t *testing.T) {
				t.Parallel()
				ch, token := newChain(t, 18)
				first, err := ch.AddProxy(devnet.BSC)
				require.NoError(t, err)
				if how == "refused" {
					first.RefuseLogs(true)
				} else {
					first.LimitExceeded(1 << 30)
				}
				settings := chainSettings(chain.BEP20, first.URL+","+ch.URL, token, 18)
				settings["CHAIN_ID_BEP20"] = "1337"
				logs := &logBuf{}
				startInstanceLog(t, db.URL, settings, logs)
				t.Cleanup(func() {
					if t.Failed() {
						t.Log(logs.String())
					}
				})
				r := rigOn(t, db, ch, token, chain.BEP20, 18, map[string]string{"CONFIRMATIONS": "bep20=3,trc20=3"})
				tx := r.create("15500")
				r.send(token, tx.DepositAddress, tx.CryptoAmount)
				for i := 0; i < required; i++ {
					ch.Backend.Commit()
				}
				r.waitFor(tx.Id, "confirmation through the second provider", status(client.TransactionStatusOrderFilled))
				require.Eventually(t, func() bool {
					ch.Backend.Commit() // new blocks: the scanner asks for their logs
					return strings.Contains(logs.String(), "chain provider does not serve eth_getLogs")
				}, 20*time.Second, 200*time.Millisecond)
				require.Equal(t, 1, strings.Count(logs.String(), "chain provider does not serve eth_getLogs"), "logged once")
				require.Contains(t, logs.String(), "provider="+strings.TrimSuffix(first.URL, "/"))
				// Out of the rotation: no eth_getLogs reaches it any more, while its
				// other methods still do.
				before := first.Calls("eth_getLogs")
				for i := 0; i < 3; i++ {
					ch.Backend.Commit()
					r.scanned()
				}
				require.Equal(t, before, first.Calls("eth_getLogs"))
				require.LessOrEqual(t, before, 5, "a bounded number of tries")
				require.Len(t, r.transfers(false), 1, "%+v", r.transfers(false))
			})
		}
	}
}

// TestPushWakesTheScanner: a ws:// provider pushes new heads and the scanner, idle
// for a minute-long CHAIN_POLL_INTERVAL, reads the new block at once: the deposit
// is detected long before the next poll could have seen it. With an http provider
// first (which the scanner reads, and whose calls are counted) the idle scanner is
// seen making no call until the pushed head wakes it; with the ws:// provider
// alone every call goes over the WebSocket.
//
// The subscription comes up beside the scanner's first polls (once the pool is
// in use), so the test waits for the watcher to say its provider pushes before it
// mines the deposit's block: a start-up poll catching up on a loaded machine
// could otherwise read the first blocks mined while no subscription is up yet,
// and the deposit's block would then wait for the next poll, a minute away.
func TestPushWakesTheScanner(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"http+ws", "ws"} {
		for _, db := range testdb.Both(t) {
			t.Run(mode+"/"+db.Name, func(t *testing.T) {
				t.Parallel()
				ch, token := newChain(t, 18)
				providers := ch.WSURL
				if mode == "http+ws" {
					providers = ch.URL + "," + ch.WSURL
				}
				w := watch(t, db, ch, token, chain.BEP20, 18)
				tx := w.create("15500")
				w.start(map[string]string{"CHAIN_RPC_BEP20": providers, "CHAIN_POLL_INTERVAL": "1m"})
				require.Eventually(t, func() bool {
					ch.Backend.Commit() // a head to push
					return strings.Contains(w.logs.String(), "chain provider pushes new heads")
				}, 30*time.Second, 200*time.Millisecond, "the subscription is up")
				if mode == "http+ws" {
					// Idle: no call through the http provider while the scanner waits
					// for its next poll, a minute away.
					waitIdle(t, ch)
				}
				head := ch.Backend.Commit()
				hdr, err := ch.Backend.Client().HeaderByHash(context.Background(), head)
				require.NoError(t, err)
				require.Eventually(t, func() bool {
					cur, err := w.env.Store.ChainCursor(context.Background(), chain.BEP20)
					require.NoError(t, err)
					return cur != nil && cur.Block >= hdr.Number.Uint64()
				}, 30*time.Second, 20*time.Millisecond, "a pushed head wakes the scanner")

				start := time.Now()
				w.send(token, tx.DepositAddress, tx.CryptoAmount)
				ch.Backend.Commit()
				w.waitFor(tx.Id, "detection woken by the pushed head", status(client.TransactionStatusDepositConfirming))
				require.Less(t, time.Since(start), time.Minute, "before the poll interval was over: the push woke the scanner")
				t.Logf("detected %s after the block", time.Since(start))
			})
		}
	}
}

// waitIdle waits until the scanner makes no call through ch's proxy for 300 ms.
func waitIdle(t *testing.T, ch *devnet.Chain) {
	t.Helper()
	require.Eventually(t, func() bool {
		before := ch.Proxy.Calls("")
		time.Sleep(300 * time.Millisecond)
		return ch.Proxy.Calls("") == before
	}, 20*time.Second, 10*time.Millisecond, "the scanner goes idle")
}
