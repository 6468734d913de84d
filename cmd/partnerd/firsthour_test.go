package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTakenPortCreatesNothing: a first start on a port already in use fails before
// the demo partner exists, so the next start (on a free port) still prints the
// demo key, the newcomer's only one.
func TestTakenPortCreatesNothing(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	env := []string{"DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "p.db"), "APP_ENV=staging"}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()

	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), append(env, "LISTEN_ADDR="+taken.Addr().String())...)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the start on a taken port fails")
	require.Contains(t, string(out), "LISTEN_ADDR")
	require.NotRegexp(t, regexp.MustCompile(`sk_sandbox_`), string(out), "no key printed by a start that fails")

	_, key := startBinary(t, bin, env)
	require.NotEmpty(t, key, "the next start creates the demo partner and prints its key")
}

// TestFirstStartSaysWhereEverythingIs: the first start prints the demo partner's
// id with its key and the addresses of the API, the docs, the console and the
// dashboard; the root leads to the docs.
func TestFirstStartSaysWhereEverythingIs(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	addr := freePort(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL=sqlite:"+filepath.Join(t.TempDir(), "p.db"), "APP_ENV=staging", "LISTEN_ADDR="+addr)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var printed strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "listening on") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	out := printed.String()
	require.Regexp(t, `Created a demo partner, id [0-9a-f-]{36}\.`, out)
	require.Regexp(t, `sk_sandbox_`, out)
	_, port, _ := net.SplitHostPort(addr)
	for _, path := range []string{"/api/v1/partner", "/docs", "/console", "/dashboard"} {
		require.Contains(t, out, "http://127.0.0.1:"+port+path, out)
	}

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.Get("http://" + addr + "/")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode)
	require.Equal(t, "/docs", res.Header.Get("Location"))
}

// TestSecondServeOnOneSQLiteFileRefused: a second serve on the same SQLite file
// stops at once, naming DATABASE_URL and why; the first keeps serving.
func TestSecondServeOnOneSQLiteFileRefused(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	env := []string{"DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "p.db"), "APP_ENV=staging"}
	first, _ := startBinary(t, bin, env)

	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), append(env, "LISTEN_ADDR="+freePort(t))...)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "DATABASE_URL")
	require.Contains(t, string(out), "another partnerd serve is using this SQLite file")

	res, err := http.Get(first.base + "/healthz")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "the first still serves")
}

// TestCommandsPrintTheirResultAlone: a command prints its result alone on stdout
// and nothing on stderr; -v shows its log lines (the service's start-up warnings).
func TestCommandsPrintTheirResultAlone(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	db := "DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "p.db")
	run := func(args ...string) (string, string) {
		var out, errs strings.Builder
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), db, "APP_ENV=staging")
		cmd.Stdout, cmd.Stderr = &out, &errs
		require.NoError(t, cmd.Run(), errs.String())
		return out.String(), errs.String()
	}
	out, errs := run("partners", "create", "--name", "Quiet", "--json")
	require.Empty(t, errs)
	var created struct {
		PartnerID string `json:"partner_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &created), out)
	require.NotEmpty(t, created.PartnerID)

	_, errs = run("-v", "partners", "create", "--name", "Loud", "--json")
	require.Contains(t, errs, "DEMO DEPOSIT KEYS")
}

// TestUnreachableDatabaseNamesTheSetting: a database that cannot be reached is
// reported with the setting to change (its password hidden).
func TestUnreachableDatabaseNamesTheSetting(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(buildBinary(t), "migrate")
	cmd.Env = append(os.Environ(), "DATABASE_URL=postgres://postgres:hunter2@127.0.0.1:1/x")
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "DATABASE_URL postgres://postgres:***@127.0.0.1:1/x")
	require.NotContains(t, string(out), "hunter2")
}
