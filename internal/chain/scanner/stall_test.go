package scanner_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/testsupport/testdb"
)

// A gateway's answer in words no classifier rule knows.
const badRequestPage = "<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n</body>\r\n</html>\r\n"

// watched is a rig whose API server does not watch the chain, and a second
// instance on the same database that does, its log kept.
type watched struct {
	*rig
	dbURL string
	in    *instance
	logs  *logBuf
}

// watch starts a rig on ch (API only; transactions may be created and paid
// before the watcher runs) and returns it; start then starts the watcher.
func watch(t *testing.T, db testdb.Database, ch *devnet.Chain, token common.Address, network string, decimals uint8) *watched {
	t.Helper()
	r := rigOn(t, db, ch, token, network, decimals, map[string]string{"CONFIRMATIONS": "bep20=3,trc20=3"})
	return &watched{rig: r, dbURL: db.URL, logs: &logBuf{}}
}

// start starts the watching instance with the chain settings and extra.
func (w *watched) start(extra map[string]string) {
	w.t.Helper()
	settings := chainSettings(w.network, w.chain.URL, w.token, w.decimals)
	id, err := w.chain.ChainID(context.Background())
	require.NoError(w.t, err)
	settings["CHAIN_ID_"+strings.ToUpper(w.network)] = id
	for k, v := range extra {
		settings[k] = v
	}
	w.in = startInstanceLog(w.t, w.dbURL, settings, w.logs)
	w.t.Cleanup(func() {
		if w.t.Failed() {
			w.t.Log(w.logs.String())
		}
	})
	// A first start begins CONFIRMATIONS below the head it first reads: wait for
	// that cursor, so a transfer the test sends next is above it however late
	// the scanner's first poll comes on a loaded machine.
	require.Eventually(w.t, func() bool {
		cur, err := w.env.Store.ChainCursor(context.Background(), w.network)
		require.NoError(w.t, err)
		return cur != nil
	}, 20*time.Second, 10*time.Millisecond, "the scanner sets its cursor")
}

func (w *watched) metric(series string) float64 {
	w.t.Helper()
	return metric(w.t, w.in.root, series)
}

func (w *watched) commit(n int) {
	for i := 0; i < n; i++ {
		w.chain.Backend.Commit()
	}
}

// TestUnnamedLogsFailureShrinksSpan: a provider answering every eth_getLogs wider
// than 40 blocks with a bare HTTP 400 page (no cap, no code, nothing a rule can
// read): the span is halved until it is served, the smaller span is kept, and a
// backlog holding deposits is caught up with every deposit recorded once.
func TestUnnamedLogsFailureShrinksSpan(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			w := watch(t, db, ch, token, chain.BEP20, 18)
			const n = 4
			var txs []client.Transaction
			for i := 0; i < n; i++ {
				tx := w.create("15500")
				txs = append(txs, tx)
				w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
				if i == 0 { // a second transfer in the same block: unmatched, once
					w.send(w.token, tx.DepositAddress, "1")
				}
				w.commit(120)
			}
			ch.Proxy.FailWideLogs(40, http.StatusBadRequest, badRequestPage)
			w.start(map[string]string{"CHAIN_START_BLOCK_BEP20": "1"})
			for _, tx := range txs {
				d := w.waitFor(tx.Id, "confirmation", status(client.TransactionStatusOrderFilled))
				require.Equal(t, tx.CryptoAmount, *d.DepositAmount)
				require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled"}, w.reasons(tx.Id))
			}
			w.scanned()
			require.Len(t, w.transfers(false), n+1, "each transfer stored once")
			require.Len(t, w.transfers(true), 1)
			// 100 blocks refused, 50 refused, 25 served, and the 25 kept: a backlog
			// of ~480 blocks costs two refusals, not one per request.
			failed := w.metric(errSeries(chain.BEP20, "http"))
			require.Positive(t, failed, "the provider refused the wide requests")
			require.LessOrEqual(t, failed, 3.0, "the span learnt is remembered")
			require.Contains(t, w.logs.String(), "eth_getLogs failed for a reason the node does not name; retrying on fewer blocks")
			require.NotContains(t, w.logs.String(), "level=ERROR")
		})
	}
}

