package httpkit

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"
)

// Proxies are the networks of the proxies in front of the service whose
// forwarding headers are believed (TRUSTED_PROXIES). Without them, the client is
// the peer and X-Forwarded-For and Forwarded are ignored: any client can write
// them, so believing them would let a stranger choose the address a limit counts.
type Proxies []netip.Prefix

// ParseProxies reads a comma-separated list of CIDRs (a bare address is a /32
// or /128); "" is none.
func ParseProxies(s string) (Proxies, error) {
	var p Proxies
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !strings.Contains(item, "/") {
			a, err := netip.ParseAddr(item)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR or an address", item)
			}
			p = append(p, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		pr, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR", item)
		}
		p = append(p, pr.Masked())
	}
	return p, nil
}

func (p Proxies) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, pr := range p {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// The forwarding headers TRUSTED_PROXY_HEADER may name.
const (
	// HeaderXForwardedFor is what nginx ($proxy_add_x_forwarded_for) and Go's
	// httputil.ReverseProxy append to: the default.
	HeaderXForwardedFor = "X-Forwarded-For"
	// HeaderForwarded (RFC 7239) is read only when named: a proxy that appends
	// X-Forwarded-For passes a client's own Forwarded through untouched.
	HeaderForwarded = "Forwarded"
)

// ParseProxyHeader reads TRUSTED_PROXY_HEADER: the one forwarding header the
// trusted proxies write ("" is X-Forwarded-For).
func ParseProxyHeader(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "x-forwarded-for":
		return HeaderXForwardedFor, nil
	case "forwarded":
		return HeaderForwarded, nil
	}
	return "", fmt.Errorf("%q: want X-Forwarded-For or Forwarded", s)
}

// ClientIP is r's client address read from X-Forwarded-For (ClientIPFrom).
func (p Proxies) ClientIP(r *http.Request) string { return p.ClientIPFrom(r, HeaderXForwardedFor) }

// ClientIPFrom is r's client address: the peer, unless the peer is a trusted
// proxy; then the chain of the one header the proxies write (header:
// X-Forwarded-For or Forwarded's for=; the other is ignored, whatever a client
// wrote in it) read right to left, skipping trusted proxies, to the first
// address that is not one (an entry that is not an address stops the walk at
// the last proxy reached: it was written by someone untrusted). Entries left of
// that address are the client's own words, never read.
func (p Proxies) ClientIPFrom(r *http.Request, header string) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || len(p) == 0 || !p.trusted(peer) {
		return host
	}
	chain := forwardedFor(r.Header, header)
	cur := peer.Unmap()
	for i := len(chain) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(chain[i])
		if err != nil {
			break
		}
		cur = a.Unmap()
		if !p.trusted(cur) {
			break
		}
	}
	return cur.String()
}

// forwardedFor is the chain of client addresses header names, left (the first
// client) to right (the last proxy's peer).
func forwardedFor(h http.Header, header string) []string {
	var out []string
	if header == HeaderForwarded {
		for _, line := range h.Values(HeaderForwarded) {
			for _, elem := range strings.Split(line, ",") {
				for _, pair := range strings.Split(elem, ";") {
					k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
					if !ok || !strings.EqualFold(k, "for") {
						continue
					}
					v = strings.Trim(v, `"`)
					if strings.HasPrefix(v, "[") { // [v6]:port
						if end := strings.Index(v, "]"); end > 0 {
							v = v[1:end]
						}
					} else if host, _, err := net.SplitHostPort(v); err == nil {
						v = host
					}
					out = append(out, v)
				}
			}
		}
		return out
	}
	for _, line := range h.Values(HeaderXForwardedFor) {
		for _, item := range strings.Split(line, ",") {
			out = append(out, strings.TrimSpace(item))
		}
	}
	return out
}

// IPExtractor is Echo's client address (c.RealIP) by ClientIPFrom header.
func (p Proxies) IPExtractor(header string) echo.IPExtractor {
	return func(r *http.Request) string { return p.ClientIPFrom(r, header) }
}

type clientAddrKey struct{}

// ClientAddress stores each request's client address (Echo's RealIP, so
// ClientIP of the server's proxies) in its context, for handlers mounted on the
// server that are not Echo's own (the web sites): ClientAddrOf reads it.
func ClientAddress(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), clientAddrKey{}, c.RealIP())))
		return next(c)
	}
}

// ClientAddrOf is r's client address as ClientAddress stored it, else the peer.
func ClientAddrOf(r *http.Request) string {
	if a, ok := r.Context().Value(clientAddrKey{}).(string); ok && a != "" {
		return a
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
