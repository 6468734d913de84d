package safeurl

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestIsPublic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ip   string
		want bool
	}{
		// Public.
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"9.9.9.9", true},
		{"11.0.0.1", true},
		{"100.63.255.255", true},
		{"100.128.0.0", true},
		{"169.253.255.255", true},
		{"172.15.255.255", true},
		{"172.32.0.0", true},
		{"192.0.1.1", true},
		{"192.167.255.255", true},
		{"198.17.255.255", true},
		{"198.20.0.0", true},
		{"223.255.255.254", true},
		{"2606:4700:4700::1111", true},
		{"2001:4860:4860::8888", true},
		{"2a00:1450:4001:81b::200e", true},
		{"::ffff:8.8.8.8", true},
		{"64:ff9b::808:808", true},     // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},      // 6to4 of 8.8.8.8
		{"2002:101:101:1::1234", true}, // 6to4 of 1.1.1.1
		{"2001:200::1", true},          // just past 2001::/23
		{"3fff:1000::1", true},         // just past 3fff::/20
		{"2620:4f:8000::1", true},      // AS112 anycast, globally reachable
		{"2001:db9::1", true},          // just past documentation range
		{"2c0f:fb50:4003::1", true},    // end of 2000::/3 allocations in use
		{"2400:cb00:2048:1::c629:d7a2", true},

		// IPv4 non-public.
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.0.0.0", false},
		{"10.255.255.255", false},
		{"100.64.0.1", false},
		{"100.127.255.255", false},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"169.254.0.1", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.0.0.1", false},
		{"192.0.0.170", false},
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"192.168.0.1", false},
		{"192.168.255.255", false},
		{"198.18.0.1", false},
		{"198.19.255.255", false},
		{"198.51.100.1", false},
		{"203.0.113.1", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"254.1.2.3", false},
		{"255.255.255.255", false},

		// IPv6 non-public.
		{"::", false},
		{"::1", false},
		{"fc00::1", false},
		{"fd12:3456:789a::1", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"febf:ffff::1", false},
		{"fec0::1", false},                              // deprecated site-local
		{"ff02::1", false},                              // link-local multicast
		{"ff0e::1", false},                              // global multicast
		{"100::1", false},                               // discard-only
		{"2001:db8::1", false},                          // documentation
		{"2001:db8:ffff::1", false},                     // documentation
		{"3fff::1", false},                              // documentation (RFC 9637)
		{"2001::1", false},                              // Teredo
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false}, // Teredo
		{"2001:2::1", false},                            // benchmarking
		{"2001:10::1", false},                           // ORCHID
		{"4000::1", false},                              // outside 2000::/3
		{"::127.0.0.1", false},                          // IPv4-compatible (deprecated)
		{"::8.8.8.8", false},                            // IPv4-compatible (deprecated)
		{"::ffff:0:808:808", false},                     // IPv4-translated
		{"2606:4700::1%eth0", false},                    // zoned: scoped to a link

		// IPv4-mapped IPv6 of blocked IPv4.
		{"::ffff:0.0.0.0", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:100.64.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:172.16.0.1", false},
		{"::ffff:192.168.1.1", false},
		{"::ffff:198.18.0.1", false},
		{"::ffff:224.0.0.1", false},
		{"::ffff:255.255.255.255", false},

		// NAT64 of blocked IPv4, and the local-use NAT64 prefix.
		{"64:ff9b::7f00:1", false},    // 127.0.0.1
		{"64:ff9b::a00:1", false},     // 10.0.0.1
		{"64:ff9b::a9fe:a9fe", false}, // 169.254.169.254
		{"64:ff9b::c0a8:101", false},  // 192.168.1.1
		{"64:ff9b::6440:1", false},    // 100.64.0.1
		{"64:ff9b::", false},          // 0.0.0.0
		{"64:ff9b:1::808:808", false}, // local-use NAT64 (RFC 8215)

		// 6to4 of blocked IPv4.
		{"2002:7f00:1::1", false},    // 127.0.0.1
		{"2002:a00:1::1", false},     // 10.0.0.1
		{"2002:a9fe:a9fe::", false},  // 169.254.169.254
		{"2002:c0a8:101::1", false},  // 192.168.1.1
		{"2002::1", false},           // 0.0.0.0
		{"2002:e000:1::1", false},    // 224.0.0.1
		{"2002:ffff:ffff::1", false}, // 255.255.255.255
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, IsPublic(netip.MustParseAddr(tt.ip)))
		})
	}

	t.Run("zero Addr", func(t *testing.T) {
		t.Parallel()
		require.False(t, IsPublic(netip.Addr{}))
	})
}