// TestLearntSpanProbed: the span learnt from a passing failure is not kept for
// good: after 32 requests served at it, a request of twice the span is tried, and
// once served the learnt span is dropped.
func TestLearntSpanProbed(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			w := watch(t, db, ch, token, chain.BEP20, 18)
			tx := w.create("15500")
			w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
			w.commit(1500)
			ch.Proxy.FailWideLogs(40, http.StatusBadRequest, badRequestPage)
			w.start(map[string]string{"CHAIN_START_BLOCK_BEP20": "1"})
			require.Eventually(t, func() bool {
				cur, err := w.env.Store.ChainCursor(context.Background(), chain.BEP20)
				require.NoError(t, err)
				return cur != nil && cur.Block > 1
			}, 20*time.Second, 5*time.Millisecond)
			ch.Proxy.FailWideLogs(0, 0, "") // the failure passes
			w.waitFor(tx.Id, "confirmation", status(client.TransactionStatusOrderFilled))
			w.scanned()
			require.Contains(t, w.logs.String(), "eth_getLogs serves wider requests again; the span learnt from unnamed failures is dropped")
			require.Equal(t, 2.0, w.metric(errSeries(chain.BEP20, "http")), "100 and 50 blocks refused, nothing after")
			// 25 blocks a request until the probe, then growing to the node's cap: far
			// fewer requests than 1,500 blocks at 25.
			require.Less(t, ch.Proxy.Calls("eth_getLogs"), 50)
		})
	}
}

// TestUnnamedLogsFailureOnOneBlock: when even one block's eth_getLogs fails for no
// named reason, the operator sees an error naming the block, the request is
// retried with backoff (not in a loop), and once served the deposit is detected.
func TestUnnamedLogsFailureOnOneBlock(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			w := watch(t, db, ch, token, chain.BEP20, 18)
			w.start(nil)
			tx := w.create("15500")
			w.scanned()
			ch.Proxy.FailWideLogs(0, http.StatusBadRequest, badRequestPage)
			before := ch.Proxy.Calls("eth_getLogs")
			w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
			block := w.chain.Backend.Commit()
			hdr, err := ch.Backend.Client().HeaderByHash(context.Background(), block)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				return strings.Contains(w.logs.String(), "eth_getLogs fails on a single block")
			}, 10*time.Second, 20*time.Millisecond)
			require.Contains(t, w.logs.String(), "level=ERROR")
			require.Contains(t, w.logs.String(), "block="+hdr.Number.String())
			time.Sleep(3 * time.Second)
			calls := ch.Proxy.Calls("eth_getLogs") - before
			// Polling every 50 ms without backoff: ~120 calls in 3 s.
			require.LessOrEqual(t, calls, 24, "backoff between failing requests")
			require.Equal(t, client.TransactionStatusAwaitingDeposit, w.get(tx.Id).Status)

			ch.Proxy.FailWideLogs(0, 0, "")
			w.waitFor(tx.Id, "detection once served", status(client.TransactionStatusDepositConfirming))
		})
	}
}

func finalitySeries(network, state string) string {
	return `partnerd_chain_finality_state{network="` + network + `",state="` + state + `"}`
}

// TestFinalizedNotFoundWhileNodeRestarts: a node that served the finalized block
// answers geth's "finalized block not found" for a while (as geth and bsc do while
// they restart): the deposit's confirmations rise past the requirement but it does
// not confirm, the finality state is unknown (WARN, metric); once the node answers
// again it confirms, and the rule is the tag's again (never the count).
func TestFinalizedNotFoundWhileNodeRestarts(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			w := watch(t, db, ch, token, chain.BEP20, 18)
			w.start(nil)
			tx := w.create("15500")
			w.scanned()
			require.Equal(t, 1.0, w.metric(finalitySeries(chain.BEP20, chain.FinalityTag)))

			ch.Proxy.FinalizedNotFound(time.Hour)
			w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
			w.commit(1)
			w.waitFor(tx.Id, "detection", status(client.TransactionStatusDepositConfirming))
			w.commit(required + 1)
			w.waitFor(tx.Id, "confirmations past the requirement", confirmations(required+2))
			require.Eventually(t, func() bool { return w.metric(finalitySeries(chain.BEP20, chain.FinalityUnknown)) == 1 },
				10*time.Second, 20*time.Millisecond)
			require.Zero(t, w.metric(finalitySeries(chain.BEP20, chain.FinalityTag)))
			require.Zero(t, w.metric(finalitySeries(chain.BEP20, chain.FinalityConfirmations)))
			require.Contains(t, w.logs.String(), "level=WARN msg=\"the node's finalized block is unknown: nothing confirms on this network until the node answers it again\"")
			require.Contains(t, w.logs.String(), "finalized block not found")
			// Several polls and re-checks (every second here) later: still not confirmed.
			asked := ch.Proxy.FinalizedCalls()
			time.Sleep(2 * time.Second)
			require.Greater(t, ch.Proxy.FinalizedCalls(), asked, "the node is asked again")
			d := w.get(tx.Id)
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status, "nothing confirms while finality is unknown")
			require.Equal(t, required+2, *d.Confirmations)

			ch.Proxy.FinalizedNotFound(0)
			d = w.waitFor(tx.Id, "confirmation once the node answers", status(client.TransactionStatusOrderFilled))
			require.Equal(t, required+2, *d.Confirmations)
			require.Equal(t, 1.0, w.metric(finalitySeries(chain.BEP20, chain.FinalityTag)), "the tag rule, not the count")
			require.Zero(t, w.metric(finalitySeries(chain.BEP20, chain.FinalityUnknown)))
			require.Contains(t, w.logs.String(), "the node answers the finalized block: deposits confirm once final")

			// The tag still rules: a deposit deep enough by count waits for the finalized block.
			ch.Proxy.SetFinalizedDepth(20, false)
			tx2 := w.create("15500")
			w.send(w.token, tx2.DepositAddress, tx2.CryptoAmount)
			w.commit(required + 1)
			d = w.waitFor(tx2.Id, "confirmations", confirmations(required+1))
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status)
		})
	}
}

