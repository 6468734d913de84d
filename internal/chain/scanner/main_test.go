package scanner_test

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/deposits"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// TestMain drops the test databases. Every test runs in parallel with the others
// (each has its own chain, servers and schema): they mostly wait for blocks to be
// scanned and jobs to run, so six at a time keep the package's CPU busy where one
// at a time left it idle three quarters of its run; six rigs' pools stay well within
// PostgreSQL's connections shared with every other package's tests.
func TestMain(m *testing.M) { os.Exit(testdb.MainParallel(m, 6)) }

// rig is a real chain (go-ethereum's simulated backend over JSON-RPC on loopback)
// with the test token deployed, and the service watching it.
type rig struct {
	t        *testing.T
	chain    *devnet.Chain
	network  string
	decimals int
	token    common.Address
	env      *apitest.Env
	c        *client.ClientWithResponses
}

const required = 3

// newChain starts a chain with a token of decimals decimals answering as BNB Smart
// Chain behind a provider does.
func newChain(t *testing.T, decimals uint8) (*devnet.Chain, common.Address) {
	return newChainIn(t, devnet.BSC, decimals)
}

// dialectOf is the dialect of network's nodes.
func dialectOf(network string) devnet.Dialect {
	if network == chain.TRC20 {
		return devnet.JavaTron
	}
	return devnet.BSC
}

// newChainIn starts a chain answering in dialect d, its finalized block required−1
// blocks behind the head (so finality and confirmations agree unless a test moves it).
func newChainIn(t *testing.T, d devnet.Dialect, decimals uint8) (*devnet.Chain, common.Address) {
	t.Helper()
	ch, err := devnet.StartDialect(0, d)
	require.NoError(t, err)
	ch.Proxy.SetFinalizedDepth(required-1, false)
	t.Cleanup(func() { _ = ch.Close() })
	token, err := ch.Deploy(context.Background(), decimals)
	require.NoError(t, err)
	return ch, token
}

// chainSettings are the settings watching network on ch (through rpc, the chain's
// URL unless a proxy is given).
func chainSettings(network, rpc string, token common.Address, decimals int) map[string]string {
	return map[string]string{
		"CHAIN_RPC_" + strings.ToUpper(network): rpc,
		"TOKEN_CONTRACTS":                       fmt.Sprintf("usdt:%s=%s/%d", network, chain.FormatAddress(network, token), decimals),
		"CONFIRMATIONS":                         fmt.Sprintf("bep20=%d,trc20=%d", required, required),
		"CHAIN_POLL_INTERVAL":                   "50ms",
		"JOB_POLL_INTERVAL":                     "50ms",
		"CHAIN_ID_BEP20":                        "1337",
	}
}

func newRig(t *testing.T, db testdb.Database, network string, decimals uint8, extra map[string]string) *rig {
	t.Helper()
	ch, token := newChainIn(t, dialectOf(network), decimals)
	settings := chainSettings(network, ch.URL, token, int(decimals))
	for k, v := range extra {
		settings[k] = v
	}
	return rigOn(t, db, ch, token, network, decimals, settings)
}

func rigOn(t *testing.T, db testdb.Database, ch *devnet.Chain, token common.Address, network string, decimals uint8, settings map[string]string) *rig {
	t.Helper()
	idKey := "CHAIN_ID_" + strings.ToUpper(network)
	if _, ok := settings[idKey]; !ok {
		id, err := ch.ChainID(context.Background())
		require.NoError(t, err)
		settings[idKey] = id
	}
	env := apitest.Start(t, db, settings)
	return &rig{t: t, chain: ch, network: network, decimals: int(decimals), token: token, env: env, c: env.Client(t, env.NewPartner(t))}
}

