#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers for the test suite and prints the
# TEST_DATABASE_URL to use. Order:
#   1. TEST_DATABASE_URL (or the default 127.0.0.1:5432 URL) answers: use it.
#   2. Otherwise, if PostgreSQL's binaries are installed, start a throwaway cluster
#      under ${TMPDIR:-/tmp} on a free port and print its URL (stopped by
#      scripts/test-postgres.sh stop DIR, which `make test` calls).
#   3. Otherwise fail loudly: the suites need PostgreSQL and never skip it.
set -euo pipefail

default_url="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
url="${TEST_DATABASE_URL:-$default_url}"

answers() {
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -d "$1" -t 3
  elif command -v psql >/dev/null 2>&1; then
    psql "$1" -Atqc 'select 1' >/dev/null 2>&1
  else
    return 1
  fi
}

pg_bin() {
  local name=$1 dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/$name" ] && { echo "$dir/$name"; return 0; }
  done
  command -v "$name"
}

if [ "${1:-}" = "stop" ]; then
  dir="${2:-}"
  { [ -n "$dir" ] && [ -d "$dir" ]; } || exit 0
  run_as=""
  [ "$(id -u)" = 0 ] && run_as="runuser -u postgres --"
  $run_as "$(pg_bin pg_ctl)" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  exit 0
fi

if answers "$url"; then
  echo "TEST_DATABASE_URL=$url"
  exit 0
fi

initdb=$(pg_bin initdb || true)
pg_ctl=$(pg_bin pg_ctl || true)
if [ -z "$initdb" ] || [ -z "$pg_ctl" ]; then
  echo "PostgreSQL does not answer at $url and its binaries (initdb, pg_ctl) are not installed." >&2
  echo "Start a server or set TEST_DATABASE_URL; the test suites require PostgreSQL." >&2
  exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/partnerd-pg.XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 55432)
run_as=""
if [ "$(id -u)" = 0 ]; then
  # PostgreSQL refuses to run as root.
  chown postgres "$dir" 2>/dev/null || { echo "running as root and no postgres user to start a cluster with" >&2; exit 1; }
  run_as="runuser -u postgres --"
fi
$run_as "$initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1
$run_as "$pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
answers "$url" || { echo "the throwaway PostgreSQL cluster did not start; see $dir/server.log" >&2; exit 1; }
echo "TEST_DATABASE_URL=$url"
echo "TEST_PG_DIR=$dir"
