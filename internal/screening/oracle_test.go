package screening_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/chain/providers"
	"partnerd/internal/chain/rpc"
	"partnerd/internal/screening"
	"partnerd/internal/screening/screeningtest"
)

// Both read the chain for an oracle: the pool (with failover) and one client.
var (
	_ screening.OracleCaller = (*providers.Pool)(nil)
	_ screening.OracleCaller = (*rpc.Client)(nil)
	_ screening.Screener     = (*screening.Oracle)(nil)
)

// sanctionsDir holds the test oracle compiled by scripts/compile-token.sh.
var sanctionsDir = filepath.Join("..", "..", "testdata", "sanctions")

// oracleChain is a chain with the test sanctions oracle deployed.
type oracleChain struct {
	*devnet.Chain
	*screeningtest.Oracle
	oracle common.Address
}

// startOracle runs a chain answering as BNB Smart Chain, deploys the test oracle
// and lists listed on it.
func startOracle(t *testing.T, listed ...common.Address) *oracleChain {
	t.Helper()
	ch, err := devnet.Start(0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	o := screeningtest.Deploy(t, ch, sanctionsDir, listed...)
	return &oracleChain{Chain: ch, Oracle: o, oracle: o.Address}
}

// pool is a provider pool over urls, in order, as the service builds one.
func pool(t *testing.T, urls ...string) *providers.Pool {
	t.Helper()
	return poolOn(t, chain.BEP20, urls...)
}

// poolOn is a provider pool of network over urls, its clients speaking the
// network's dialect.
func poolOn(t *testing.T, network string, urls ...string) *providers.Pool {
	t.Helper()
	d, err := rpc.For(network)
	require.NoError(t, err)
	var ps []providers.Provider
	for _, u := range urls {
		c, err := rpc.New(u, d, rpc.Options{Timeout: 2 * time.Second})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		ps = append(ps, providers.Provider{URL: u, Client: c})
	}
	return providers.New(providers.Options{Network: network}, ps)
}

var (
	listed = common.HexToAddress("0x7F367cC41522cE07553e823bf3be79A889DEbe1B")
	other  = common.HexToAddress("0x1111111111111111111111111111111111111111")
)

// TestOracleAnswers: the listed address is a hit pinned to the block read; another
// is clear; one removed from the list is clear again at a later block. The
// address is read in either case of hex.
func TestOracleAnswers(t *testing.T) {
	t.Parallel()
	oc := startOracle(t, listed)
	o := screening.NewOracle(chain.BEP20, oc.oracle, pool(t, oc.URL))
	ctx := context.Background()
	head, err := oc.Backend.Client().BlockNumber(ctx)
	require.NoError(t, err)

	f, err := o.Screen(ctx, chain.BEP20, listed.Hex())
	require.NoError(t, err)
	require.Equal(t, screening.Finding{
		Screener: "oracle", Source: "bep20 oracle " + oc.oracle.Hex(), Version: "block " + itoa(head),
		Hit: true, Category: "sanctions", Name: "sanctioned address",
	}, f)
	f, err = o.Screen(ctx, chain.BEP20, strings.ToLower(listed.Hex()))
	require.NoError(t, err)
	require.True(t, f.Hit, "lower-case hex is the same address")

	f, err = o.Screen(ctx, chain.BEP20, other.Hex())
	require.NoError(t, err)
	require.Equal(t, screening.Finding{Screener: "oracle", Source: "bep20 oracle " + oc.oracle.Hex(), Version: "block " + itoa(head)}, f)

	oc.Exec(t, "removeFromSanctionsList", []common.Address{listed})
	f, err = o.Screen(ctx, chain.BEP20, listed.Hex())
	require.NoError(t, err)
	require.False(t, f.Hit, "removed from the list")
	require.Equal(t, "block "+itoa(head+1), f.Version, "read at the new head")

	r := screening.Combined{o}.Screen(ctx, chain.BEP20, other.Hex(), time.Now())
	require.Equal(t, screening.Clear, r.Verdict)
}

// TestOracleAtLatest: on Tron the node runs eth_call only at its head and refuses
// a block number, so the oracle is asked at "latest" through the pool and through
// one client alike; it still answers (a hit, a clear, a clear once removed from
// the list), and the finding names the head read before the call as the least
// block the answer is for.
func TestOracleAtLatest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ch, err := devnet.StartDialect(0, devnet.JavaTron)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	oc := screeningtest.Deploy(t, ch, sanctionsDir, listed)
	source := "trc20 oracle " + chain.FormatAddress(chain.TRC20, oc.Address)
	tronListed, tronOther := chain.FormatAddress(chain.TRC20, listed), chain.FormatAddress(chain.TRC20, other)
	require.True(t, strings.HasPrefix(tronListed, "T"), "screened in Tron's own form")

	// The node's own refusal of a pinned block: the call the oracle must not make.
	head, err := ch.Backend.Client().BlockNumber(ctx)
	require.NoError(t, err)
	bsc, err := rpc.New(ch.URL, rpc.BSC, rpc.Options{Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(bsc.Close)
	// isSanctioned(listed), asked at the block just read, as a node of BNB Smart Chain is.
	data := append([]byte{0xdf, 0x59, 0x2f, 0x7d}, common.LeftPadBytes(listed.Bytes(), 32)...)
	_, err = bsc.Call(ctx, oc.Address, data, head)
	var re *rpc.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, -32602, re.Code)
	require.Equal(t, "QUANTITY not supported, just support TAG as latest", re.Message)
	refused := ch.Proxy.Calls("eth_call")

	client, err := rpc.New(ch.URL, rpc.JavaTron, rpc.Options{Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	callers := []struct {
		name   string
		caller screening.OracleCaller
	}{
		{"pool", poolOn(t, chain.TRC20, ch.URL)},
		{"client", client},
	}
	for _, c := range callers {
		o := screening.NewOracle(chain.TRC20, oc.Address, c.caller)
		head, err := ch.Backend.Client().BlockNumber(ctx)
		require.NoError(t, err)
		at := "latest, at or after block " + itoa(head)

		f, err := o.Screen(ctx, chain.TRC20, tronListed)
		require.NoError(t, err, c.name)
		require.Equal(t, screening.Finding{
			Screener: "oracle", Source: source, Version: at,
			Hit: true, Category: "sanctions", Name: "sanctioned address",
		}, f, c.name)
		f, err = o.Screen(ctx, chain.TRC20, tronOther)
		require.NoError(t, err, c.name)
		require.Equal(t, screening.Finding{Screener: "oracle", Source: source, Version: at}, f, c.name)
		require.Equal(t, screening.Clear, screening.Combined{o}.Screen(ctx, chain.TRC20, tronOther, time.Now()).Verdict, c.name)
	}
	require.Equal(t, refused+6, ch.Proxy.Calls("eth_call"), "every call answered, none refused")

	// Removed from the list in a new block: clear at the new head.
	oc.Exec(t, "removeFromSanctionsList", []common.Address{listed})
	head, err = ch.Backend.Client().BlockNumber(ctx)
	require.NoError(t, err)
	f, err := screening.NewOracle(chain.TRC20, oc.Address, poolOn(t, chain.TRC20, ch.URL)).Screen(ctx, chain.TRC20, tronListed)
	require.NoError(t, err)
	require.False(t, f.Hit, "removed from the list")
	require.Equal(t, "latest, at or after block "+itoa(head), f.Version)
}

// TestOracleCoversItsNetworkOnly: an oracle answers for its own network; asked
// about another, or about an address that is not one, it errors without a call.
func TestOracleCoversItsNetworkOnly(t *testing.T) {
	t.Parallel()
	oc := startOracle(t)
	o := screening.NewOracle(chain.BEP20, oc.oracle, pool(t, oc.URL))
	require.Equal(t, "oracle", o.Kind())
	require.True(t, o.Covers(chain.BEP20))
	require.False(t, o.Covers(chain.TRC20))
	require.Empty(t, screening.Combined{o}.Screen(context.Background(), chain.TRC20, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", time.Now()).Findings,
		"not asked about another network")

	_, err := o.Screen(context.Background(), chain.TRC20, other.Hex())
	require.ErrorContains(t, err, "does not answer for network trc20")
	_, err = o.Screen(context.Background(), chain.BEP20, "0x1234")
	require.ErrorContains(t, err, "not a 20-byte hex address")
	require.Zero(t, oc.Proxy.Calls("eth_call"))
}

// TestOracleFailsOver: with the first provider down, the pool's next provider
// answers the head and the call.
func TestOracleFailsOver(t *testing.T) {
	t.Parallel()
	oc := startOracle(t, listed)
	down, up := oc.second(t), oc.second(t)
	require.NoError(t, down.Close())
	p := pool(t, down.URL, up.URL)
	o := screening.NewOracle(chain.BEP20, oc.oracle, p)
	f, err := o.Screen(context.Background(), chain.BEP20, listed.Hex())
	require.NoError(t, err)
	require.True(t, f.Hit)
	f, err = o.Screen(context.Background(), chain.BEP20, other.Hex())
	require.NoError(t, err)
	require.False(t, f.Hit)
	require.Equal(t, 2, up.Calls("eth_call"), "the second provider answered both")
	require.Equal(t, chain.ProviderFailing, p.States()[0].State)

	// Both down: an error, and the combined verdict is unknown, never clear.
	require.NoError(t, up.Close())
	_, err = o.Screen(context.Background(), chain.BEP20, other.Hex())
	require.Error(t, err)
	r := screening.Combined{o}.Screen(context.Background(), chain.BEP20, other.Hex(), time.Now())
	require.Equal(t, screening.Unknown, r.Verdict)
	require.Equal(t, "bep20 oracle "+oc.oracle.Hex(), r.Findings[0].Source)
	require.NotEmpty(t, r.Findings[0].Error)
}

func (oc *oracleChain) second(t *testing.T) *devnet.Proxy {
	t.Helper()
	px, err := oc.AddProxy(devnet.BSC)
	require.NoError(t, err)
	return px
}

// TestOracleWrongContract: an address without code answers nothing, a contract
// without isSanctioned reverts, and one answering something other than a bool is
// not believed: each is an error (the result unknown), never a clear.
func TestOracleWrongContract(t *testing.T) {
	t.Parallel()
	oc := startOracle(t)
	ctx := context.Background()
	token, err := oc.Deploy(ctx, 18)
	require.NoError(t, err)
	// Runtime code that answers any call with 32 bytes holding 2, and one that
	// answers with a single byte.
	two, err := oc.DeployCode(ctx, creation(0x60, 0x02, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xf3))
	require.NoError(t, err)
	short, err := oc.DeployCode(ctx, creation(0x60, 0x01, 0x60, 0x00, 0xf3))
	require.NoError(t, err)
	p := pool(t, oc.URL)
	for _, c := range []struct {
		name     string
		contract common.Address
		err      string
	}{
		{"no code", common.HexToAddress("0x40C57923924B5c5c5455c48D93317139ADDaC8fb"), "the answer is 0 bytes"},
		{"no such function", token, "reverted"},
		{"not a bool", two, "not a bool"},
		{"short answer", short, "the answer is 1 bytes"},
	} {
		o := screening.NewOracle(chain.BEP20, c.contract, p)
		f, err := o.Screen(ctx, chain.BEP20, listed.Hex())
		require.ErrorContains(t, err, c.err, c.name)
		require.False(t, f.Hit, c.name)
		require.Equal(t, "bep20 oracle "+c.contract.Hex(), f.Source, c.name)
		r := screening.Combined{o}.Screen(ctx, chain.BEP20, listed.Hex(), time.Now())
		require.Equal(t, screening.Unknown, r.Verdict, c.name)
	}
	require.Equal(t, chain.ProviderActive, p.States()[0].State, "a wrong contract is no fault of the provider")
}

// creation wraps runtime code into creation code that deploys it.
func creation(runtime ...byte) []byte {
	n := byte(len(runtime))
	// PUSH1 n, PUSH1 12 (the runtime's offset), PUSH1 0, CODECOPY, PUSH1 n, PUSH1 0, RETURN
	init := []byte{0x60, n, 0x60, 12, 0x60, 0x00, 0x39, 0x60, n, 0x60, 0x00, 0xf3}
	return append(init, runtime...)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
