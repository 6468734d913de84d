package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// devOnly are packages the server must not link: go-ethereum's simulated chain (an
// in-process node with the EVM and state database) and the development chain built
// on it belong to cmd/devchain and the tests.
var devOnly = []string{
	"github.com/ethereum/go-ethereum/ethclient/simulated",
	"github.com/ethereum/go-ethereum/core/vm",
	"github.com/ethereum/go-ethereum/core/state",
	"github.com/ethereum/go-ethereum/eth",
	"github.com/ethereum/go-ethereum/node",
	"partnerd/internal/chain/devnet",
}

// TestServerLinksNoDevelopmentChain reads the server's import graph (go list -deps)
// and fails when a development-only package entered it.
func TestServerLinksNoDevelopmentChain(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "partnerd/internal/app", "the graph was read")
	for _, d := range deps {
		for _, bad := range devOnly {
			require.False(t, d == bad || strings.HasPrefix(d, bad+"/"), "the server links %s (only cmd/devchain and tests may)", d)
		}
	}
}
