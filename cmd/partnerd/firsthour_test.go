package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
