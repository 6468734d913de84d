package config

import (
	"net/http"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/stretchr/testify/require"

	"partnerd/internal/address"
	"partnerd/internal/chain"
	"partnerd/internal/jobs"
	"partnerd/internal/webhook"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestStagingDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, Staging, c.Env)
	require.Equal(t, "sqlite:data/partnerd.db", c.DatabaseURL)
	require.Equal(t, ":8080", c.ListenAddr)
	require.Equal(t, "static", c.RateSource)
	require.Len(t, c.Pairs, 2)
	require.Equal(t, "0.005", c.Spread.String())
	require.ElementsMatch(t, []string{"bep20", "trc20"}, c.DemoXPubs, "staging falls back to the demo xpubs")
	require.True(t, c.DemoCursorSecret)
	require.Equal(t, webhook.StagingSchedule, c.WebhookSchedule, "staging retries within seconds first")
}

func TestProductionRefusesDemoRates(t *testing.T) {
	t.Parallel()
	_, err := Load(env(map[string]string{"APP_ENV": "production", "RATE_SOURCE": "static"}))
	require.ErrorContains(t, err, "RATE_SOURCE")
	_, err = Load(env(map[string]string{"APP_ENV": "production"}))
	require.ErrorContains(t, err, "RATE_FEED_URL")
	prod := map[string]string{"APP_ENV": "production", "RATE_FEED_URL": "https://rates.example/ngn", "RATE_FEED_FIELDS": "usdt=data.usdt"}
	_, err = Load(env(prod))
	require.ErrorContains(t, err, "XPUB_BEP20")
	require.ErrorContains(t, err, "XPUB_TRC20")
	require.ErrorContains(t, err, "CURSOR_SECRET")
	require.ErrorContains(t, err, "DATABASE_URL", "the SQLite default is refused")
	require.ErrorContains(t, err, "CHAIN_RPC_BEP20")
	require.ErrorContains(t, err, "CHAIN_RPC_TRC20")
	require.ErrorContains(t, err, "SCREENING", "production refuses to start without screening")
	require.ErrorContains(t, err, "PUBLIC_URL", "production's links need its public address")
	prod["SCREENING"] = "off"
	prod["PUBLIC_URL"] = "https://partnerd.example.com"
	prod["CHAIN_RPC_BEP20"] = "https://bsc.example/rpc"
	prod["CHAIN_RPC_TRC20"] = "https://tron.example/jsonrpc"
	// Demo values given explicitly are refused too, each naming its setting.
	prod["XPUB_BEP20"] = address.DemoXPubs["bep20"]
	prod["XPUB_TRC20"] = address.DemoXPubs["trc20"]
	prod["CURSOR_SECRET"] = demoCursorSecret
	prod["DATABASE_URL"] = "sqlite:data/partnerd.db"
	prod["WEBHOOK_ALLOW_PRIVATE_URLS"] = "true"
	_, err = Load(env(prod))
	for _, key := range []string{"XPUB_BEP20", "XPUB_TRC20", "CURSOR_SECRET", "DATABASE_URL", "WEBHOOK_ALLOW_PRIVATE_URLS"} {
		require.ErrorContains(t, err, key)
	}
	require.ErrorContains(t, err, "public demo key")
	require.ErrorContains(t, err, "built-in staging secret")

	prod["XPUB_BEP20"] = otherXPub
	prod["XPUB_TRC20"] = otherXPub
	prod["CURSOR_SECRET"] = "0123456789abcdef0123456789abcdef"
	prod["SECRETS_KEYS"] = "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	prod["DATABASE_URL"] = "postgres://partnerd@db.internal/partnerd"
	delete(prod, "WEBHOOK_ALLOW_PRIVATE_URLS")
	c, err := Load(env(prod))
	require.NoError(t, err)
	require.Equal(t, "http", c.RateSource)
	require.Empty(t, c.DemoXPubs)
	require.False(t, c.DemoCursorSecret)
	require.False(t, c.WebhookAllowPrivate)
	require.Equal(t, map[string][]Provider{"bep20": {{URL: "https://bsc.example/rpc", Headers: http.Header{}}},
		"trc20": {{URL: "https://tron.example/jsonrpc", Headers: http.Header{}}}}, c.Chain.Providers)
	require.Empty(t, c.Chain.Off)
	require.Equal(t, webhook.DefaultSchedule, c.WebhookSchedule, "production keeps its schedule")
}

