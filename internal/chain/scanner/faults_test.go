package scanner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/app"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/config"
	"partnerd/internal/deposits"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// instance is a server started and stopped by the test itself.
type instance struct {
	stop func()
	// root is the server's base URL (its /metrics).
	root string
}

func startInstance(t *testing.T, dbURL string, settings map[string]string) *instance {
	t.Helper()
	return startInstanceLog(t, dbURL, settings, io.Discard)
}

// startInstanceLog starts a server whose log goes to logw.
func startInstanceLog(t *testing.T, dbURL string, settings map[string]string, logw io.Writer) *instance {
	t.Helper()
	vars := map[string]string{"DATABASE_URL": dbURL}
	for k, v := range settings {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(logw, nil)))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	var once atomic.Bool
	in := &instance{root: "http://" + ln.Addr().String(), stop: func() {
		if once.Swap(true) {
			return
		}
		cancel()
		<-done
		_ = a.Close()
	}}
	t.Cleanup(in.stop)
	return in
}

// TestRestartMidScanMissesAndDoublesNothing stops scanning servers at random
// moments while they work through a backlog of blocks holding deposits, starts
// new ones, and checks every deposit was applied exactly once.
func TestRestartMidScanMissesAndDoublesNothing(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			// The rig's own server only serves the API (no CHAIN_RPC_*: its watcher is off).
			r := rigOn(t, db, ch, token, chain.BEP20, 18, map[string]string{"CONFIRMATIONS": "bep20=3,trc20=3"})
			const n = 12
			txs := make([]client.Transaction, n)
			for i := range txs {
				txs[i] = r.create("15500")
				r.send(token, txs[i].DepositAddress, txs[i].CryptoAmount)
				if i%3 == 0 { // a second transfer in the same block
					r.send(token, txs[i].DepositAddress, "1")
				}
				for j := 0; j < 100; j++ {
					ch.Backend.Commit()
				}
			}
			head, err := ch.Backend.Client().BlockNumber(context.Background())
			require.NoError(t, err)
			settings := chainSettings(chain.BEP20, ch.URL, token, 18)
			settings["CHAIN_START_BLOCK_BEP20"] = "1"
			for round := 0; round < 3; round++ {
				in := startInstance(t, db.URL, settings)
				time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
				in.stop()
			}
			cur, err := r.env.Store.ChainCursor(context.Background(), chain.BEP20)
			require.NoError(t, err)
			t.Logf("stopped at block %v of %d", cur, head)
			startInstance(t, db.URL, settings)
			for _, tx := range txs {
				d := r.waitFor(tx.Id, "confirmation", status(client.TransactionStatusOrderFilled))
				require.Equal(t, tx.CryptoAmount, *d.DepositAmount)
				require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled"}, r.reasons(tx.Id))
				require.Equal(t, []string{"transaction.created", "deposit.detected", "deposit.confirmed"}, eventTypes(t, r, tx.Id))
			}
			r.scanned()
			require.Len(t, r.transfers(false), n+n/3, "each transfer stored once")
			require.Len(t, r.transfers(true), n/3, "the second transfers are unmatched, once each")
		})
	}
}

// proxy forwards JSON-RPC to the node unless it is down (503, like a rate-limited
// or failing provider).
type proxy struct {
	down atomic.Bool
	srv  *httptest.Server
}

