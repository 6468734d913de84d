// Package safeurl guards the webhook URLs partners register and the HTTP client that
// delivers events to them. Our server makes those requests from inside our network, so
// a URL pointing at an internal address (a database, a cloud metadata endpoint, an
// admin port) would let a partner reach what only we should reach (SSRF).
//
// The defence has two layers. Check refuses such URLs when they are registered, with
// a message the partner can act on. Client re-checks every address it actually
// connects to, because a hostname that resolved to a public address at registration
// can resolve to an internal one at delivery time (DNS rebinding); only the dial-time
// check sees the address really used.
package safeurl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxURLLength is the longest URL Check accepts, so a stored webhook URL stays a
// reasonable size for the database, logs and the request line of every delivery.
const MaxURLLength = 2048

// defaultTimeout replaces a non-positive timeout given to Client: a delivery that can
// hang forever would tie up a worker on a partner that never answers.
const defaultTimeout = 30 * time.Second

// ErrNotAllowed is wrapped by every refusal, from Check and from a Client dial, so
// callers can tell "this URL or address is not acceptable" (a partner error, not worth
// retrying) from transient failures with errors.Is.
var ErrNotAllowed = errors.New("URL not allowed")

// ErrMalformed is wrapped, besides ErrNotAllowed, by a refusal of text that is
// not an absolute http(s) URL with a valid host at all (a request error, 400),
// as opposed to a well-formed URL this environment does not accept (private,
// http in production: 422).
var ErrMalformed = errors.New("malformed")

// malformed returns a refusal wrapping ErrNotAllowed and ErrMalformed.
func malformed(reason string) error {
	return fmt.Errorf("%w: %w", refuse(reason), ErrMalformed)
}

// refuse returns a refusal wrapping ErrNotAllowed. The reason must be fixed text: it
// is shown to partners, so it never carries resolved addresses or resolver errors.
func refuse(reason string) error {
	return fmt.Errorf("%w: %s", ErrNotAllowed, reason)
}

// Policy says which URLs are acceptable, so production and staging can share the same
// code with different settings. The zero value is the strict production policy minus
// the HTTPS requirement.
type Policy struct {
	// AllowPrivate accepts any host, loopback and private addresses included, and
	// turns off the dial-time address check. Staging sets it so partners can point
	// webhooks at servers on their own machines; production must not.
	AllowPrivate bool
	// RequireHTTPS refuses plain http URLs, so event payloads are never sent in the
	// clear. Production sets it.
	RequireHTTPS bool
	// Resolver resolves hostnames for Check and for Client's dialer; nil means
	// net.DefaultResolver. It exists so the resolution path can be pointed elsewhere
	// (a specific DNS server, or a fake one in tests).
	Resolver *net.Resolver
}

func (p Policy) resolver() *net.Resolver {
	if p.Resolver != nil {
		return p.Resolver
	}
	return net.DefaultResolver
}

// Check validates a webhook URL when a partner registers it, so a bad URL is refused
// up front with an explanation instead of failing every delivery later. The URL must
// be absolute, use http or https (only https when RequireHTTPS), name a host, carry no
// user name or password, and be at most MaxURLLength bytes. Unless AllowPrivate, the
// host must be public: a literal IP is checked directly, and a hostname is resolved
// and every address it resolves to must be public.
//
// A refusal wraps ErrNotAllowed and its message is safe to show the partner: it says
// what is wrong without echoing resolved addresses or resolver errors. If ctx ends
// while resolving, the error wraps ctx.Err() instead, since the URL was not judged.
func (p Policy) Check(ctx context.Context, raw string) error {
	if len(raw) > MaxURLLength {
		return malformed("longer than " + strconv.Itoa(MaxURLLength) + " characters")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return malformed("not a valid URL")
	}
	if !u.IsAbs() {
		return malformed("must be an absolute URL starting with https://")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if p.RequireHTTPS {
			return refuse("scheme must be https")
		}
	default:
		if p.RequireHTTPS {
			return refuse("scheme must be https")
		}
		return malformed("scheme must be http or https")
	}
	if u.User != nil {
		return refuse("must not contain a user name or password")
	}
	host := u.Hostname()
	if u.Opaque != "" || host == "" {
		return malformed("missing host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return malformed("invalid port")
		}
	}

	addr, err := netip.ParseAddr(host)
	isIP := err == nil
	if !isIP && !validHostname(host) {
		return malformed("host is not a valid hostname or IP address")
	}
	if p.AllowPrivate {
		return nil
	}
	if isIP {
		if !IsPublic(addr) {
			return refuse("host is not a public address")
		}
		return nil
	}
	if isLocalhost(host) {
		return refuse("host is not a public address")
	}

	addrs, err := p.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("URL check interrupted: %w", ctxErr)
		}
		return refuse("host could not be resolved")
	}
	if len(addrs) == 0 {
		return refuse("host could not be resolved")
	}
	for _, a := range addrs {
		if !IsPublic(a) {
			return refuse("host resolves to a non-public address")
		}
	}
	return nil
}

// validHostname reports whether host is a plain ASCII DNS name. It is strict on
// purpose: names that different resolvers interpret differently (numeric forms such
// as "127.1" or "2130706433" that C resolvers read as IPv4, non-ASCII names, empty
// labels) are refused so that what Check judged is what the dialer connects to.
func validHostname(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > 253 {
		return false
	}
	labels := strings.Split(host, ".")
	for _, label := range labels {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			default:
				return false
			}
		}
	}
	return !numericLabel(labels[len(labels)-1])
}