// Production refuses the demo keys by their material: re-encoded with other version
// bytes (zpub, ypub, tpub), swapped between the networks, or one of them on both;
// the error names the setting. Fresh keys start, the same one on both networks
// included.
func TestProductionRefusesDemoKeysInDisguise(t *testing.T) {
	t.Parallel()
	reencode := func(xpub string, version []byte) string {
		k, err := hdkeychain.NewKeyFromString(xpub)
		require.NoError(t, err)
		again, err := k.CloneWithVersion(version)
		require.NoError(t, err)
		out := again.String()
		require.NotEqual(t, xpub, out)
		return out
	}
	zpub, ypub, tpub := []byte{0x04, 0xb2, 0x47, 0x46}, []byte{0x04, 0x9d, 0x7c, 0xb2}, []byte{0x04, 0x35, 0x87, 0xcf}
	bep, trc := address.DemoXPubs["bep20"], address.DemoXPubs["trc20"]
	prod := func(bep20, trc20 string) map[string]string {
		return map[string]string{"APP_ENV": "production", "RATE_FEED_URL": "https://rates.example/ngn", "RATE_FEED_FIELDS": "usdt=data.usdt",
			"CHAIN_RPC_BEP20": "https://bsc.example/rpc", "CHAIN_RPC_TRC20": "https://tron.example/jsonrpc",
			"CURSOR_SECRET": "0123456789abcdef0123456789abcdef", "SECRETS_KEYS": "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "DATABASE_URL": "postgres://partnerd@db.internal/partnerd",
			"XPUB_BEP20": bep20, "XPUB_TRC20": trc20, "SCREENING": "list", "PUBLIC_URL": "https://partnerd.example.com"}
	}
	for name, tc := range map[string]struct {
		bep20, trc20 string
		refused      []string
	}{
		"bep20 demo as zpub":      {reencode(bep, zpub), otherXPub, []string{"XPUB_BEP20"}},
		"trc20 demo as ypub":      {otherXPub, reencode(trc, ypub), []string{"XPUB_TRC20"}},
		"both as tpub":            {reencode(bep, tpub), reencode(trc, tpub), []string{"XPUB_BEP20", "XPUB_TRC20"}},
		"swapped":                 {trc, bep, []string{"XPUB_BEP20", "XPUB_TRC20"}},
		"swapped as zpub":         {reencode(trc, zpub), reencode(bep, zpub), []string{"XPUB_BEP20", "XPUB_TRC20"}},
		"bep20 demo on both":      {bep, bep, []string{"XPUB_BEP20", "XPUB_TRC20"}},
		"padded with white space": {" " + bep + "\t", otherXPub, []string{"XPUB_BEP20"}},
	} {
		_, err := Load(env(prod(tc.bep20, tc.trc20)))
		require.Error(t, err, name)
		for _, key := range tc.refused {
			require.ErrorContains(t, err, key, name)
		}
		require.ErrorContains(t, err, "public demo key", name)
		if len(tc.refused) == 1 {
			other := map[string]string{"XPUB_BEP20": "XPUB_TRC20", "XPUB_TRC20": "XPUB_BEP20"}[tc.refused[0]]
			require.NotContains(t, err.Error(), other, name)
		}
	}

	// Fresh keys start: distinct ones, one on both networks, and another
	// version's encoding of a fresh key.
	fresh := reencode(otherXPub, zpub)
	for name, keys := range map[string][2]string{"distinct": {otherXPub, fresh}, "one key on both": {otherXPub, otherXPub}, "zpub": {fresh, fresh}} {
		c, err := Load(env(prod(keys[0], keys[1])))
		require.NoError(t, err, name)
		require.Empty(t, c.DemoXPubs, name)
	}
	// Staging keeps the demo keys, in whatever encoding.
	_, err := Load(env(map[string]string{"XPUB_BEP20": reencode(bep, zpub)}))
	require.NoError(t, err)
}

// otherXPub is a valid account xpub that is not a demo key (BIP-32 test vector 1,
// m/0H/1).
const otherXPub = "xpub6ASuArnXKPbfEwhqN6e3mwBcDTgzisQN1wXN9BJcM47sSikHjJf3UFHKkNAWbWMiGj7Wf5uMash7SyYq527Hqck2AxYysAA7xmALppuCkwQ"

func TestWebhookAllowPrivateURLs(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.False(t, c.WebhookAllowPrivate, "off by default, staging included")
	c, err = Load(env(map[string]string{"WEBHOOK_ALLOW_PRIVATE_URLS": "true"}))
	require.NoError(t, err)
	require.True(t, c.WebhookAllowPrivate)
	_, err = Load(env(map[string]string{"WEBHOOK_ALLOW_PRIVATE_URLS": "yes"}))
	require.ErrorContains(t, err, "WEBHOOK_ALLOW_PRIVATE_URLS")
}

func TestChainSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, []string{"bep20", "trc20"}, c.Chain.Off, "staging without CHAIN_RPC_*: the watchers are off")
	require.Len(t, c.Chain.Tokens, 2)
	require.Equal(t, 3*time.Second, c.Chain.PollInterval)
	c, err = Load(env(map[string]string{"CHAIN_RPC_BEP20": "http://127.0.0.1:8545", "CHAIN_START_BLOCK_BEP20": "12",
		"TOKEN_CONTRACTS": "usdt:bep20=0x5FbDB2315678afecb367f032d93F642f64180aa3/6", "CHAIN_POLL_INTERVAL": "100ms"}))
	require.NoError(t, err)
	require.Equal(t, map[string][]Provider{"bep20": {{URL: "http://127.0.0.1:8545", Headers: http.Header{}}}}, c.Chain.Providers)
	require.Equal(t, map[string]uint64{"bep20": 12}, c.Chain.StartBlocks)
	require.Equal(t, []string{"trc20"}, c.Chain.Off)
	require.Equal(t, 6, c.Chain.Tokens[0].Decimals)
	require.Equal(t, 10*time.Second, c.Chain.Timeout, "CHAIN_RPC_TIMEOUT's default")
	require.Equal(t, "56", c.Chain.ChainIDs["bep20"].String(), "BNB Smart Chain mainnet")
	require.Equal(t, int64(0x2b6653dc), c.Chain.ChainIDs["trc20"].Int64(), "Tron mainnet")
	require.Empty(t, c.Chain.Providers["bep20"][0].Headers)
	require.Empty(t, c.Chain.Finality, "unset: the watcher asks the node")

	c, err = Load(env(map[string]string{"CHAIN_RPC_TRC20": "https://api.trongrid.io/jsonrpc", "CHAIN_RPC_TIMEOUT": "2s",
		"CHAIN_RPC_HEADERS_TRC20": "TRON-PRO-API-KEY=abc=def, X-Client=partnerd", "CHAIN_ID_TRC20": "0xcd8690dc", "CHAIN_ID_BEP20": "97"}))
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, c.Chain.Timeout)
	require.Equal(t, "abc=def", c.Chain.Providers["trc20"][0].Headers.Get("TRON-PRO-API-KEY"), "a value may hold '='")
	require.Equal(t, "partnerd", c.Chain.Providers["trc20"][0].Headers.Get("X-Client"))
	require.Equal(t, int64(0xcd8690dc), c.Chain.ChainIDs["trc20"].Int64())
	require.Equal(t, int64(97), c.Chain.ChainIDs["bep20"].Int64())

	// Several providers, each with the common headers and its own; a pinned finality rule.
	c, err = Load(env(map[string]string{"CHAIN_RPC_BEP20": " https://a.example/rpc , wss://b.example/ws,http://c.example",
		"CHAIN_RPC_HEADERS_BEP20": "X-Client=partnerd", "CHAIN_RPC_HEADERS_BEP20_2": "X-Api-Key=k2, X-Client=other",
		"CHAIN_FINALITY_BEP20": "confirmations", "CHAIN_FINALITY_TRC20": "tag"}))
	require.NoError(t, err)
	ps := c.Chain.Providers["bep20"]
	require.Len(t, ps, 3)
	require.Equal(t, []string{"https://a.example/rpc", "wss://b.example/ws", "http://c.example"}, []string{ps[0].URL, ps[1].URL, ps[2].URL})
	require.Equal(t, http.Header{"X-Client": {"partnerd"}}, ps[0].Headers)
	require.Equal(t, http.Header{"X-Client": {"other"}, "X-Api-Key": {"k2"}}, ps[1].Headers, "the provider's own header wins")
	require.Equal(t, ps[0].Headers, ps[2].Headers)
	require.Equal(t, map[string]string{"bep20": chain.FinalityConfirmations, "trc20": chain.FinalityTag}, c.Chain.Finality)
	require.Empty(t, c.Chain.MaxLag, "unset: the network's default")
	require.Zero(t, ps[0].Rate, "unset: no cap")

	// A provider's calls-a-second cap; the lag beyond which another provider answers.
	c, err = Load(env(map[string]string{"CHAIN_RPC_TRC20": "https://a.example/jsonrpc,https://api.trongrid.io/jsonrpc",
		"CHAIN_RPC_RATE_TRC20_2": "1.5", "CHAIN_RPC_MAX_LAG_TRC20": "4"}))
	require.NoError(t, err)
	require.Equal(t, []float64{0, 1.5}, []float64{c.Chain.Providers["trc20"][0].Rate, c.Chain.Providers["trc20"][1].Rate})
	require.Equal(t, map[string]uint64{"trc20": 4}, c.Chain.MaxLag)
	_, err = Load(env(map[string]string{"CHAIN_RPC_TRC20": "https://a.example", "CHAIN_RPC_RATE_TRC20_1": "fast"}))
	require.ErrorContains(t, err, "CHAIN_RPC_RATE_TRC20_1")
	_, err = Load(env(map[string]string{"CHAIN_RPC_TRC20": "https://a.example", "CHAIN_RPC_MAX_LAG_TRC20": "0"}))
	require.ErrorContains(t, err, "CHAIN_RPC_MAX_LAG_TRC20")

	_, err = Load(env(map[string]string{"CHAIN_RPC_BEP20": "https://a.example", "CHAIN_RPC_HEADERS_BEP20_1": "X-Key:secret-value"}))
	require.ErrorContains(t, err, "CHAIN_RPC_HEADERS_BEP20_1")
	require.NotContains(t, err.Error(), "secret-value")
	_, err = Load(env(map[string]string{"CHAIN_RPC_BEP20": "https://a.example/secret-key,bsc.example/secret-key"}))
	require.ErrorContains(t, err, "CHAIN_RPC_BEP20")
	require.NotContains(t, err.Error(), "secret-key", "a URL may hold a key")
	// A bad header names the setting, never the value (it may be a key).
	_, err = Load(env(map[string]string{"CHAIN_RPC_HEADERS_TRC20": "TRON-PRO-API-KEY:secret-value"}))
	require.ErrorContains(t, err, "CHAIN_RPC_HEADERS_TRC20")
	require.NotContains(t, err.Error(), "secret-value")
	for key, val := range map[string]string{"TOKEN_CONTRACTS": "usdt:bep20=nope/18", "CHAIN_POLL_INTERVAL": "0s",
		"CHAIN_RPC_TRC20": "tron.example", "CHAIN_START_BLOCK_TRC20": "-3", "CHAIN_RPC_BEP20": "https://ok.example,ftp://bsc.example",
		"CHAIN_FINALITY_BEP20": "soon",
		"CHAIN_RPC_TIMEOUT":    "soon", "CHAIN_ID_BEP20": "bsc", "CHAIN_RPC_HEADERS_BEP20": "=x"} {
		_, err := Load(env(map[string]string{key: val}))
		require.ErrorContains(t, err, key, "%s=%s", key, val)
	}
}

