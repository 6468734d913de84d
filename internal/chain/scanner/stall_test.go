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
	"partnerd/internal/testdb"
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

// TestUnnamedLogsFailureOnOneBlock: when even one block's eth_getLogs fails for no
// named reason, the operator sees an error naming the block, the request is
// retried with backoff (not in a loop), and once served the deposit is detected.
func TestUnnamedLogsFailureOnOneBlock(t *testing.T) {
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
