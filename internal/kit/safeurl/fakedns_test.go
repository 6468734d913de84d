package safeurl

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeDNS is a minimal authoritative DNS server on 127.0.0.1 (UDP) answering A and
// AAAA questions from an in-memory table, so resolution is exercised through a real
// net.Resolver without any query leaving the machine. Unknown names get NXDOMAIN.
type fakeDNS struct {
	conn    net.PacketConn
	mu      sync.Mutex
	records map[string][]netip.Addr // key: lower-case name without trailing dot
	queries atomic.Int64
}

func newFakeDNS(t *testing.T, records map[string][]string) *fakeDNS {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeDNS{conn: conn, records: map[string][]netip.Addr{}}
	for name, addrs := range records {
		f.set(name, addrs...)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.serve()
	}()
	t.Cleanup(func() {
		_ = conn.Close()
		<-done
	})
	return f
}

// set replaces the addresses name resolves to, e.g. to simulate DNS rebinding.
func (f *fakeDNS) set(name string, addrs ...string) {
	parsed := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		parsed[i] = netip.MustParseAddr(a)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records[strings.ToLower(name)] = parsed
}

// resolver returns a pure-Go resolver whose every connection goes to this server,
// whatever /etc/resolv.conf says.
func (f *fakeDNS) resolver() *net.Resolver {
	addr := f.conn.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", addr)
		},
	}
}

func (f *fakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := f.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		f.queries.Add(1)
		if resp := f.answer(buf[:n]); resp != nil {
			_, _ = f.conn.WriteTo(resp, from)
		}
	}
}

const (
	typeA    = 1
	typeAAAA = 28
	classIN  = 1
)

// answer builds the response to one query, or nil for a packet it cannot parse.
func (f *fakeDNS) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	// Question name: a sequence of length-prefixed labels ending in a zero byte.
	var labels []string
	off := 12
	for {
		if off >= len(q) {
			return nil
		}
		l := int(q[off])
		off++
		if l == 0 {
			break
		}
		if l > 63 || off+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[off:off+l]))
		off += l
	}
	if off+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[off : off+2])
	qclass := binary.BigEndian.Uint16(q[off+2 : off+4])
	question := q[12 : off+4]
	name := strings.ToLower(strings.Join(labels, "."))

	f.mu.Lock()
	addrs, known := f.records[name]
	f.mu.Unlock()

	var answers [][]byte
	for _, a := range addrs {
		if qclass != classIN {
			break
		}
		var rdata []byte
		switch {
		case qtype == typeA && a.Is4():
			b := a.As4()
			rdata = b[:]
		case qtype == typeAAAA && a.Is6():
			b := a.As16()
			rdata = b[:]
		default:
			continue
		}
		rr := []byte{0xc0, 12} // pointer to the question name
		rr = binary.BigEndian.AppendUint16(rr, qtype)
		rr = binary.BigEndian.AppendUint16(rr, classIN)
		rr = binary.BigEndian.AppendUint32(rr, 60)
		rr = binary.BigEndian.AppendUint16(rr, uint16(len(rdata)))
		answers = append(answers, append(rr, rdata...))
	}

	// Flags: response, authoritative, recursion desired copied, recursion available.
	flags := uint16(0x8480) | binary.BigEndian.Uint16(q[2:4])&0x0100
	if !known {
		flags |= 3 // NXDOMAIN
	}
	resp := append([]byte{}, q[0:2]...)
	resp = binary.BigEndian.AppendUint16(resp, flags)
	resp = binary.BigEndian.AppendUint16(resp, 1)
	resp = binary.BigEndian.AppendUint16(resp, uint16(len(answers)))
	resp = binary.BigEndian.AppendUint16(resp, 0)
	resp = binary.BigEndian.AppendUint16(resp, 0)
	resp = append(resp, question...)
	for _, rr := range answers {
		resp = append(resp, rr...)
	}
	return resp
}

// noDNS returns a resolver that fails the test if anything tries to resolve with it,
// for cases that must be decided without a lookup.
func noDNS(t *testing.T) *net.Resolver {
	t.Helper()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			t.Error("unexpected DNS lookup")
			return nil, errors.New("DNS disabled in this test")
		},
	}
}

func TestFakeDNSResolves(t *testing.T) {
	t.Parallel()
	dns := newFakeDNS(t, map[string][]string{
		"both.example": {"8.8.8.8", "2606:4700:4700::1111"},
	})
	r := dns.resolver()

	got, err := r.LookupNetIP(context.Background(), "ip", "both.example")
	require.NoError(t, err)
	require.ElementsMatch(t, []netip.Addr{
		netip.MustParseAddr("8.8.8.8"),
		netip.MustParseAddr("2606:4700:4700::1111"),
	}, got)

	_, err = r.LookupNetIP(context.Background(), "ip", "missing.example")
	require.Error(t, err)
}
