package config

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Names lists every setting Load reads, including the ones read only on one side
// of a choice (the rate feed's, the screeners', a network's per-provider ones)
// and the ones named after the configured networks.
func TestNames(t *testing.T) {
	t.Parallel()
	names := Names(env(nil))
	for _, n := range []string{
		"APP_ENV", "DATABASE_URL", "LISTEN_ADDR", "PUBLIC_URL", "LIQUIDITY", "PAYOUT", "STATIC_RATES", "RATE_FEED_URL",
		"RATE_FEED_FIELDS", "SCREENING_ORACLE_BEP20", "SCREENING_API_KEY", "XPUB_BEP20", "XPUB_TRC20", "CHAIN_RPC_TRC20",
		"CHAIN_RPC_HEADERS_BEP20_1", "CHAIN_RPC_RATE_TRC20_1", "CHAIN_START_BLOCK_BEP20", "OTEL_SERVICE_NAME",
	} {
		require.Contains(t, names, n)
	}
	require.NotContains(t, names, "XPUB_ERC20")
	require.NotContains(t, names, "CHAIN_RPC_HEADERS_BEP20_2", "one provider configured")

	// A network of PAIRS names its own settings; a second provider its own.
	names = Names(env(map[string]string{"PAIRS": "usdt:erc20:1000:50000000", "CHAIN_RPC_BEP20": "http://a,http://b"}))
	require.Contains(t, names, "XPUB_ERC20")
	require.NotContains(t, names, "XPUB_BEP20")
}

// NearMisses names a variable spelt almost like a setting, with the setting,
// and leaves alone the settings, what does not look like one, the system's
// variables and the names far from every setting.
func TestNearMisses(t *testing.T) {
	t.Parallel()
	names := Names(env(nil))
	got := NearMisses([]string{
		"LIQUIDTY=operator",         // a letter left out
		"DATABSAE_URL=postgres://x", // two letters swapped
		"PAYOTU=operator",           // swapped, in a short name
		"XPUB_BEP2=xpub",            // a letter left out of a network's setting
		"LIQUIDITY=operator", "PATH=/bin", "HOME=/root", "GOPATH=/go", "LC_ALL=C",
		"liquidty=operator", // not a setting's kind of name
		"PAY=1",             // far: three edits from PAYOUT
		"TEST_DATABASE_URL=postgres://x", "MY_OWN_THING=1", "=C:=C:\\",
	}, names)
	require.Equal(t, []NearMiss{
		{"DATABSAE_URL", "DATABASE_URL"}, {"LIQUIDTY", "LIQUIDITY"}, {"PAYOTU", "PAYOUT"}, {"XPUB_BEP2", "XPUB_BEP20"},
	}, got)
	require.Empty(t, NearMisses([]string{"PAYOUTSX=1", "SHELL=/bin/sh", "TERM=xterm"}, names), "two edits from a short name")
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"ABC", "ABC", 0}, {"LIQUIDTY", "LIQUIDITY", 1}, {"AB", "BA", 1}, {"PAYOUT", "PAY", 3},
		{"KITTEN", "SITTING", 3}, {"CA", "ABC", 3},
	} {
		require.Equal(t, c.want, editDistance(c.a, c.b), "%s %s", c.a, c.b)
		require.Equal(t, c.want, editDistance(c.b, c.a), "%s %s", c.b, c.a)
	}
}

// PUBLIC_URL is checked, required (and https) in production; unset in staging,
// links start at the listening address.
func TestPublicURL(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	require.NoError(t, err)
	require.Empty(t, c.PublicURL)
	require.Equal(t, "http://localhost:8080", c.LinkBase(nil), "the default LISTEN_ADDR, :8080")
	require.Equal(t, "http://localhost:41234", c.LinkBase(&net.TCPAddr{IP: net.IPv6unspecified, Port: 41234}), "the port bound")
	require.Equal(t, "http://127.0.0.1:41234", c.LinkBase(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 41234}), "the address bound")
	require.Equal(t, "http://[::1]:41234", c.LinkBase(&net.TCPAddr{IP: net.IPv6loopback, Port: 41234}))

	c, err = Load(env(map[string]string{"LISTEN_ADDR": "127.0.0.1:9090"}))
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:9090", c.LinkBase(nil))
	c, err = Load(env(map[string]string{"LISTEN_ADDR": "0.0.0.0:9090"}))
	require.NoError(t, err)
	require.Equal(t, "http://localhost:9090", c.LinkBase(nil))

	c, err = Load(env(map[string]string{"PUBLIC_URL": "https://sandbox.partnerd.example.com/"}))
	require.NoError(t, err)
	require.Equal(t, "https://sandbox.partnerd.example.com", c.PublicURL, "no trailing slash")
	require.Equal(t, c.PublicURL, c.LinkBase(&net.TCPAddr{Port: 1}))

	for _, bad := range []string{"partnerd.example.com", "ftp://partnerd.example.com", "https://", "https://a.example/?x=1", "https://u:p@a.example", "https://a.example/#f"} {
		_, err := Load(env(map[string]string{"PUBLIC_URL": bad}))
		require.ErrorContains(t, err, "PUBLIC_URL", bad)
	}
	_, err = Load(env(map[string]string{"LISTEN_ADDR": "8080"}))
	require.ErrorContains(t, err, "LISTEN_ADDR")

	prod := productionSettings()
	delete(prod, "PUBLIC_URL")
	_, err = Load(env(prod))
	require.ErrorContains(t, err, "PUBLIC_URL: production needs")
	prod["PUBLIC_URL"] = "http://partnerd.example.com"
	_, err = Load(env(prod))
	require.ErrorContains(t, err, "PUBLIC_URL")
	prod["PUBLIC_URL"] = "https://partnerd.example.com"
	c, err = Load(env(prod))
	require.NoError(t, err)
	require.Equal(t, "https://partnerd.example.com", c.LinkBase(nil))
}

// productionSettings are settings production starts with.
func productionSettings() map[string]string {
	return map[string]string{"APP_ENV": "production", "RATE_FEED_URL": "https://rates.example/ngn", "RATE_FEED_FIELDS": "usdt=data.usdt",
		"CHAIN_RPC_BEP20": "https://bsc.example/rpc", "CHAIN_RPC_TRC20": "https://tron.example/jsonrpc",
		"CURSOR_SECRET": "0123456789abcdef0123456789abcdef", "SECRETS_KEYS": "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"DATABASE_URL": "postgres://partnerd@db.internal/partnerd", "XPUB_BEP20": otherXPub, "XPUB_TRC20": otherXPub, "SCREENING": "list",
		"PUBLIC_URL": "https://partnerd.example.com"}
}

// Every setting is documented: in the configuration guide's table, or (the
// OTEL_* ones) in the operations guide; a network's settings as <NETWORK>, a
// provider's as <N>.
func TestEverySettingIsDocumented(t *testing.T) {
	t.Parallel()
	var docs string
	for _, f := range []string{"configuration.md", "operations.md"} {
		b, err := os.ReadFile(filepath.Join("..", "contract", "docs", "guide", f))
		require.NoError(t, err)
		docs += string(b)
	}
	generic := strings.NewReplacer("BEP20", "<NETWORK>", "TRC20", "<NETWORK>", "_1", "_<N>")
	for _, n := range Names(env(nil)) {
		documented := false
		for _, name := range []string{n, generic.Replace(n)} {
			documented = documented || strings.Contains(docs, "`"+name+"`") || strings.Contains(docs, "`"+name+"=")
		}
		if !documented {
			t.Errorf("%s is not documented in internal/contract/docs/guide/configuration.md", n)
		}
	}
}
