// Package screeningtest deploys the test sanctions oracle (testdata/sanctions:
// the interface Chainalysis deploys, compiled by scripts/compile-token.sh) on a
// simulated chain, for the oracle screener's tests and the service's.
package screeningtest

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/require"

	"partnerd/internal/chain/devnet"
)

// Oracle is the test sanctions oracle deployed on a chain.
type Oracle struct {
	Address common.Address
	abi     abi.ABI
	chain   *devnet.Chain
}

// Deploy deploys the oracle compiled into dir (the repository's
// testdata/sanctions, relative to the calling test's package) on ch and lists
// listed as sanctioned.
func Deploy(t *testing.T, ch *devnet.Chain, dir string, listed ...common.Address) *Oracle {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "SanctionsOracle.abi"))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	parsed, err := abi.JSON(f)
	require.NoError(t, err)
	bin, err := os.ReadFile(filepath.Join(dir, "SanctionsOracle.bin"))
	require.NoError(t, err)
	code, err := hex.DecodeString(strings.TrimSpace(string(bin)))
	require.NoError(t, err)
	addr, err := ch.DeployCode(context.Background(), code)
	require.NoError(t, err)
	o := &Oracle{Address: addr, abi: parsed, chain: ch}
	if len(listed) > 0 {
		o.Exec(t, "addToSanctionsList", listed)
	}
	return o
}

// Exec runs one of the oracle's owner functions (addToSanctionsList,
// removeFromSanctionsList) and mines its block.
func (o *Oracle) Exec(t *testing.T, method string, args ...any) {
	t.Helper()
	data, err := o.abi.Pack(method, args...)
	require.NoError(t, err)
	require.NoError(t, o.chain.Execute(context.Background(), o.Address, data))
}
