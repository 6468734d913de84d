package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"partnerd/internal/backoffice"
	"partnerd/internal/chain"
	"partnerd/internal/chain/devnet"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
	"partnerd/internal/web/webkit/webtest"
)

// The console of an instance that does not scan shows the chain progress another
// instance stored, in Chromium: each network's head, scanned and finalized block,
// lag, finality and providers with their age, and the chains table stays inside
// its card (at the usual width, and scrolling inside it on a narrow screen).
func TestConsoleChainsOnEveryInstance(t *testing.T) {
	t.Parallel()
	for _, db := range testdb.Both(t) {
		t.Run(db.Name, func(t *testing.T) { chainsFlow(t, db) })
	}
}

func chainsFlow(t *testing.T, db testdb.Database) {
	ctx := context.Background()
	ch, err := devnet.StartDialect(0, devnet.BSC)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	ch.Proxy.SetFinalizedDepth(2, false)
	token, err := ch.Deploy(ctx, 18)
	require.NoError(t, err)
	id, err := ch.ChainID(ctx)
	require.NoError(t, err)
	settings := map[string]string{
		"CHAIN_RPC_BEP20":     ch.URL,
		"CHAIN_ID_BEP20":      id,
		"TOKEN_CONTRACTS":     fmt.Sprintf("usdt:bep20=%s/18", chain.FormatAddress(chain.BEP20, token)),
		"CONFIRMATIONS":       "bep20=3,trc20=3",
		"CHAIN_POLL_INTERVAL": "50ms",
	}
	scanning := apitest.Start(t, db, settings)
	require.Eventually(t, func() bool { return scansHere(t, scanning) }, 20*time.Second, 20*time.Millisecond)
	other := apitest.Start(t, db, settings)

	// trc20 is watched by no instance here: its stored reading (as an instance with
	// two providers left it a while ago) only ages.
	stale := store.Now().Add(-90 * time.Second)
	head, final := int64(71234567), int64(71234548)
	require.NoError(t, other.Store.SaveChainReading(ctx, backoffice.ChainReading{Network: chain.TRC20,
		Head: &head, HeadAt: &stale, Finalized: &final, FinalizedAt: &stale,
		Finality: chain.FinalityUnknown, FinalitySince: &stale, UpdatedAt: stale,
		Providers: []chain.ProviderState{
			{Name: "https://api.trongrid.io", State: chain.ProviderRateLimited, Head: 71234567, Since: stale,
				Error: `HTTP 403: {"Error":"The key exceeds the frequency limit(15), and the query server is suspended for 30s"}`},
			{Name: "wss://tron-mainnet.a-provider-with-a-rather-long-host-name.example", State: chain.ProviderStandby, Head: 71234560, Push: true, Since: stale},
			{Name: "https://tron-mainnet.infura.io", State: chain.ProviderActionNeeded, Head: 71234001, Since: stale,
				Error: "needs its operator: eth_blockNumber: operator (HTTP 401): invalid project id"},
		}}))

	for range 3 {
		ch.Backend.Commit()
	}
	bn, err := ch.Backend.Client().BlockNumber(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		p, err := other.Store.ChainProgress(ctx)
		require.NoError(t, err)
		r := p[chain.BEP20].Reading
		return r != nil && r.Head != nil && uint64(*r.Head) == bn && r.Finalized != nil
	}, 20*time.Second, 50*time.Millisecond)

	bctx := webtest.Browser(t)
	base := other.Root + "/console"
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Navigate(base+"/login"),
		chromedp.SetValue("#key", other.NewOperator(t), chromedp.ByID),
		chromedp.Click("#signin", chromedp.ByID),
		chromedp.WaitVisible("#chains", chromedp.ByID),
	))
	text := func(sel string) string {
		t.Helper()
		var s string
		require.NoError(t, chromedp.Run(bctx, chromedp.Text(sel, &s, chromedp.ByQuery)))
		return strings.TrimSpace(s)
	}
	require.Equal(t, strconv.FormatUint(bn, 10), text("tr.network-bep20 .head"), "the head the first instance read")
	scanned, err := strconv.ParseUint(text("tr.network-bep20 .scanned"), 10, 64)
	require.NoError(t, err)
	require.LessOrEqual(t, scanned, bn)
	require.Equal(t, strconv.FormatUint(bn-scanned, 10), text("tr.network-bep20 .lag"))
	finalized, err := strconv.ParseUint(text("tr.network-bep20 .finalized"), 10, 64)
	require.NoError(t, err, "the node's finalized block, as last read")
	require.LessOrEqual(t, finalized, bn-2)
	require.Regexp(t, regexp.MustCompile(`^\d+ s ago$`), text("tr.network-bep20 .updated"), "stored seconds ago")

	require.Equal(t, "71234567", text("tr.network-trc20 .head"))
	require.Equal(t, "—", text("tr.network-trc20 .scanned"))
	require.Equal(t, "unknown", text("tr.network-trc20 .finality"))
	require.Regexp(t, regexp.MustCompile(`^[12]m ago$`), text("tr.network-trc20 .updated"), "no instance watches it: the age shows")
	providers := text("tr.providers-trc20")
	require.Contains(t, providers, "rate limited https://api.trongrid.io")
	require.Contains(t, providers, "suspended for 30s")
	require.Contains(t, providers, "standby wss://tron-mainnet.a-provider-with-a-rather-long-host-name.example push head 71234560")
	require.Contains(t, providers, "needs a person https://tron-mainnet.infura.io")
	require.Contains(t, providers, "invalid project id", "its error names what is wrong")
	require.Contains(t, providers, "To do: fix its key, plan or URL in this network's CHAIN_RPC_ setting")
	require.Equal(t, 1, strings.Count(providers, "To do:"), "only beside the provider that needs its operator")
	require.NotContains(t, metricsOf(t, other), `partnerd_chain_head_block{network="bep20"}`, "the console's instance does not scan")

	// The table stays inside its card: at this width without scrolling, on a narrow
	// screen scrolling inside the card, never past it.
	inside := func() (fits, noScroll bool) {
		t.Helper()
		var r []bool
		require.NoError(t, chromedp.Run(bctx, chromedp.Evaluate(`(() => {
			const table = document.querySelector('#chains'), box = table.parentElement, card = table.closest('section');
			const b = box.getBoundingClientRect(), c = card.getBoundingClientRect();
			return [b.left >= c.left && b.right <= c.right + 0.5, box.scrollWidth <= box.clientWidth];
		})()`, &r)))
		return r[0], r[1]
	}
	fits, noScroll := inside()
	require.True(t, fits)
	require.True(t, noScroll, "the chains table fits its card at 1280 px")
	webtest.Shot(t, bctx, "chains.png")
	require.NoError(t, chromedp.Run(bctx, chromedp.EmulateViewport(480, 900)))
	fits, _ = inside()
	require.True(t, fits, "on a narrow screen the table scrolls inside its card")
}

// scansHere reports whether env's own watcher has read bep20's head (its metrics
// have the series only then): true on the instance holding the scanner lock.
func scansHere(t *testing.T, env *apitest.Env) bool {
	t.Helper()
	return strings.Contains(metricsOf(t, env), `partnerd_chain_head_block{network="bep20"}`)
}

func metricsOf(t *testing.T, env *apitest.Env) string {
	t.Helper()
	res, err := http.Get(env.Root + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	return string(body)
}
