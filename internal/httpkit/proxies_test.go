package httpkit_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"partnerd/internal/httpkit"
)

// The client address comes from the forwarding headers only through trusted
// proxies, read right to left; without TRUSTED_PROXIES the headers are ignored.
func TestClientIP(t *testing.T) {
	t.Parallel()
	p, err := httpkit.ParseProxies("10.0.0.0/8, 192.168.1.7, ::1")
	require.NoError(t, err)
	_, err = httpkit.ParseProxies("10.0.0.0/33")
	require.Error(t, err)
	for _, c := range []struct {
		name, peer string
		headers    map[string]string
		proxies    httpkit.Proxies
		want       string
	}{
		{"no proxies: the header is ignored", "10.1.1.1:5000", map[string]string{"X-Forwarded-For": "1.2.3.4"}, nil, "10.1.1.1"},
		{"untrusted peer: ignored", "8.8.8.8:5000", map[string]string{"X-Forwarded-For": "1.2.3.4"}, p, "8.8.8.8"},
		{"trusted peer", "10.1.1.1:5000", map[string]string{"X-Forwarded-For": "1.2.3.4"}, p, "1.2.3.4"},
		{"a forged left entry is not believed", "10.1.1.1:5000", map[string]string{"X-Forwarded-For": "6.6.6.6, 1.2.3.4, 10.2.2.2"}, p, "1.2.3.4"},
		{"garbage stops at the last proxy", "10.1.1.1:5000", map[string]string{"X-Forwarded-For": "1.2.3.4, nonsense"}, p, "10.1.1.1"},
		{"all trusted: the leftmost", "192.168.1.7:1", map[string]string{"X-Forwarded-For": "10.9.9.9"}, p, "10.9.9.9"},
		{"a client's Forwarded is never read by default", "10.1.1.1:1", map[string]string{"Forwarded": "for=1.1.1.1", "X-Forwarded-For": "2.2.2.2"}, p, "2.2.2.2"},
		{"a client's Forwarded alone: the peer", "10.1.1.1:1", map[string]string{"Forwarded": "for=1.1.1.1"}, p, "10.1.1.1"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.peer
		for k, v := range c.headers {
			r.Header.Set(k, v)
		}
		require.Equal(t, c.want, c.proxies.ClientIP(r), c.name)
	}
}

// With TRUSTED_PROXY_HEADER=Forwarded only Forwarded is read, the same way; a
// client's X-Forwarded-For is ignored.
func TestClientIPFromForwarded(t *testing.T) {
	t.Parallel()
	p, err := httpkit.ParseProxies("10.0.0.0/8, ::1")
	require.NoError(t, err)
	h, err := httpkit.ParseProxyHeader("forwarded")
	require.NoError(t, err)
	require.Equal(t, httpkit.HeaderForwarded, h)
	_, err = httpkit.ParseProxyHeader("X-Real-IP")
	require.Error(t, err)
	for _, c := range []struct {
		name, peer string
		headers    map[string]string
		want       string
	}{
		{"v6 with a port", "[::1]:80", map[string]string{"Forwarded": `for=6.6.6.6, for="[2001:db8::1]:4711";proto=https`}, "2001:db8::1"},
		{"a forged left entry is not believed", "10.1.1.1:1", map[string]string{"Forwarded": "for=6.6.6.6, for=1.1.1.1"}, "1.1.1.1"},
		{"X-Forwarded-For ignored", "10.1.1.1:1", map[string]string{"X-Forwarded-For": "2.2.2.2"}, "10.1.1.1"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.peer
		for k, v := range c.headers {
			r.Header.Set(k, v)
		}
		require.Equal(t, c.want, p.ClientIPFrom(r, h), c.name)
	}
}