func TestCheckSyntaxAndLiteralIPs(t *testing.T) {
	t.Parallel()
	const (
		ok       = ""
		notIP    = "host is not a public address"
		httpsReq = "scheme must be https"
		badHost  = "host is not a valid hostname or IP address"
	)
	longOK := "https://8.8.8.8/" + strings.Repeat("a", MaxURLLength-len("https://8.8.8.8/"))
	prod := Policy{RequireHTTPS: true}
	prodHTTP := Policy{}
	staging := Policy{AllowPrivate: true}
	stagingHTTPS := Policy{AllowPrivate: true, RequireHTTPS: true}

	tests := []struct {
		name   string
		policy Policy
		raw    string
		want   string // "" means allowed; otherwise a substring of the refusal
	}{
		{"prod public v4", prod, "https://8.8.8.8/hooks", ok},
		{"prod public v6", prod, "https://[2606:4700:4700::1111]:8443/hooks?x=1", ok},
		{"prod loopback", prod, "https://127.0.0.1/x", notIP},
		{"prod loopback v6", prod, "https://[::1]/", notIP},
		{"prod private", prod, "https://10.0.0.5", notIP},
		{"prod metadata", prod, "https://169.254.169.254/latest/meta-data", notIP},
		{"prod mapped loopback", prod, "https://[::ffff:127.0.0.1]/", notIP},
		{"prod NAT64 metadata", prod, "https://[64:ff9b::a9fe:a9fe]/", notIP},
		{"prod unspecified", prod, "https://0.0.0.0:8080/", notIP},
		{"prod zoned link-local", prod, "https://[fe80::1%25eth0]/", notIP},
		{"prod percent-encoded loopback", prod, "https://%31%32%37.0.0.1/", "not a valid URL"},
		{"prod http refused", prod, "http://8.8.8.8", httpsReq},
		{"prod ftp", prod, "ftp://8.8.8.8/x", httpsReq},
		{"prod localhost by name", prod, "https://localhost:8080/", notIP},
		{"prod sub.localhost by name", prod, "https://app.LOCALHOST./", notIP},

		{"http allowed without RequireHTTPS", prodHTTP, "http://8.8.8.8", ok},
		{"http private still refused", prodHTTP, "http://192.168.1.10:8080/", notIP},

		{"staging loopback", staging, "https://127.0.0.1/x", ok},
		{"staging loopback http", staging, "http://127.0.0.1:8080/x", ok},
		{"staging loopback v6", staging, "https://[::1]/", ok},
		{"staging private", staging, "https://10.0.0.5", ok},
		{"staging metadata", staging, "https://169.254.169.254/latest/meta-data", ok},
		{"staging zoned link-local", staging, "http://[fe80::1%25eth0]:9000/", ok},
		{"staging localhost", staging, "http://localhost:3000/webhook", ok},
		{"staging hostname not resolved", staging, "https://internal.example/hook", ok},
		{"staging https required", stagingHTTPS, "http://127.0.0.1", httpsReq},
		{"staging https loopback", stagingHTTPS, "https://127.0.0.1", ok},

		{"ftp", prodHTTP, "ftp://8.8.8.8/x", "scheme must be http or https"},
		{"javascript", staging, "javascript:alert(1)", "scheme must be http or https"},
		{"javascript prod", prod, "javascript:alert(1)", httpsReq},
		{"data", staging, "data:text/plain,hi", "scheme must be http or https"},
		{"file", staging, "file:///etc/passwd", "scheme must be http or https"},
		{"gopher", staging, "gopher://127.0.0.1:6379/_INFO", "scheme must be http or https"},
		{"upper-case scheme", prod, "HTTPS://8.8.8.8/", ok},

		{"userinfo", prod, "https://user:pass@8.8.8.8/", "user name or password"},
		{"user only", staging, "https://user@127.0.0.1/", "user name or password"},
		{"empty userinfo", prod, "https://@8.8.8.8/", "user name or password"},

		{"relative path", prod, "/hooks", "absolute URL"},
		{"relative host", prod, "example.com/hooks", "absolute URL"},
		{"scheme-relative", prod, "//8.8.8.8/hooks", "absolute URL"},
		{"empty", prod, "", "absolute URL"},
		{"leading space", prod, " https://8.8.8.8/", "not a valid URL"},
		{"no host", prod, "https:///path", "missing host"},
		{"port only", prod, "https://:443/", "missing host"},
		{"opaque", prod, "https:8.8.8.8", "missing host"},
		{"control char", prod, "https://8.8.8.8/\n", "not a valid URL"},
		{"backslash host", prod, `https://8.8.8.8\@127.0.0.1/`, "not a valid URL"},

		{"port zero", prod, "https://8.8.8.8:0/", "invalid port"},
		{"port too big", prod, "https://8.8.8.8:65536/", "invalid port"},
		{"port max", prod, "https://8.8.8.8:65535/", ok},

		{"decimal IPv4", staging, "http://2130706433/", badHost},
		{"short IPv4", staging, "http://127.1/", badHost},
		{"hex IPv4", staging, "http://0x7f.0.0.1/", badHost},
		{"hex last label", staging, "http://a.0x7f/", badHost},
		{"octal IPv4", prod, "https://010.8.8.8/", badHost},
		{"empty label", prod, "https://a..example/", badHost},
		{"non-ASCII", prod, "https://bücher.example/", badHost},
		{"long label", prod, "https://" + strings.Repeat("a", 64) + ".example/", badHost},

		{"max length", prod, longOK, ok},
		{"too long", prod, longOK + "a", "longer than 2048 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.policy.Resolver = noDNS(t)
			err := tt.policy.Check(context.Background(), tt.raw)
			if tt.want == ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrNotAllowed)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestCheckResolvesHostnames(t *testing.T) {
	t.Parallel()
	dns := newFakeDNS(t, map[string][]string{
		"public.example":       {"8.8.8.8"},
		"public6.example":      {"2606:4700:4700::1111"},
		"dual.example":         {"1.1.1.1", "2606:4700:4700::1111"},
		"internal.example":     {"10.1.2.3"},
		"metadata.example":     {"169.254.169.254"},
		"loop6.example":        {"::1"},
		"mapped.example":       {"::ffff:127.0.0.1"},
		"nat64.example":        {"64:ff9b::a00:1"},
		"mixed.example":        {"8.8.8.8", "192.168.0.10"},
		"mixed6.example":       {"8.8.8.8", "fd00::1"},
		"empty.example":        {},
		"under_score.example":  {"8.8.8.8"},
		"trailing-dot.example": {"1.1.1.1"},
	})
	prod := Policy{RequireHTTPS: true, Resolver: dns.resolver()}

	tests := []struct {
		raw  string
		want string // "" means allowed
	}{
		{"https://public.example/hooks", ""},
		{"https://PUBLIC.example:8443/hooks", ""},
		{"https://public6.example/", ""},
		{"https://dual.example/", ""},
		{"https://under_score.example/", ""},
		{"https://trailing-dot.example./", ""},
		{"https://internal.example", "host resolves to a non-public address"},
		{"https://internal.example/hooks", "host resolves to a non-public address"},
		{"https://metadata.example/latest/meta-data", "host resolves to a non-public address"},
		{"https://loop6.example/", "host resolves to a non-public address"},
		{"https://mapped.example/", "host resolves to a non-public address"},
		{"https://nat64.example/", "host resolves to a non-public address"},
		{"https://mixed.example/", "host resolves to a non-public address"},
		{"https://mixed6.example/", "host resolves to a non-public address"},
		{"https://empty.example/", "host could not be resolved"},
		{"https://nowhere.example/", "host could not be resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			t.Parallel()
			err := prod.Check(context.Background(), tt.raw)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrNotAllowed)
			require.Equal(t, "URL not allowed: "+tt.want, err.Error())
			// Nothing internal leaks into a message shown to partners.
			for _, secret := range []string{"10.1.2.3", "169.254", "127.0.0.1", "192.168", "fd00", "::1", "no such host", "lookup"} {
				require.NotContains(t, err.Error(), secret)
			}
		})
	}

	t.Run("staging does not resolve", func(t *testing.T) {
		t.Parallel()
		// Its own server: the other subtests query the shared one meanwhile.
		own := newFakeDNS(t, map[string][]string{"internal.example": {"10.1.2.3"}})
		staging := Policy{AllowPrivate: true, Resolver: own.resolver()}
		require.NoError(t, staging.Check(context.Background(), "https://internal.example/"))
		require.NoError(t, staging.Check(context.Background(), "https://nowhere.example/"))
		require.Zero(t, own.queries.Load())
	})

	t.Run("cancelled context is not a refusal", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := prod.Check(ctx, "https://public.example/")
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, ErrNotAllowed)
	})
}

