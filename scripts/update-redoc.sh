#!/usr/bin/env bash
# update-redoc.sh VERSION — replaces the Redoc script that /docs serves.
#
# The API reference page works offline: internal/contract/docs embeds Redoc's standalone
# bundle instead of loading it from a CDN. This script fetches the given 2.x
# release with `npm pack` (npm checks the tarball's integrity against the
# registry), and writes into internal/contract/docs/assets/:
#   redoc.standalone.js  package/bundles/redoc.standalone.js
#   redoc.standalone.js.LICENSE.txt
#                        the notices of the libraries bundled into it
#   LICENSE.redoc        package/LICENSE (the bundle is MIT: keep its notice)
#   README.md            the version, license and checksum now embedded
# Then run `go test ./internal/contract/docs` and review the page before committing.
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
  echo "usage: $0 VERSION   (e.g. 2.5.4; see: npm view redoc versions)" >&2
  exit 2
fi
version="$1"
if [[ ! "$version" =~ ^2\.[0-9]+\.[0-9]+$ ]]; then
  # The page uses Redoc 2's standalone bundle and <redoc spec-url> element;
  # another major version needs the page checked first.
  echo "update-redoc: expected a 2.x.y release, got '$version'" >&2
  exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/internal/contract/docs/assets"
work="$(mktemp -d "${TMPDIR:-/tmp}/update-redoc.XXXXXX")"
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "redoc@$version" >/dev/null)
tarball="$work/redoc-$version.tgz"
if [[ ! -f "$tarball" ]]; then
  echo "update-redoc: npm pack did not produce $tarball" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work" package/bundles/redoc.standalone.js \
  package/bundles/redoc.standalone.js.LICENSE.txt package/LICENSE package/package.json

got="$(node -p 'require(process.argv[1]).version' "$work/package/package.json")"
license="$(node -p 'require(process.argv[1]).license' "$work/package/package.json")"
if [[ "$got" != "$version" ]]; then
  echo "update-redoc: package says version $got, wanted $version" >&2
  exit 1
fi

mkdir -p "$dest"
install -m 0644 "$work/package/bundles/redoc.standalone.js" "$dest/redoc.standalone.js"
install -m 0644 "$work/package/bundles/redoc.standalone.js.LICENSE.txt" "$dest/redoc.standalone.js.LICENSE.txt"
install -m 0644 "$work/package/LICENSE" "$dest/LICENSE.redoc"
sum="$(sha256sum "$dest/redoc.standalone.js" | cut -d' ' -f1)"
size="$(wc -c <"$dest/redoc.standalone.js" | tr -d ' ')"

cat >"$dest/README.md" <<EOF
# Embedded Redoc

\`redoc.standalone.js\` is Redoc's standalone bundle, embedded into the binary by
\`internal/contract/docs\` so that \`/docs\` renders the API reference without reaching any
CDN.

| | |
| --- | --- |
| package | \`redoc@$version\` (npm) |
| file | \`package/bundles/redoc.standalone.js\` |
| license | $license, see \`LICENSE.redoc\` (copied from \`package/LICENSE\`) |
| bundled libraries | their notices: \`redoc.standalone.js.LICENSE.txt\` (from \`package/bundles/\`), also served beside the script |
| size | $size bytes |
| sha256 | \`$sum\` |

Do not edit these files by hand: run \`scripts/update-redoc.sh VERSION\` (a 2.x
release; \`npm view redoc versions\` lists them), then \`go test ./internal/contract/docs\`.
EOF

echo "update-redoc: redoc $version ($size bytes, sha256 $sum) -> ${dest#"$root"/}"
