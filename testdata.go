// Package partnerd embeds the repository files that programs need at run time:
// the test USDT token compiled from testdata/usdt/TestUSDT.sol
// (scripts/compile-token.sh), which cmd/devchain and the chain tests deploy.
package partnerd

import _ "embed"

// TestUSDTABI is the test token's ABI (JSON).
//
//go:embed testdata/usdt/TestUSDT.abi
var TestUSDTABI []byte

// TestUSDTBin is the test token's creation bytecode (hex).
//
//go:embed testdata/usdt/TestUSDT.bin
var TestUSDTBin string