// numericLabel reports whether a final label looks like part of an IPv4 address
// (decimal digits, or 0x-prefixed hex), which no real top-level domain does.
func numericLabel(label string) bool {
	if rest, ok := strings.CutPrefix(strings.ToLower(label), "0x"); ok {
		label = rest
		for i := 0; i < len(label); i++ {
			if !strings.ContainsRune("0123456789abcdef", rune(label[i])) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(label); i++ {
		if label[i] < '0' || label[i] > '9' {
			return false
		}
	}
	return true
}

// isLocalhost reports whether host is "localhost" or a subdomain of it, which RFC 6761
// reserves for loopback; refusing it by name avoids relying on a hosts file.
func isLocalhost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// Client returns the *http.Client to deliver webhooks with, configured so a delivery
// cannot be steered somewhere the policy forbids:
//
//   - timeout bounds each whole request (a non-positive value means 30s), so a slow
//     partner cannot hold a worker indefinitely;
//   - redirects are not followed: the redirect response itself is returned, because
//     following one would reach a URL that was never checked;
//   - no proxy is taken from the environment, so deliveries connect directly and the
//     dial-time check applies to the partner's address;
//   - unless AllowPrivate, the dialer refuses, at connect time, any address that is
//     not public (the error wraps ErrNotAllowed). This is what defeats DNS rebinding:
//     the check runs on the address actually dialed, after resolution.
//
// The client does not re-check the scheme; URLs are expected to have passed Check.
func (p Policy) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	dialer := &net.Dialer{
		Timeout:   min(timeout, 10*time.Second),
		KeepAlive: 30 * time.Second,
		Resolver:  p.Resolver,
	}
	if !p.AllowPrivate {
		dialer.Control = refuseNonPublic
	}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// refuseNonPublic is the dialer's Control function: it runs after name resolution,
// just before each connect, with the numeric address about to be dialed, and refuses
// it unless it is public.
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !IsPublic(ap.Addr()) {
		return refuse("connection to a non-public address refused")
	}
	return nil
}

// Address ranges that are never public. IPv4-mapped IPv6 addresses are unwrapped
// before these are consulted, and NAT64 and 6to4 addresses are judged by the IPv4
// address they embed.
var (
	blockedV4 = mustPrefixes(
		"0.0.0.0/8",          // "this network", unspecified
		"10.0.0.0/8",         // private
		"100.64.0.0/10",      // carrier-grade NAT
		"127.0.0.0/8",        // loopback
		"169.254.0.0/16",     // link-local, cloud metadata
		"172.16.0.0/12",      // private
		"192.0.0.0/24",       // IETF protocol assignments
		"192.0.2.0/24",       // documentation (TEST-NET-1)
		"192.88.99.0/24",     // deprecated 6to4 relay anycast
		"192.168.0.0/16",     // private
		"198.18.0.0/15",      // benchmarking
		"198.51.100.0/24",    // documentation (TEST-NET-2)
		"203.0.113.0/24",     // documentation (TEST-NET-3)
		"224.0.0.0/4",        // multicast
		"240.0.0.0/4",        // reserved, includes broadcast
		"255.255.255.255/32", // limited broadcast
	)
	// globalUnicastV6 is the only IPv6 block allocated for global unicast; anything
	// outside it (loopback, unspecified, IPv4-compatible, ULA, link-local, site-local,
	// multicast, discard-only, local-use NAT64, ...) is not public.
	globalUnicastV6 = netip.MustParsePrefix("2000::/3")
	blockedV6       = mustPrefixes(
		"2001::/23",     // IETF protocol assignments, including Teredo 2001::/32
		"2001:db8::/32", // documentation
		"3fff::/20",     // documentation (RFC 9637)
	)
	nat64V6   = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64 prefix
	sixToFour = netip.MustParsePrefix("2002::/16")    // 6to4
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// IsPublic reports whether ip is a public unicast address, one our server may
// connect to on a partner's behalf. It is the single definition both Check and the
// delivery dialer use. Not public: loopback, private (10/8, 172.16/12, 192.168/16,
// fc00::/7), link-local (169.254/16, fe80::/10), unspecified, multicast, broadcast,
// CGNAT 100.64/10, 0/8, and the IETF, documentation, benchmarking and reserved
// ranges, in IPv4 or IPv6. IPv4-mapped IPv6 (::ffff:a.b.c.d) is unwrapped first;
// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are public only if the IPv4
// address they embed is; Teredo (2001::/32), whose endpoint is obscured, never is.
// Addresses with a zone are scoped to a local link and so never public.
func IsPublic(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return publicV4(ip)
	}
	switch {
	case nat64V6.Contains(ip):
		b := ip.As16()
		return publicV4(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(ip):
		b := ip.As16()
		return publicV4(netip.AddrFrom4([4]byte(b[2:6])))
	}
	if !globalUnicastV6.Contains(ip) || inAny(blockedV6, ip) {
		return false
	}
	return commonPublic(ip)
}

func publicV4(ip netip.Addr) bool {
	return !inAny(blockedV4, ip) && commonPublic(ip)
}

// commonPublic repeats the standard library's classification as a second line of
// defence behind the explicit range lists.
func commonPublic(ip netip.Addr) bool {
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !ip.IsLoopback() &&
		!ip.IsLinkLocalUnicast() && !ip.IsMulticast() && !ip.IsUnspecified()
}

func inAny(prefixes []netip.Prefix, ip netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
