package scanner_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/chain/providers"
	"partnerd/internal/testsupport/testdb"
)

// speaker is a provider in front of a node that answers with its own bytes
// (status and body as they are, no JSON-RPC envelope unless the body has one)
// while say returns a status, and counts every call by method.
type speaker struct {
	URL   string
	mu    sync.Mutex
	calls map[string]int
	say   func(method string) (int, string)
}

func newSpeaker(t *testing.T, target string) *speaker {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	s := &speaker{calls: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var call struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &call)
		s.mu.Lock()
		s.calls[call.Method]++
		say := s.say
		s.mu.Unlock()
		if say != nil {
			if status, text := say(call.Method); status != 0 {
				w.WriteHeader(status)
				_, _ = io.WriteString(w, strings.ReplaceAll(text, "$ID", string(call.ID)))
				return
			}
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// answer makes the provider answer every call of method ("": every method) with
// status and text (status 0: it forwards again).
func (s *speaker) answer(method string, status int, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		s.say = nil
		return
	}
	s.say = func(m string) (int, string) {
		if method == "" || m == method {
			return status, text
		}
		return 0, ""
	}
}

// Calls returns the calls of method received ("": all).
func (s *speaker) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if method != "" {
		return s.calls[method]
	}
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

// Answers no sample holds and no rule names: a gateway's page and a proxy's text,
// on HTTP 200 (no status to go by).
const (
	unknownPage = "<!DOCTYPE html><html><head><title>Oops</title></head><body><h2>Something went wrong on our side.</h2><p>Reference #18.2f4c1d17.1732780000.9a1b</p></body></html>"
	unknownText = "upstream connect error or disconnect/reset before headers. reset reason: connection termination"
)

// TestUnknownAnswerBacksOff: a provider answering in words nobody recorded (an
// HTML page, a proxy's text, on HTTP 200) is backed off, never hammered: with
// another provider the deposit is read through that one at once, and the
// provider answering so gets a bounded number of calls in 10 s; alone, the
// watcher's calls are bounded too, and the deposit is detected once it answers.
func TestUnknownAnswerBacksOff(t *testing.T) {
	t.Parallel()
	answers := []struct{ name, method, text string }{
		{"page to every call", "", unknownPage},
		{"text to eth_getLogs", "eth_getLogs", unknownText},
	}
	for _, a := range answers {
		for _, alone := range []bool{false, true} {
			name := a.name + "/two providers"
			if alone {
				name = a.name + "/alone"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				db := testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}
				ch, token := newChain(t, 18)
				sp := newSpeaker(t, ch.URL)
				w := watch(t, db, ch, token, chain.BEP20, 18)
				rpcs := sp.URL
				var second *devnet.Proxy
				if !alone {
					var err error
					second, err = ch.AddProxy(devnet.BSC)
					require.NoError(t, err)
					rpcs += "," + second.URL
				}
				w.start(map[string]string{"CHAIN_RPC_BEP20": rpcs})
				tx := w.create("15500")
				w.scanned()

				sp.answer(a.method, http.StatusOK, a.text)
				start, before := time.Now(), sp.Calls(a.method)
				w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
				w.commit(1)
				if !alone {
					w.waitFor(tx.Id, "detection through the other provider", detected)
					require.Less(t, time.Since(start), 10*time.Second, "failed over at once")
				}
				// Ten seconds of blocks; the scanner polls every 50 ms.
				for time.Since(start) < 10*time.Second {
					w.commit(1)
					time.Sleep(500 * time.Millisecond)
				}
				calls := sp.Calls(a.method) - before
				t.Logf("%s: %d calls in 10 s to the provider answering in unknown words", name, calls)
				// Polling every 50 ms without backoff: some 200 calls and more. Alone,
				// the watcher's backoff (to 1 s here) spaces its attempts; beside
				// another provider, its waits double from 1 s.
				bound := 6
				if alone {
					bound = 30
				}
				require.LessOrEqual(t, calls, bound, "backed off, not hammered")
				require.Positive(t, w.metric(errSeries(chain.BEP20, "decode")), "counted")
				if alone {
					require.Equal(t, client.TransactionStatusAwaitingDeposit, w.get(tx.Id).Status)
					sp.answer("", 0, "")
					w.waitFor(tx.Id, "detection once the provider answers", detected)
				} else {
					require.Positive(t, second.Calls("eth_getLogs"))
				}
			})
		}
	}
}

