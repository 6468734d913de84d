package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"partnerd/gen/client"
	"partnerd/internal/testsupport/apitest"
	"partnerd/internal/testsupport/testdb"
)

// cluster is a throwaway PostgreSQL server of this test's own, so the test can
// stop and start it without touching the server other suites share.
type cluster struct {
	t        *testing.T
	dir, bin string
	port     int
	runAs    []string
}

// startCluster initialises and starts a cluster under a temporary directory; it is
// stopped and removed when the test ends. It fails the test when PostgreSQL's
// binaries are not installed (they are wherever `make test` runs).
func startCluster(t *testing.T) *cluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	require.NotEmpty(t, bins, "PostgreSQL's server binaries are needed to start a throwaway cluster")
	c := &cluster{t: t, bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "partnerd-outage-")
	require.NoError(t, err)
	c.dir = dir
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "running as root needs a postgres user to start a cluster with")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(dir, uid, gid))
		c.runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c.port = ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	c.run("initdb", "-D", dir+"/data", "-U", "postgres", "-A", "trust", "--no-sync")
	t.Cleanup(func() {
		_ = c.command("pg_ctl", "-D", dir+"/data", "-m", "immediate", "stop").Run()
		_ = os.RemoveAll(dir)
	})
	c.start()
	return c
}

func (c *cluster) command(name string, args ...string) *exec.Cmd {
	argv := append(append([]string{}, c.runAs...), append([]string{filepath.Join(c.bin, name)}, args...)...)
	return exec.Command(argv[0], argv[1:]...)
}

func (c *cluster) run(name string, args ...string) {
	c.t.Helper()
	out, err := c.command(name, args...).CombinedOutput()
	require.NoError(c.t, err, "%s: %s", name, out)
}

func (c *cluster) start() {
	c.t.Helper()
	c.run("pg_ctl", "-D", c.dir+"/data", "-l", c.dir+"/server.log", "-w", "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", c.port, c.dir), "start")
}

func (c *cluster) stop() {
	c.t.Helper()
	c.run("pg_ctl", "-D", c.dir+"/data", "-m", "fast", "-w", "stop")
}

func (c *cluster) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// TestDatabaseOutage: while PostgreSQL is down every request, the key lookup
// included, is 503 service_unavailable with Retry-After (declared by the contract;
// never a 500), /readyz says unavailable, and once the database is back the same
// process serves again without a restart.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	pg := startCluster(t)
	env := apitest.Start(t, testdb.Database{Name: "postgres", URL: pg.url()}, nil)
	key := env.NewPartner(t)
	c := env.Client(t, key)
	ctx := context.Background()
	tx := create(t, c, direct("OUTAGE-1", "bep20", "2000"))
	ops := env.OperatorClient(t, env.NewOperator(t))

	pg.stop()
	checks := map[string]func() (int, *client.Error, http.Header){
		"list": func() (int, *client.Error, http.Header) {
			r, err := c.ListTransactionsWithResponse(ctx, &client.ListTransactionsParams{})
			require.NoError(t, err)
			return r.StatusCode(), r.JSON503, r.HTTPResponse.Header
		},
		"get": func() (int, *client.Error, http.Header) {
			r, err := c.GetTransactionWithResponse(ctx, tx.Id)
			require.NoError(t, err)
			return r.StatusCode(), r.JSON503, r.HTTPResponse.Header
		},
		"quote": func() (int, *client.Error, http.Header) {
			r, err := c.CreateQuoteWithResponse(ctx, nil, client.QuoteRequest{CryptoCurrency: "usdt", Network: "bep20", CryptoAmount: ptr("10")})
			require.NoError(t, err)
			return r.StatusCode(), r.JSON503, r.HTTPResponse.Header
		},
		"create": func() (int, *client.Error, http.Header) {
			r, err := c.CreateTransactionWithResponse(ctx, params(), direct("OUTAGE-2", "bep20", "2000"), idem())
			require.NoError(t, err)
			return r.StatusCode(), r.JSON503, r.HTTPResponse.Header
		},
		"webhook endpoint": func() (int, *client.Error, http.Header) {
			r, err := c.GetWebhookEndpointWithResponse(ctx)
			require.NoError(t, err)
			return r.StatusCode(), r.JSON503, r.HTTPResponse.Header
		},
		"operator API": func() (int, *client.Error, http.Header) {
			r, err := ops.GetOperatorTransactionWithResponse(ctx, tx.Id)
			require.NoError(t, err)
			require.NotNil(t, r.JSON503, string(r.Body))
			return r.StatusCode(), &client.Error{Error: client.ErrorInfo{Code: client.ErrorCode(r.JSON503.Error.Code)}}, r.HTTPResponse.Header
		},
	}
	for name, check := range checks {
		status, body, header := check()
		require.Equal(t, http.StatusServiceUnavailable, status, name)
		require.Equal(t, client.ErrorCodeServiceUnavailable, body.Error.Code, name)
		require.NotEmpty(t, header.Get("Retry-After"), name)
	}
	res, err := http.Get(env.Root + "/readyz")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)

	pg.start()
	require.Eventually(t, func() bool {
		r, err := c.GetTransactionWithResponse(ctx, tx.Id)
		return err == nil && r.StatusCode() == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "the same process serves again once the database is back")
	after := create(t, c, direct("OUTAGE-3", "bep20", "2000"))
	require.NotEqual(t, tx.Id, after.Id)
}
