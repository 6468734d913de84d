package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// devOnly are packages the server must not link: go-ethereum's simulated chain (an
// in-process node with the EVM and state database) and the development chain built
// on it belong to cmd/devchain and the tests; go-ethereum's crypto (its cgo
// secp256k1, and the KZG code its types bring) is never run by the server, which
// reads logs and hashes with Keccak-256 only.
var devOnly = []string{
	"github.com/ethereum/go-ethereum/crypto/secp256k1",
	"github.com/ethereum/go-ethereum/crypto/kzg4844",
	"github.com/ethereum/go-ethereum/core/types",
	"github.com/ethereum/go-ethereum/ethclient",
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

// storeImporters are the only packages that may import the store: the
// composition root, which builds it and hands each domain package the narrow
// interface it asks for, and the test support around it (the store's own
// packages included). Commands (cmd/..., scripts/...) may too. Everything else
// sees the database only through its own interfaces.
var storeImporters = []string{
	"partnerd/internal/app",
	"partnerd/internal/testsupport/testdb",
	"partnerd/internal/testsupport/apitest",
	"partnerd/internal/store/",
	"partnerd/cmd/",
	"partnerd/scripts/",
}

// mayImportStore reports whether pkg is one of storeImporters (an entry ending
// in "/" covers the packages under it).
func mayImportStore(pkg string) bool {
	for _, ok := range storeImporters {
		if pkg == ok || strings.HasSuffix(ok, "/") && strings.HasPrefix(pkg, ok) {
			return true
		}
	}
	return false
}

// TestOnlyTheCompositionRootImportsStore reads every package's imports (go list,
// test files aside: tests may use the store) and fails when a package outside
// storeImporters imports partnerd/internal/store.
func TestOnlyTheCompositionRootImportsStore(t *testing.T) {
	t.Parallel()
	require.False(t, mayImportStore("partnerd/internal/httpapi"), "the rule refuses a domain package")
	require.False(t, mayImportStore("partnerd/internal/storefront"), "the rule matches whole names")
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "partnerd/...").Output()
	require.NoError(t, err, "go list")
	var rootImportsStore bool
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			if imp != "partnerd/internal/store" {
				continue
			}
			rootImportsStore = rootImportsStore || pkg == "partnerd/internal/app"
			require.True(t, mayImportStore(pkg), "%s imports partnerd/internal/store; only %v may", pkg, storeImporters)
		}
	}
	require.True(t, rootImportsStore, "the graph was read: the composition root imports the store")
}
