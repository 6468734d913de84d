#!/usr/bin/env bash
# make check-clients: the contracts generate clean, typed clients with the
# generators partners use.
#   TypeScript: openapi-typescript (pinned in package.json here) generates types from
#   openapi/partner.yaml and openapi/operator.yaml into a temporary directory; the
#   run fails when the generator prints anything beyond its banner and result line
#   (a warning), when the output has `any`, or `unknown` where the contract should
#   name a type, and when tsc --strict does not accept the types together with
#   clients-check.ts, which uses them and must be refused where it misuses them.
#   Go: oapi-codegen's output in gen/ (checked fresh by make check-generated) has no
#   interface{} where the contract should say more.
# Allowed untyped values, each for a reason the contract states:
#   - `[name: string]: unknown` in a response's headers: openapi-typescript's open
#     index for headers the contract does not list (proxies add their own);
#   - `metadata` of a status change (partner StatusHistoryEntry, operator
#     HistoryEntry), `map[string]interface{}` in Go: the facts recorded with a
#     change, whose keys and types vary with its reason (deposit id, confirmations,
#     a chain hash); the contract declares it a free-form object;
#   - operator `EmptyRequest`, `map[string]interface{}` in Go: the body of actions
#     that take no fields, an object with `additionalProperties: false` (Go has no
#     type for an object that must be empty; the server refuses any field).
#   - operator `Approval`'s `parameters` and `result`, `map[string]interface{}` in
#     Go: a proposal keeps the proposed request's body as sent and, once approved,
#     the action's answer; their shapes are those of whichever operation was
#     proposed (the contract declares both free-form objects, and `operation` names
#     the schema that applies). Allowed in the Approval schema only.
# CONTRACT_ROOT runs it on another tree (a copy with a planted defect).
set -euo pipefail
tools=$(cd "$(dirname "$0")" && pwd)
bin=$tools/node_modules/.bin
cd "${CONTRACT_ROOT:-$tools/../..}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
complain() { echo "check-clients: $*" >&2; fail=1; }

for api in partner operator; do
  if ! out=$("$bin/openapi-typescript" "openapi/$api.yaml" -o "$tmp/$api.ts" 2>&1); then
    echo "$out" >&2; complain "openapi-typescript failed on openapi/$api.yaml"; continue
  fi
  extra=$(grep -v -e '^✨ openapi-typescript ' -e '^🚀 ' <<<"$out" || true)
  [ -z "$extra" ] || { echo "$extra" >&2; complain "openapi-typescript warned on openapi/$api.yaml"; }
  # Code lines only (JSDoc comments hold prose), string literals removed (the
  # finality enum has the value "unknown") and a property's name too (the
  # overview's screening counts have a property named unknown); the metadata
  # index is allowed only right under a `metadata: {` line, and the Approval
  # schema's only right under its `parameters: {` and `result: {` lines (schema
  # is the components.schemas entry the line is in).
  untyped=$(awk '
    /^[[:space:]]*(\/\*\*|\*)/ { next }
    /^        [A-Za-z0-9_]+: \{$/ { schema = $1 }
    /^    [A-Za-z0-9_]+: \{$/ { schema = "" }
    { line = $0; gsub(/"[^"]*"/, "\"\"", line) }
    { typ = line; gsub(/^[[:space:]]*(readonly[[:space:]]+)?[A-Za-z0-9_$]+\??:/, "", typ) }
    line ~ /\[name: string\]: unknown;/ { prev = line; next }
    line ~ /\[key: string\]: unknown;/ && prev ~ /(^|[[:space:]])metadata: \{$/ { prev = line; next }
    line ~ /\[key: string\]: unknown;/ && schema == "Approval:" && prev ~ /^            (parameters|result): \{$/ { prev = line; next }
    typ ~ /(^|[^A-Za-z0-9_$])(any|unknown)([^A-Za-z0-9_$]|$)/ { printf "%d: %s\n", NR, $0 }
    { prev = line }' "$tmp/$api.ts")
  [ -z "$untyped" ] || { echo "$untyped" >&2; complain "openapi-typescript typed values of openapi/$api.yaml as any/unknown (lines of the generated $api.ts above): name their types in the contract"; }
done

if [ $fail -eq 0 ]; then
  cp "$tools/clients-check.ts" "$tmp/"
  "$bin/tsc" --noEmit --strict --target es2022 --module esnext --moduleResolution bundler \
    --noUnusedLocals false --skipLibCheck false "$tmp/clients-check.ts" "$tmp/partner.ts" "$tmp/operator.ts" \
    || complain "tsc --strict refused the generated TypeScript types with clients-check.ts"
fi

# Go: interface{} in a type of gen/ (a field, an alias or a definition). Each line
# is prefixed with the type it is in (awk), so the Approval's allowance is its own.
untyped=$(awk '
    FNR == 1 { typ = "" }
    /^type [A-Za-z0-9_]+ struct \{$/ { typ = $2 }
    /^}/ { typ = "" }
    /^[[:space:]]*(type[[:space:]]+)?[A-Za-z_][A-Za-z0-9_]*[[:space:]]+(=[[:space:]]*)?(\[\]|\*|map\[string\])*interface\{\}/ {
      printf "%s:%d:%s\t%s\n", FILENAME, FNR, typ, $0 }' gen/*/*.gen.go \
  | grep -vE '[[:space:]]Metadata[[:space:]]+\*?map\[string\]interface\{\}[[:space:]]+`json:"metadata"`$' \
  | grep -vE ':[[:space:]]*type EmptyRequest = map\[string\]interface\{\}$' \
  | grep -vE ':Approval[[:space:]]+(Parameters[[:space:]]+map\[string\]interface\{\}[[:space:]]+`json:"parameters"`|Result[[:space:]]+\*map\[string\]interface\{\}[[:space:]]+`json:"result"`)$' || true)
[ -z "$untyped" ] || { echo "$untyped" >&2; complain "gen/ has interface{} types above: name their types in the contract"; }

[ $fail -eq 0 ] && echo "generated clients are typed and compile (openapi-typescript + tsc --strict, oapi-codegen)"
exit $fail
