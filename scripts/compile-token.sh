#!/usr/bin/env bash
# Recompiles testdata/usdt/TestUSDT.sol into TestUSDT.abi and TestUSDT.bin with the
# npm package solc at a pinned version (fetched by npx from the npm registry; no
# compiler download). The outputs are committed; run this only after editing the
# source. The EVM version is pinned to paris (no PUSH0) so the bytecode also runs
# on chains that lag Ethereum's forks.
set -euo pipefail
cd "$(dirname "$0")/../testdata/usdt"
SOLC_VERSION=0.8.30
input=$(node -e '
const fs = require("fs");
process.stdout.write(JSON.stringify({
  language: "Solidity",
  sources: {"TestUSDT.sol": {content: fs.readFileSync("TestUSDT.sol", "utf8")}},
  settings: {optimizer: {enabled: true, runs: 200}, evmVersion: "paris",
             outputSelection: {"*": {"*": ["abi", "evm.bytecode.object"]}}},
}));')
# solcjs prints a note about SMT solvers before the JSON; keep the JSON only.
out=$(echo "$input" | npx --yes "solc@${SOLC_VERSION}" --standard-json 2>/dev/null | sed -n '/^{/,$p')
echo "$out" | node -e '
const fs = require("fs");
const out = JSON.parse(fs.readFileSync(0, "utf8"));
const errs = (out.errors || []).filter(e => e.severity === "error");
if (errs.length) { console.error(errs.map(e => e.formattedMessage).join("\n")); process.exit(1); }
const c = out.contracts["TestUSDT.sol"].TestUSDT;
fs.writeFileSync("TestUSDT.abi", JSON.stringify(c.abi, null, 1) + "\n");
fs.writeFileSync("TestUSDT.bin", c.evm.bytecode.object + "\n");
console.log("compiled with solc '"${SOLC_VERSION}"': " + c.evm.bytecode.object.length / 2 + " bytes of bytecode");
'