func newProxy(t *testing.T, target string) *proxy {
	u, err := url.Parse(target)
	require.NoError(t, err)
	p := &proxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if p.down.Load() {
			http.Error(w, "provider unavailable", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// TestRPCOutageThenCatchUp: while the node cannot be reached the scanner backs off
// and counts errors, the API keeps answering; afterwards it catches up.
func TestRPCOutageThenCatchUp(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			ch, token := newChain(t, 18)
			px := newProxy(t, ch.URL)
			r := rigOn(t, db, ch, token, chain.BEP20, 18, chainSettings(chain.BEP20, px.srv.URL, token, 18))
			tx := r.create("15500")
			r.scanned()

			px.down.Store(true)
			r.send(r.token, tx.DepositAddress, tx.CryptoAmount)
			for i := 0; i < 5; i++ {
				r.chain.Backend.Commit()
			}
			require.Eventually(t, func() bool { return rpcErrors(t, r) > 0 }, 10*time.Second, 20*time.Millisecond, "errors are counted")
			require.Equal(t, client.TransactionStatusAwaitingDeposit, r.get(tx.Id).Status, "nothing seen during the outage")
			res, err := http.Get(r.env.Root + "/readyz")
			require.NoError(t, err)
			_ = res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode, "readiness is the API's own")

			px.down.Store(false)
			d := r.waitFor(tx.Id, "catch-up", status(client.TransactionStatusOrderFilled))
			require.Equal(t, 5, *d.Confirmations, "head − block + 1 after catching up")
		})
	}
}

// rpcErrors sums partnerd_chain_rpc_errors_total of the rig's network, of the
// given kinds (none: every kind).
func rpcErrors(t *testing.T, r *rig, kinds ...string) int {
	res, err := http.Get(r.env.Root + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	total := 0
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, `partnerd_chain_rpc_errors_total{kind="`)
		if !ok {
			continue
		}
		kind, rest, _ := strings.Cut(rest, `"`)
		v, ok := strings.CutPrefix(rest, `,network="`+r.network+`"} `)
		if !ok || (len(kinds) > 0 && !slices.Contains(kinds, kind)) {
			continue
		}
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		total += n
	}
	return total
}

// TestTwoInstancesOneScanner: two servers on one PostgreSQL database; one scans,
// the other waits on the advisory lock and takes over when the first stops.
func TestTwoInstancesOneScanner(t *testing.T) {
	t.Parallel()
	dbURL := testdb.PostgresSchema(t)
	ch, token := newChain(t, 18)
	settings := chainSettings(chain.BEP20, ch.URL, token, 18)
	r := rigOn(t, testdb.Database{Name: "postgres", URL: dbURL}, ch, token, chain.BEP20, 18, settings)
	second := startInstance(t, dbURL, settings)
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	defer st.Close()

	tx := r.create("15500")
	r.send(token, tx.DepositAddress, tx.CryptoAmount)
	for i := 0; i < required; i++ {
		ch.Backend.Commit()
	}
	r.waitFor(tx.Id, "confirmation", status(client.TransactionStatusOrderFilled))
	_, ok, err := st.TryLock(ctx, "chain-scanner/bep20")
	require.NoError(t, err)
	require.False(t, ok, "one instance holds the network's scanner lock")
	require.Equal(t, []string{"transaction:created", "deposit:detected", "deposit:confirmed", "order:filled"}, r.reasons(tx.Id))

	// Whichever scanned, stopping the second leaves (or hands over to) the first.
	second.stop()
	tx2 := r.create("15500")
	r.send(token, tx2.DepositAddress, tx2.CryptoAmount)
	for i := 0; i < required; i++ {
		ch.Backend.Commit()
	}
	r.waitFor(tx2.Id, "confirmation after the second instance stopped", status(client.TransactionStatusOrderFilled))
	require.Len(t, r.reasons(tx2.Id), 4)
	require.Len(t, r.transfers(false), 2)
}

