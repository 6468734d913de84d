#!/usr/bin/env bash
# Enforces the contracts' versioning policy (internal/contract/docs/guide/development.md: "Contract versions"), for each
# contract in openapi/ (partner, operator):
#   1. openapi/released/<name>-v<info.version>.yaml exists and is the contract byte
#      for byte: a change without a version bump fails here.
#   2. A released file is never edited once committed (git history): a release is
#      what partners generated their clients from.
#   3. Against the previous release, oasdiff finds no breaking change (level ERR,
#      which includes new values in a response enum) unless the major version moved,
#      and the version only moves forward.
#   4. openapi/CHANGELOG.md has a heading for the version.
# `scripts/check-contract.sh release` copies each contract whose version has no
# released file yet into openapi/released/ (never overwriting one).
# OASDIFF overrides the command (the tests plant changes in a copy of the tree).
set -euo pipefail
cd "${CONTRACT_ROOT:-$(dirname "$0")/..}"
oasdiff=${OASDIFF:-go tool -modfile=openapi/tools.mod oasdiff}
mode=${1:-check}
fail=0
complain() { echo "check-contract: $*" >&2; fail=1; }

version_of() { sed -n 's/^  version: *//p' "$1" | head -n1 | tr -d "\"'"; }
major_of() { echo "${1%%.*}"; }

for spec in openapi/partner.yaml openapi/operator.yaml; do
  name=$(basename "$spec" .yaml)
  v=$(version_of "$spec")
  if ! [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    complain "$spec: info.version \"$v\" is not MAJOR.MINOR.PATCH"; continue
  fi
  released="openapi/released/$name-v$v.yaml"
  if [ "$mode" = release ]; then
    if [ -e "$released" ]; then
      cmp -s "$spec" "$released" || complain "$spec: version $v is already released and differs: bump info.version first"
    else
      mkdir -p openapi/released && cp "$spec" "$released" && echo "released $released"
    fi
    continue
  fi
  if [ ! -e "$released" ]; then
    complain "$spec: version $v has no released copy ($released): bump the version, add its CHANGELOG entry, run make release-contract"
  elif ! cmp -s "$spec" "$released"; then
    complain "$spec changed without a version bump: it differs from $released (bump info.version, add a CHANGELOG entry, run make release-contract)"
  fi
  grep -Eq "^## $name $v\b" openapi/CHANGELOG.md 2>/dev/null || complain "openapi/CHANGELOG.md has no \"## $name $v\" entry"
  # The previous release: the highest version below v.
  prev=$(ls openapi/released/ 2>/dev/null | sed -n "s/^$name-v\([0-9.]*\)\.yaml$/\1/p" | sort -V | awk -v v="$v" '
    function cmp(a, b,   x, y, i) { split(a, x, "."); split(b, y, "."); for (i = 1; i <= 3; i++) { if (x[i] + 0 != y[i] + 0) return (x[i] + 0 < y[i] + 0) ? -1 : 1 } return 0 }
    cmp($0, v) < 0 { p = $0 } END { print p }')
  newest=$(ls openapi/released/ 2>/dev/null | sed -n "s/^$name-v\([0-9.]*\)\.yaml$/\1/p" | sort -V | tail -n1)
  [ "$newest" = "$v" ] || complain "$spec: version $v is below the released $newest: versions only move forward"
  if [ -n "$prev" ]; then
    out=$($oasdiff breaking --fail-on ERR "openapi/released/$name-v$prev.yaml" "$spec" 2>&1) && status=0 || status=$?
    if [ $status -ne 0 ]; then
      if [ "$(major_of "$v")" = "$(major_of "$prev")" ]; then
        echo "$out" >&2
        complain "$spec: breaking changes since $name $prev without a new major version"
      fi
    fi
  fi
done

# A released file edited, renamed or removed by any commit, or by a merge into the
# mainline (each merge compared with its first parent, so a conflict resolved
# against an earlier release is seen too). grandfathered lists the one merge that
# rewrote a release before merges were checked (partner 1.2.0, merged twice).
grandfathered="2b24ca62e81d60c465cb6fc66acb0895559c6296:openapi/released/partner-v1.2.0.yaml"
if [ "$mode" = check ] && git rev-parse --git-dir >/dev/null 2>&1; then
  edited=$( {
    git log --no-merges --format= --name-only --diff-filter=MRD -- openapi/released
    git log --merges -m --first-parent --format='commit %H' --name-only --diff-filter=MRD -- openapi/released |
      awk -v old="$grandfathered" '/^commit /{c=$2; next} NF && (c ":" $0) != old {print}'
  } | sort -u)
  [ -z "$edited" ] || complain "released contracts are never edited, renamed or removed; these were: $edited"
fi
[ $fail -eq 0 ] && [ "$mode" = check ] && echo "contracts follow the versioning policy"
exit $fail
