package jobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/internal/jobs"
	"partnerd/internal/store"
	"partnerd/internal/testsupport/testdb"
)

// cutProxy is a TCP proxy in front of PostgreSQL that a test cuts: every open
// connection is closed and new ones are closed as soon as they are accepted,
// as when the database's host is away; restored, it proxies again.
type cutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

func startProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { _ = ln.Close(); p.setCut(true) })
	go p.serve()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

func (p *cutProxy) pipe(c net.Conn) {
	p.mu.Lock()
	cut := p.cut
	p.mu.Unlock()
	if cut {
		_ = c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.cut { // cut while dialling
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := func() {
		_ = c.Close()
		_ = up.Close()
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, up)
		p.mu.Unlock()
	}
	go func() { _, _ = io.Copy(up, c); done() }()
	_, _ = io.Copy(c, up)
	done()
}

// setCut cuts the proxy (closing every open connection) or restores it.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

// lineLog is a log's output, line by line (slog's JSON handler writes a record
// in one Write).
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(bytes.TrimSpace(b)))
	return len(b), nil
}

func (l *lineLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines[n:]...)
}

func (l *lineLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// TestOutageIsLoggedOnce: while the database is unreachable River's services
// retry many times a second (short poll and sweep intervals), yet the job
// queue's log says so once, and once more when the database is back, with the
// count of the lines it left out.
func TestOutageIsLoggedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := openEnv(t, testdb.Database{Name: string(store.Postgres), URL: testdb.Postgres(t)})

	// The Runner reaches the (migrated) schema through the proxy.
	var direct string
	require.NoError(t, e.db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&direct))
	u, err := url.Parse(testdb.Postgres(t))
	require.NoError(t, err)
	proxy := startProxy(t, u.Host)
	u.Host = proxy.addr()
	q := u.Query()
	q.Set("search_path", direct)
	u.RawQuery = q.Encode()
	st, err := store.Open(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	logs := &lineLog{}
	fake := newFake()
	r, err := jobs.NewRunner(st.JobDriver(), fake, jobs.WithoutStagger(jobs.Options{
		Logger:            slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		FetchPollInterval: 20 * time.Millisecond,
		SweepInterval:     50 * time.Millisecond,
	}))
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Stop(stop)
	})
	// Healthy: the leader's sweeps run.
	require.Eventually(t, func() bool { return len(fake.sweepCalls()) >= 2 }, jobWait, 10*time.Millisecond)

	mark, before := logs.count(), r.Suppressed()
	proxy.setCut(true)
	// Many retries fail (each a line without the collapsing).
	const retries = 200
	require.Eventually(t, func() bool { return r.Suppressed()-before >= retries }, 30*time.Second, 10*time.Millisecond)
	during := logs.since(mark)
	require.Less(t, len(during), 20, "lines logged during the outage:\n%s", strings.Join(during, "\n"))
	require.NotEmpty(t, during)
	require.Contains(t, during[0], `"msg":"`+jobs.DownLine+`"`)
	for _, l := range during {
		require.NotContains(t, l, jobs.UpLine)
	}

	proxy.setCut(false)
	var up map[string]any
	require.Eventually(t, func() bool {
		for _, l := range logs.since(mark) {
			if strings.Contains(l, `"msg":"`+jobs.UpLine+`"`) {
				require.NoError(t, json.Unmarshal([]byte(l), &up))
				return true
			}
		}
		return false
	}, jobWait, 10*time.Millisecond)
	require.GreaterOrEqual(t, up["suppressed"], float64(retries))
	require.NotEmpty(t, up["down_for"])
	t.Logf("outage: %d left out; lines:\n%s", r.Suppressed()-before, strings.Join(logs.since(mark), "\n"))
}