// newCountingServer starts a 127.0.0.1 httptest server that counts requests per path;
// "/redirect" answers 302 to "/target".
func newCountingServer(t *testing.T) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var hits, targetHits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/target", http.StatusFound)
		case "/target":
			targetHits.Add(1)
			_, _ = io.WriteString(w, "target")
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits, &targetHits
}

func TestClientDialCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		policy  Policy
		byName  bool // request http://partner.example:PORT/ instead of the IP URL
		allowed bool
	}{
		{"production refuses loopback IP", Policy{}, false, false},
		{"production with https refuses loopback IP", Policy{RequireHTTPS: true}, false, false},
		{"production refuses name resolving to loopback", Policy{}, true, false},
		{"staging connects to loopback IP", Policy{AllowPrivate: true}, false, true},
		{"staging connects by name", Policy{AllowPrivate: true}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, hits, _ := newCountingServer(t)
			target := srv.URL + "/hook"
			tt.policy.Resolver = noDNS(t)
			if tt.byName {
				_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
				require.NoError(t, err)
				dns := newFakeDNS(t, map[string][]string{"partner.example": {"127.0.0.1"}})
				tt.policy.Resolver = dns.resolver()
				target = "http://partner.example:" + port + "/hook"
			}

			resp, err := tt.policy.Client(5 * time.Second).Get(target)
			if !tt.allowed {
				require.ErrorIs(t, err, ErrNotAllowed)
				require.Zero(t, hits.Load(), "a refused connection must never reach the server")
				return
			}
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "ok", string(body))
			require.EqualValues(t, 1, hits.Load())
		})
	}
}