// TestTronLateDeposit: a Tron configuration (base58 contract and deposit
// addresses, 6 decimals) against a node answering as java-tron does (stateRoot
// "0x", BlockId hashes that no local recomputation matches), paid after expiry.
func TestTronLateDeposit(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, db, chain.TRC20, 6, map[string]string{"DEPOSIT_WINDOW": "1s", "EXPIRY_SWEEP_INTERVAL": "200ms"})
			require.True(t, strings.HasPrefix(chainSettings(chain.TRC20, "", r.token, 6)["TOKEN_CONTRACTS"], "usdt:trc20=T"))
			tx := r.create("15500")
			require.True(t, strings.HasPrefix(tx.DepositAddress, "T"))
			r.waitFor(tx.Id, "expiry", status(client.TransactionStatusExpired))

			hash := r.send(r.token, tx.DepositAddress, tx.CryptoAmount)
			r.chain.Backend.Commit()
			d := r.waitFor(tx.Id, "late detection", status(client.TransactionStatusDepositConfirming))
			require.Equal(t, strings.TrimPrefix(hash.Hex(), "0x"), *d.DepositTxHash, "Tron hashes have no 0x")
			require.Equal(t, tx.CryptoAmount, *d.DepositAmount)
			for i := 1; i < required; i++ {
				r.chain.Backend.Commit()
			}
			r.waitFor(tx.Id, "confirmation", status(client.TransactionStatusOrderFilled))
			require.Equal(t, []string{"transaction:created", "system:expired", "deposit:detected", "deposit:confirmed", "order:filled"}, r.reasons(tx.Id))
			all := r.transfers(false)
			require.Len(t, all, 1)
			require.Equal(t, tx.DepositAddress, all[0].To)
			// The node's own word: the stored block hash is the BlockId java-tron reports.
			blk := tronBlock(t, r.chain.URL, all[0].Block)
			require.Equal(t, "0x", blk["stateRoot"])
			hdr, err := r.chain.Backend.Client().HeaderByNumber(context.Background(), new(big.Int).SetUint64(all[0].Block))
			require.NoError(t, err)
			require.Equal(t, devnet.BlockID(hdr).Hex(), blk["hash"])
			require.NotEqual(t, hdr.Hash().Hex(), blk["hash"])
			require.Equal(t, blk["hash"], "0x"+strings.TrimPrefix(all[0].BlockHash, "0x"))
			require.Equal(t, deposits.TransferConfirmed, all[0].State)
		})
	}
}

// TestProviderRangeLimit: a provider that refuses eth_getLogs over more than 100
// blocks (as hosted nodes do) makes the scanner shrink its batches; nothing is missed.
func TestProviderRangeLimit(t *testing.T) {
	t.Parallel()
	ch, token := newChain(t, 18)
	u, err := url.Parse(ch.URL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	var refused atomic.Int64
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var call struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &call) == nil && call.Method == "eth_getLogs" && len(call.Params) == 1 {
			var q struct{ FromBlock, ToBlock string }
			_ = json.Unmarshal(call.Params[0], &q)
			from, _ := strconv.ParseUint(strings.TrimPrefix(q.FromBlock, "0x"), 16, 64)
			to, _ := strconv.ParseUint(strings.TrimPrefix(q.ToBlock, "0x"), 16, 64)
			if to-from+1 > 100 {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32005,"message":"block range is too large, max 100"}}`, call.ID)
				return
			}
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(limited.Close)
	settings := chainSettings(chain.BEP20, limited.URL, token, 18)
	settings["CHAIN_START_BLOCK_BEP20"] = "1"
	// The API first, with the watcher off, to create the transactions before the backlog.
	db := testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}
	r := rigOn(t, db, ch, token, chain.BEP20, 18, map[string]string{"CONFIRMATIONS": "bep20=3,trc20=3"})
	txs := []client.Transaction{r.create("15500"), r.create("15500"), r.create("15500")}
	for _, tx := range txs {
		r.send(token, tx.DepositAddress, tx.CryptoAmount)
		for i := 0; i < 300; i++ {
			ch.Backend.Commit()
		}
	}
	startInstance(t, db.URL, settings)
	for _, tx := range txs {
		r.waitFor(tx.Id, "confirmation", status(client.TransactionStatusOrderFilled))
	}
	require.Positive(t, refused.Load(), "the provider refused the first, large ranges")
	require.Len(t, r.transfers(false), 3)
}

// tronBlock reads block n raw from a node (its JSON fields as sent).
func tronBlock(t *testing.T, url string, n uint64) map[string]any {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x%x",false]}`, n)
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	var out struct {
		Result map[string]any `json:"result"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	return out.Result
}
