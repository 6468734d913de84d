#!/usr/bin/env bash
# Recompiles a test contract into its .abi and .bin beside the source, with the
# npm package solc at a pinned version (fetched by npx from the npm registry; no
# compiler download). With no argument it compiles the test USDT token
# (testdata/usdt/TestUSDT.sol); with one, the source named, whose contract has the
# file's name (scripts/compile-token.sh testdata/sanctions/SanctionsOracle.sol,
# the screening tests' sanctions oracle). The outputs are committed; run this only
# after editing a source. The EVM version is pinned to paris (no PUSH0) so the
# bytecode also runs on chains that lag Ethereum's forks.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="${1:-testdata/usdt/TestUSDT.sol}"
case "$src" in /*) ;; *) src="$root/$src" ;; esac
[ -f "$src" ] || { echo "no such source: $src" >&2; exit 1; }
cd "$(dirname "$src")"
file=$(basename "$src")
contract="${file%.sol}"
SOLC_VERSION=0.8.30
input=$(FILE="$file" node -e '
const fs = require("fs");
const file = process.env.FILE;
process.stdout.write(JSON.stringify({
  language: "Solidity",
  sources: {[file]: {content: fs.readFileSync(file, "utf8")}},
  settings: {optimizer: {enabled: true, runs: 200}, evmVersion: "paris",
             outputSelection: {"*": {"*": ["abi", "evm.bytecode.object"]}}},
}));')
# solcjs prints a note about SMT solvers before the JSON; keep the JSON only.
out=$(echo "$input" | npx --yes "solc@${SOLC_VERSION}" --standard-json 2>/dev/null | sed -n '/^{/,$p')
echo "$out" | FILE="$file" CONTRACT="$contract" node -e '
const fs = require("fs");
const out = JSON.parse(fs.readFileSync(0, "utf8"));
const errs = (out.errors || []).filter(e => e.severity === "error");
if (errs.length) { console.error(errs.map(e => e.formattedMessage).join("\n")); process.exit(1); }
const name = process.env.CONTRACT;
const c = (out.contracts[process.env.FILE] || {})[name];
if (!c) { console.error("the source has no contract " + name); process.exit(1); }
fs.writeFileSync(name + ".abi", JSON.stringify(c.abi, null, 1) + "\n");
fs.writeFileSync(name + ".bin", c.evm.bytecode.object + "\n");
console.log(name + ": compiled with solc '"${SOLC_VERSION}"': " + c.evm.bytecode.object.length / 2 + " bytes of bytecode");
'