// TestClientDefeatsDNSRebinding registers a hostname while it resolves to a public
// address, then lets it rebind to loopback before delivery: the dial-time check must
// refuse the connection even though Check accepted the URL.
func TestClientDefeatsDNSRebinding(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)

	dns := newFakeDNS(t, map[string][]string{"rebind.example": {"8.8.8.8"}})
	p := Policy{Resolver: dns.resolver()}
	raw := "http://rebind.example:" + port + "/hook"
	require.NoError(t, p.Check(context.Background(), raw))

	dns.set("rebind.example", "127.0.0.1")
	_, err = p.Client(5 * time.Second).Get(raw)
	require.ErrorIs(t, err, ErrNotAllowed)
	require.Zero(t, hits.Load())
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	srv, _, targetHits := newCountingServer(t)

	resp, err := Policy{AllowPrivate: true}.Client(5 * time.Second).Get(srv.URL + "/redirect")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Equal(t, "/target", resp.Header.Get("Location"))
	require.Zero(t, targetHits.Load())
}

func TestClientConfiguration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		policy      Policy
		timeout     time.Duration
		wantTimeout time.Duration
	}{
		{"production", Policy{RequireHTTPS: true}, 7 * time.Second, 7 * time.Second},
		{"staging", Policy{AllowPrivate: true}, time.Minute, time.Minute},
		{"zero timeout gets default", Policy{}, 0, defaultTimeout},
		{"negative timeout gets default", Policy{}, -time.Second, defaultTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.policy.Client(tt.timeout)
			require.Equal(t, tt.wantTimeout, c.Timeout)
			require.NotNil(t, c.CheckRedirect)
			tr, ok := c.Transport.(*http.Transport)
			require.True(t, ok)
			require.Nil(t, tr.Proxy, "no proxy from the environment")
			require.NotNil(t, tr.DialContext)
			require.Nil(t, tr.DialTLSContext)
		})
	}
}

func TestRefuseNonPublic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		address string
		allowed bool
	}{
		{"8.8.8.8:443", true},
		{"[2606:4700:4700::1111]:443", true},
		{"127.0.0.1:80", false},
		{"[::1]:80", false},
		{"[::ffff:10.0.0.1]:80", false},
		{"169.254.169.254:80", false},
		{"[fe80::1%eth0]:80", false},
		{"not-an-address", false},
		{"example.com:443", false},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			t.Parallel()
			err := refuseNonPublic("tcp", tt.address, nil)
			if tt.allowed {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrNotAllowed)
			require.NotContains(t, err.Error(), tt.address)
		})
	}
}