func TestBadSettingsAreNamed(t *testing.T) {
	t.Parallel()
	for key, val := range map[string]string{
		"APP_ENV": "dev", "DATABASE_URL": "mysql://x", "QUOTE_SPREAD": "1.5", "PAIRS": "usdt:bep20",
		"RATE_MAX_AGE": "-1s", "STATIC_RATES": "usdt=abc", "RATE_SOURCE": "magic", "PARTNER_FEE_RATE": "x",
		"XPUB_BEP20": "xpub-garbage", "CURSOR_SECRET": "short",
	} {
		_, err := Load(env(map[string]string{key: val}))
		require.ErrorContains(t, err, key, "%s=%s", key, val)
	}
}

// A job running past JOB_RESCUE_AFTER is taken for dead and retried: the setting
// defaults to the delivery timeout plus a margin (not River's hour) and must exceed
// the job timeout, or a live delivery would run twice at once.
func TestJobRescueAfter(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, 40*time.Second, c.JobRescueAfter)
	require.Greater(t, c.JobRescueAfter, jobs.DeliveryTimeout)
	c, err = Load(env(map[string]string{"JOB_RESCUE_AFTER": "26s"}))
	require.NoError(t, err)
	require.Equal(t, 26*time.Second, c.JobRescueAfter)
	for _, bad := range []string{"25s", "10s", "0s", "soon"} {
		_, err := Load(env(map[string]string{"JOB_RESCUE_AFTER": bad}))
		require.ErrorContains(t, err, "JOB_RESCUE_AFTER", bad)
	}
}

// TRUSTED_PROXIES: none by default; CIDRs and bare addresses read; nonsense refused.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Empty(t, c.TrustedProxies)
	c, err = Load(env(map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1"}))
	require.NoError(t, err)
	require.Len(t, c.TrustedProxies, 2)
	_, err = Load(env(map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8,proxy.local"}))
	require.ErrorContains(t, err, "TRUSTED_PROXIES")
}