// TestFinalizedNotFoundAtStart: a node (re)starting answers "finalized block not
// found" when the watcher starts: that is no node without the tag, so nothing
// confirms (unknown) until the node answers, then the tag rule holds.
func TestFinalizedNotFoundAtStart(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			ch.Proxy.FinalizedNotFound(time.Hour)
			w := watch(t, db, ch, token, chain.BEP20, 18)
			w.start(nil)
			tx := w.create("15500")
			w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
			w.commit(required + 1)
			d := w.waitFor(tx.Id, "confirmations past the requirement", confirmations(required+1))
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status)
			require.Equal(t, 1.0, w.metric(finalitySeries(chain.BEP20, chain.FinalityUnknown)))
			require.Contains(t, w.logs.String(), "chain scanner started; the node's finalized block is unknown")
			require.Contains(t, w.logs.String(), "finalized block not found")
			time.Sleep(1500 * time.Millisecond)
			require.Equal(t, client.TransactionStatusDepositConfirming, w.get(tx.Id).Status, "never confirmed by count")

			ch.Proxy.FinalizedNotFound(0)
			w.waitFor(tx.Id, "confirmation once the node answers", status(client.TransactionStatusOrderFilled))
			require.Equal(t, 1.0, w.metric(finalitySeries(chain.BEP20, chain.FinalityTag)))
		})
	}
}

// TestFinalityPinnedToConfirmations: CHAIN_FINALITY_BEP20=confirmations confirms by
// the count alone and never asks for the finalized block.
func TestFinalityPinnedToConfirmations(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			ch.Proxy.SetFinalizedDepth(50, false) // the tag would hold every deposit back
			w := watch(t, db, ch, token, chain.BEP20, 18)
			w.start(map[string]string{"CHAIN_FINALITY_BEP20": "confirmations"})
			tx := w.create("15500")
			w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
			w.commit(required)
			d := w.waitFor(tx.Id, "confirmation by count", status(client.TransactionStatusOrderFilled))
			require.Equal(t, required, *d.Confirmations)
			require.Zero(t, ch.Proxy.FinalizedCalls(), "never asks")
			require.Equal(t, 1.0, w.metric(finalitySeries(chain.BEP20, chain.FinalityConfirmations)))
			require.Contains(t, w.logs.String(), `finality="confirmations only (CHAIN_FINALITY_BEP20=confirmations)"`)
		})
	}
}

// TestFinalityPinnedToTag: CHAIN_FINALITY_TRC20=tag on a node answering "TAG
// finalized not supported": nothing confirms (unknown, not the count) until the
// node serves the tag; then the deposit confirms once final.
func TestFinalityPinnedToTag(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChainIn(t, devnet.JavaTron, 6)
			ch.Proxy.SetFinalizedDepth(required-1, true)
			w := watch(t, db, ch, token, chain.TRC20, 6)
			w.start(map[string]string{"CHAIN_FINALITY_TRC20": "tag"})
			tx := w.create("15500")
			w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
			w.commit(required + 2)
			d := w.waitFor(tx.Id, "confirmations past the requirement", confirmations(required+2))
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status)
			require.Equal(t, 1.0, w.metric(finalitySeries(chain.TRC20, chain.FinalityUnknown)))
			require.Contains(t, w.logs.String(), "TAG finalized not supported")
			time.Sleep(1500 * time.Millisecond)
			require.Equal(t, client.TransactionStatusDepositConfirming, w.get(tx.Id).Status, "the pinned tag is never downgraded to the count")

			ch.Proxy.SetFinalizedDepth(required-1, false)
			w.waitFor(tx.Id, "confirmation once final", status(client.TransactionStatusOrderFilled))
			require.Equal(t, 1.0, w.metric(finalitySeries(chain.TRC20, chain.FinalityTag)))
		})
	}
}

