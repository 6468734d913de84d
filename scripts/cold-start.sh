#!/usr/bin/env bash
# Measures a newcomer's first minute: `make build` with empty module and build caches
# (modules downloaded from GOPROXY), then `partnerd serve` on a fresh SQLite database
# until /healthz first answers. Prints the seconds of each part and the binary's size.
# Everything lives in a temporary directory that is removed at the end; the caches you
# use day to day are untouched.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d "${TMPDIR:-/tmp}/partnerd-cold.XXXXXX")
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  chmod -R u+w "$tmp" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

export GOCACHE="$tmp/gocache" GOMODCACHE="$tmp/gomodcache" GOFLAGS="${GOFLAGS:-} -modcacherw"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

start=$(date +%s.%N)
make -s build GO="${GO:-go}" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log" >&2; exit 1; }
built=$(date +%s.%N)
cp bin/partnerd "$tmp/partnerd"
(cd "$tmp" && DATABASE_URL="sqlite:$tmp/data/partnerd.db" LISTEN_ADDR="127.0.0.1:$port" \
  WEBHOOK_ALLOW_PRIVATE_URLS=true exec ./partnerd serve >"$tmp/serve.log" 2>&1) &
pid=$!
until curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.log" >&2; exit 1; }
  sleep 0.05
done
answered=$(date +%s.%N)

size=$(stat -c %s "$tmp/partnerd")
awk -v s="$start" -v b="$built" -v a="$answered" -v z="$size" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
  printf "cold build (make build, empty caches): %.1f s\n", b - s
  printf "start to first answer:                 %.1f s\n", a - b
  printf "cold make run to first answer:         %.1f s\n", a - s
  printf "server binary:                         %.1f MB (%d bytes)\n", z / 1e6, z
  printf "load average before the end:           %s\n", l
}'