func (r *rig) create(fiat string) client.Transaction {
	r.t.Helper()
	res, err := r.c.CreateTransactionWithResponse(context.Background(), &client.CreateTransactionParams{},
		client.CreateTransactionRequest{MerchantReference: "ORDER-" + uuid.NewString(), CryptoCurrency: "usdt", Network: r.network, FiatAmount: &fiat},
		func(_ context.Context, req *http.Request) error {
			req.Header.Set("Idempotency-Key", uuid.NewString())
			return nil
		})
	require.NoError(r.t, err)
	require.Equal(r.t, http.StatusCreated, res.StatusCode(), string(res.Body))
	return res.JSON201.Data
}

// send transfers amount whole tokens (decimal string) of token to addr (network
// form); the transfer lands in the next Commit.
func (r *rig) send(token common.Address, addr, amount string) common.Hash {
	r.t.Helper()
	to, err := chain.ParseAddress(r.network, addr)
	require.NoError(r.t, err)
	raw, err := devnet.Units(amount, r.decimals)
	require.NoError(r.t, err)
	return r.sendRaw(token, to, raw)
}

func (r *rig) sendRaw(token, to common.Address, raw *big.Int) common.Hash {
	r.t.Helper()
	h, err := r.chain.Transfer(context.Background(), token, to, raw)
	require.NoError(r.t, err)
	return h
}

func (r *rig) get(id uuid.UUID) client.TransactionDetail {
	r.t.Helper()
	res, err := r.c.GetTransactionWithResponse(context.Background(), id)
	require.NoError(r.t, err)
	require.Equal(r.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data
}

func (r *rig) history(id uuid.UUID) []client.StatusHistoryEntry {
	r.t.Helper()
	res, err := r.c.GetTransactionStatusHistoryWithResponse(context.Background(), id)
	require.NoError(r.t, err)
	require.Equal(r.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Data.History
}

func (r *rig) reasons(id uuid.UUID) []string {
	var out []string
	for _, e := range r.history(id) {
		out = append(out, e.Reason)
	}
	return out
}

// waitFor polls the transaction until cond holds (the scanner polls every 50 ms).
func (r *rig) waitFor(id uuid.UUID, what string, cond func(d client.TransactionDetail) bool) client.TransactionDetail {
	r.t.Helper()
	return r.waitWithin(id, 20*time.Second, what, cond)
}

// waitWithin is waitFor for at most d (a fault's window and the catch-up after it).
func (r *rig) waitWithin(id uuid.UUID, d time.Duration, what string, cond func(d client.TransactionDetail) bool) client.TransactionDetail {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for {
		d := r.get(id)
		if cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("waiting for %s: still %s, confirmations %v, history %v", what, d.Status, d.Confirmations, r.reasons(id))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scanned waits until the scanner has processed the chain's head block.
func (r *rig) scanned() {
	r.t.Helper()
	head, err := r.chain.Backend.Client().BlockNumber(context.Background())
	require.NoError(r.t, err)
	require.Eventually(r.t, func() bool {
		cur, err := r.env.Store.ChainCursor(context.Background(), r.network)
		require.NoError(r.t, err)
		return cur != nil && cur.Block >= head
	}, time.Minute, 20*time.Millisecond, "the scanner reaches block %d", head)
}

func (r *rig) transfers(unmatchedOnly bool) []deposits.ChainTransfer {
	r.t.Helper()
	all, err := r.env.Store.ChainTransfers(context.Background(), unmatchedOnly, 100000)
	require.NoError(r.t, err)
	var out []deposits.ChainTransfer
	for _, x := range all {
		if x.Network == r.network {
			out = append(out, x)
		}
	}
	return out
}

func status(s client.TransactionStatus) func(client.TransactionDetail) bool {
	return func(d client.TransactionDetail) bool { return d.Status == s }
}

func confirmations(n int) func(client.TransactionDetail) bool {
	return func(d client.TransactionDetail) bool { return d.Confirmations != nil && *d.Confirmations == n }
}

func meta(h []client.StatusHistoryEntry, reason string) map[string]any {
	for _, e := range h {
		if e.Reason == reason && e.Metadata != nil {
			return *e.Metadata
		}
	}
	return nil
}