// TestFinalityTagGained: a node that does not answer the tag at start confirms by
// count; asked again periodically, once it serves the tag the tag rule is back.
func TestFinalityTagGained(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			ch.Proxy.SetFinalizedDepth(required-1, true)
			w := watch(t, db, ch, token, chain.BEP20, 18)
			w.start(nil)
			tx := w.create("15500")
			w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
			w.commit(required)
			w.waitFor(tx.Id, "confirmation by count", status(client.TransactionStatusOrderFilled))
			require.Equal(t, 1.0, w.metric(finalitySeries(chain.BEP20, chain.FinalityConfirmations)))

			ch.Proxy.SetFinalizedDepth(20, false)
			require.Eventually(t, func() bool { return w.metric(finalitySeries(chain.BEP20, chain.FinalityTag)) == 1 },
				10*time.Second, 20*time.Millisecond, "re-checked")
			tx2 := w.create("15500")
			w.send(w.token, tx2.DepositAddress, tx2.CryptoAmount)
			w.commit(required + 1)
			d := w.waitFor(tx2.Id, "confirmations", confirmations(required+1))
			require.Equal(t, client.TransactionStatusDepositConfirming, d.Status, "deep enough by count, not final")
			ch.Proxy.SetFinalizedDepth(1, false)
			w.waitFor(tx2.Id, "confirmation once final", status(client.TransactionStatusOrderFilled))
		})
	}
}

// TestLogsDisabledReadAsRateLimit: bsc-dataseed answers every eth_getLogs with
// -32005 "limit exceeded" (the method is disabled there) while its other methods
// answer: after a bounded run of such answers the operator is told, once, that the
// provider does not serve eth_getLogs (ERROR, the refused kind); the watcher keeps
// asking at its longest backoff, and once the answers end the deposit is detected.
func TestLogsDisabledReadAsRateLimit(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			w := watch(t, db, ch, token, chain.BEP20, 18)
			w.start(nil)
			tx := w.create("15500")
			w.scanned()
			ch.Proxy.LimitExceeded(1 << 30)
			before := ch.Proxy.Calls("eth_getLogs")
			w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
			w.commit(1)
			const said = "the provider does not serve eth_getLogs"
			require.Eventually(t, func() bool { return strings.Contains(w.logs.String(), said) }, 20*time.Second, 20*time.Millisecond)
			require.LessOrEqual(t, ch.Proxy.Calls("eth_getLogs")-before, 6, "reported after a bounded run of answers")
			require.Positive(t, w.metric(errSeries(chain.BEP20, "refused")))
			require.Positive(t, ch.Proxy.Calls("eth_blockNumber"))
			// It keeps asking, slowly, and says so once.
			asked := ch.Proxy.Calls("eth_getLogs")
			require.Eventually(t, func() bool { return ch.Proxy.Calls("eth_getLogs") > asked+1 }, 10*time.Second, 20*time.Millisecond)
			require.Equal(t, 1, strings.Count(w.logs.String(), said))
			require.Equal(t, client.TransactionStatusAwaitingDeposit, w.get(tx.Id).Status)

			ch.Proxy.LimitExceeded(0)
			w.waitFor(tx.Id, "detection once eth_getLogs answers", status(client.TransactionStatusDepositConfirming))
			require.Contains(t, w.logs.String(), "the provider serves eth_getLogs again")
		})
	}
}

// TestTronGridSuspension: TronGrid answers every call with HTTP 403 and
// {"Error":"The key exceeds the frequency limit(15), and the query server is
// suspended for 30s"} (no Retry-After header): the watcher waits the 30 s it names
// (a handful of calls, not one every poll), and the deposit is detected after.
func TestTronGridSuspension(t *testing.T) {
	t.Parallel()
	const body = `{"Error":"The key exceeds the frequency limit(15), and the query server is suspended for 30s"}`
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChainIn(t, devnet.JavaTron, 6)
			w := watch(t, db, ch, token, chain.TRC20, 6)
			w.start(nil)
			tx := w.create("15500")
			w.scanned()
			const suspension = 30 * time.Second
			ch.Proxy.Suspend(suspension, http.StatusForbidden, body)
			start, before := time.Now(), ch.Proxy.Calls("")
			w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
			w.commit(1)
			time.Sleep(time.Until(start.Add(suspension - 500*time.Millisecond)))
			during := ch.Proxy.Calls("") - before
			// Polling every 50 ms, or backing off to 1 s: 30 to 600 calls.
			require.LessOrEqual(t, during, 3, "the 30 s the answer names are waited")
			require.Positive(t, during)
			require.Equal(t, client.TransactionStatusAwaitingDeposit, w.get(tx.Id).Status)
			require.Positive(t, w.metric(errSeries(chain.TRC20, "rate_limit")), "read as a rate limit")
			w.waitFor(tx.Id, "detection after the suspension", status(client.TransactionStatusDepositConfirming))
		})
	}
}