// TestOperatorMustActOverHTTP: a provider answering "fix me" (HTTP 401, an
// invalid API key) is taken out of the rotation within 30 s: an ERROR naming it
// and the fix, partnerd_chain_provider_state showing action_needed, and, when it
// was the network's last provider, /readyz degraded with the reason. With another
// provider the deposit is read through that one and /readyz stays ready.
func TestOperatorMustActOverHTTP(t *testing.T) {
	t.Parallel()
	const refusal = `{"jsonrpc":"2.0","id":$ID,"error":{"code":-32000,"message":"invalid API key"}}`
	for _, alone := range []bool{true, false} {
		name := "two providers"
		if alone {
			name = "alone"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}
			ch, token := newChain(t, 18)
			sp := newSpeaker(t, ch.URL)
			w := watch(t, db, ch, token, chain.BEP20, 18)
			rpcs := sp.URL
			if !alone {
				second, err := ch.AddProxy(devnet.BSC)
				require.NoError(t, err)
				rpcs += "," + second.URL
			}
			w.start(map[string]string{"CHAIN_RPC_BEP20": rpcs})
			tx := w.create("15500")
			w.scanned()

			sp.answer("", http.StatusUnauthorized, refusal)
			start := time.Now()
			w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
			w.commit(1)
			series := `partnerd_chain_provider_state{network="bep20",provider="` + providers.Name(sp.URL) + `",state="action_needed"}`
			require.Eventually(t, func() bool { return w.metric(series) == 1 }, 30*time.Second, 50*time.Millisecond, "action_needed")
			require.Less(t, time.Since(start), 30*time.Second)
			logs := w.logs.String()
			require.Contains(t, logs, "level=ERROR")
			require.Contains(t, logs, "chain provider refuses the watcher until its operator acts")
			require.Contains(t, logs, "provider="+providers.Name(sp.URL))
			require.Contains(t, logs, "CHAIN_RPC_BEP20")
			require.Contains(t, logs, "invalid API key")

			ready := readyz(t, w.in.root)
			if alone {
				require.Equal(t, "degraded", ready.Status)
				reason := bep20Reason(ready.Reasons)
				require.Contains(t, reason, "bep20: no provider serves the deposit watcher until its operator acts")
				require.Contains(t, reason, "invalid API key")
				// Out of the rotation: asked again only after OperatorRetry.
				before := sp.Calls("")
				time.Sleep(2 * time.Second)
				require.LessOrEqual(t, sp.Calls("")-before, 2, "not hammered while out of the rotation")
			} else {
				require.Empty(t, bep20Reason(ready.Reasons), "another provider serves")
				w.waitFor(tx.Id, "detection through the other provider", detected)
			}
		})
	}
}

// bep20Reason is /readyz's reason about bep20 ("" when none; trc20 is off in
// these tests).
func bep20Reason(reasons []string) string {
	for _, r := range reasons {
		if strings.HasPrefix(r, "bep20:") {
			return r
		}
	}
	return ""
}

// detected: the deposit was seen (its confirmations may have confirmed it since).
func detected(d client.TransactionDetail) bool {
	return d.Status != client.TransactionStatusAwaitingDeposit
}

type readiness struct {
	Status  string   `json:"status"`
	Reasons []string `json:"reasons"`
}

func readyz(t *testing.T, root string) readiness {
	t.Helper()
	res, err := http.Get(root + "/readyz")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var r readiness
	require.NoError(t, json.NewDecoder(res.Body).Decode(&r))
	return r
}

// TestTronResultCap: java-tron answers an eth_getLogs whose answer is too large
// with -32003 "Response exceeds the limit" (its JSON-RPC response size limit,
// jsonrpc/JsonRpcServlet): a cap on results, not on blocks. The scanner shrinks
// its requests by results and reads a dense backlog with every deposit once.
func TestTronResultCap(t *testing.T) {
	t.Parallel()
	ch, token := newChainIn(t, devnet.JavaTron, 6)
	db := testdb.Database{Name: "sqlite", URL: testdb.SQLite(t)}
	u, err := url.Parse(ch.Proxy.URL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	refused := 0
	// The node's answer is at most 12 logs: more is "Response exceeds the limit".
	const most = 12
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var call struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &call)
		req.Body = io.NopCloser(bytes.NewReader(body))
		if call.Method != "eth_getLogs" {
			rp.ServeHTTP(w, req)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, req)
		var out struct {
			Result []json.RawMessage `json:"result"`
		}
		if json.Unmarshal(rec.Body.Bytes(), &out) == nil && len(out.Result) > most {
			mu.Lock()
			refused++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(call.ID)+`,"error":{"code":-32003,"message":"Response exceeds the limit"}}`)
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)

	w := watch(t, db, ch, token, chain.TRC20, 6)
	one, err := devnet.Units("1", 6)
	require.NoError(t, err)
	const n = 3
	var txs []client.Transaction
	for i := 0; i < n; i++ {
		tx := w.create("15500")
		txs = append(txs, tx)
		// A dense stretch: 8 transfers a block to others, the deposit among them.
		for j := 0; j < 8; j++ {
			w.sendRaw(w.token, common.Address{9}, one)
		}
		w.send(w.token, tx.DepositAddress, tx.CryptoAmount)
		w.commit(1)
		for j := 0; j < 8; j++ {
			w.sendRaw(w.token, common.Address{9}, one)
		}
		w.commit(1)
	}
	w.commit(required)
	w.start(map[string]string{"CHAIN_RPC_TRC20": srv.URL, "CHAIN_START_BLOCK_TRC20": "1"})
	for _, tx := range txs {
		d := w.waitFor(tx.Id, "confirmation", status(client.TransactionStatusOrderFilled))
		require.Equal(t, tx.CryptoAmount, *d.DepositAmount)
	}
	w.scanned()
	mu.Lock()
	require.Positive(t, refused, "the node refused the large answers")
	mu.Unlock()
	require.Positive(t, w.metric(errSeries(chain.TRC20, "results")), "read as a result cap")
	require.Zero(t, w.metric(errSeries(chain.TRC20, "range")), "never as a block range cap")
	require.Contains(t, w.logs.String(), "the node caps eth_getLogs' results; smaller requests")
	require.NotContains(t, w.logs.String(), "level=ERROR")
}
