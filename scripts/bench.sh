#!/usr/bin/env bash
# bench.sh — the write and read paths against the machine's own limit, in one run.
#
#   1. pgbench on the same PostgreSQL server: a transaction of three INSERTs (what a
#      create must at least do: transaction, history, event) and a select by
#      primary key (what a GET must at least do), 16 clients each;
#   2. partnerd on PostgreSQL (a throwaway database) and on SQLite (a temp file),
#      one instance, rate limits lifted, driven by scripts/benchapi from this
#      machine: create (16 clients, closed loop), create at half that rate (open
#      loop: its p99), get by id, quote, list;
#   3. a table with the ratios (partnerd ÷ pgbench), the server's CPU time per
#      request, and the machine.
#
# Usage: scripts/bench.sh            (BENCH_DURATION=10s by default)
#   BENCH_PGBENCH_SCALE  pgbench's -s for the select baseline (default 10; 1 for a smoke run)
# Needs: go, psql, pgbench, jq, curl.
set -euo pipefail
cd "$(dirname "$0")/.."

ADMIN_URL=${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
DURATION=${BENCH_DURATION:-10s}
PGB_SCALE=${BENCH_PGBENCH_SCALE:-10}
SECS=${DURATION%s}
for tool in go psql pgbench jq curl; do
	command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done

WORK=$(mktemp -d)
DB="partnerd_bench_$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
PGB="${DB}_pgbench"
SERVER_PID=""
cleanup() {
	[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
	psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
	psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS $PGB WITH (FORCE)" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
db_url() { # the admin URL with another database name
	local u=$1 name=$2
	echo "$u" | sed -E "s#/[^/?]*(\?|$)#/$name\1#"
}

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(psql "$ADMIN_URL" -Atc 'show server_version') (max_connections $(psql "$ADMIN_URL" -Atc 'show max_connections'))"

# --- 1. pgbench baselines -----------------------------------------------------------
psql "$ADMIN_URL" -qc "CREATE DATABASE $PGB" >/dev/null
PGB_URL=$(db_url "$ADMIN_URL" "$PGB")
psql "$PGB_URL" -q >/dev/null <<'SQL'
CREATE TABLE b_tx (id uuid PRIMARY KEY, partner uuid NOT NULL, ref text NOT NULL, amount numeric(20,2) NOT NULL, created_at timestamptz NOT NULL);
CREATE TABLE b_hist (id bigserial PRIMARY KEY, tx uuid NOT NULL, reason text NOT NULL, at timestamptz NOT NULL);
CREATE TABLE b_event (id uuid PRIMARY KEY, tx uuid NOT NULL, payload text NOT NULL, at timestamptz NOT NULL);
SQL
cat >"$WORK/insert3.sql" <<'SQL'
BEGIN;
INSERT INTO b_tx VALUES (gen_random_uuid(), '00000000-0000-0000-0000-000000000001', md5(random()::text), 25000.00, now());
INSERT INTO b_hist (tx, reason, at) VALUES (gen_random_uuid(), 'transaction:created', now());
INSERT INTO b_event VALUES (gen_random_uuid(), gen_random_uuid(), repeat('x', 600), now());
END;
SQL
pgbench_tps() { grep -Eo 'tps = [0-9.]+' | tail -1 | awk '{print $3}'; }
INSERT_TPS=$(pgbench -n -c 16 -j 2 -T "$SECS" -f "$WORK/insert3.sql" "$PGB_URL" 2>&1 | pgbench_tps)
pgbench -i -q -s "$PGB_SCALE" "$PGB_URL" >/dev/null 2>&1
SELECT_TPS=$(pgbench -n -S -c 16 -j 2 -T "$SECS" "$PGB_URL" 2>&1 | pgbench_tps)
echo "pgbench: 3 INSERTs in a transaction $INSERT_TPS tps; select by primary key $SELECT_TPS tps"

# --- 2. partnerd ----------------------------------------------------------------------
go build -o "$WORK/partnerd" ./cmd/partnerd
go build -o "$WORK/benchapi" ./scripts/benchapi

# measure NAME OP BENCHAPI-ARGS…: runs benchapi and adds the server's CPU time per
# request (from /proc: user + system time of the partnerd process during the run).
measure() {
	local name=$1 op=$2
	shift 2
	local tck before after
	tck=$(getconf CLK_TCK)
	before=$(awk '{print $14 + $15}' "/proc/$SERVER_PID/stat")
	"$WORK/benchapi" "$@" >"$WORK/$name.$op.raw.json"
	after=$(awk '{print $14 + $15}' "/proc/$SERVER_PID/stat")
	jq --argjson ticks "$((after - before))" --argjson tck "$tck" \
		'. + {cpu_ms_per_req: (if .requests > 0 then ($ticks * 1000 / $tck / .requests * 1000 | round) / 1000 else 0 end)}' \
		"$WORK/$name.$op.raw.json" >"$WORK/$name.$op.json"
}

run_partnerd() { # $1 = name, $2 = DATABASE_URL
	local name=$1 url=$2 port key
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	export DATABASE_URL=$url APP_ENV=staging LISTEN_ADDR=127.0.0.1:$port \
		RATE_LIMIT_READS=1000000/1s RATE_LIMIT_WRITES=1000000/1s
	"$WORK/partnerd" migrate >/dev/null 2>&1
	key=$("$WORK/partnerd" partners create --name bench --json 2>/dev/null | jq -r .api_key)
	"$WORK/partnerd" serve >"$WORK/$name.log" 2>&1 &
	SERVER_PID=$!
	for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
	local b="http://127.0.0.1:$port"
	measure "$name" create -base "$b" -key "$key" -op create -clients 16 -duration "$DURATION"
	local half
	half=$(jq '.rps / 2 | floor' "$WORK/$name.create.json")
	measure "$name" create_half -base "$b" -key "$key" -op create -clients 16 -rate "$half" -duration "$DURATION"
	measure "$name" get -base "$b" -key "$key" -op get -clients 16 -duration "$DURATION"
	measure "$name" quote -base "$b" -key "$key" -op quote -clients 16 -duration "$DURATION"
	measure "$name" list -base "$b" -key "$key" -op list -clients 16 -duration "$DURATION"
	kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
	unset DATABASE_URL
}
psql "$ADMIN_URL" -qc "CREATE DATABASE $DB" >/dev/null
run_partnerd postgres "$(db_url "$ADMIN_URL" "$DB")"
run_partnerd sqlite "sqlite:$WORK/bench.db"

# --- 3. the table ------------------------------------------------------------------
row() { # name op label baseline
	local f="$WORK/$1.$2.json"
	local rps p50 p99 errs cpu
	rps=$(jq '.rps | floor' "$f"); p50=$(jq .p50_ms "$f"); p99=$(jq .p99_ms "$f"); errs=$(jq .errors "$f"); cpu=$(jq .cpu_ms_per_req "$f")
	local ratio="—"
	[ -n "${4:-}" ] && ratio=$(awk -v a="$rps" -v b="$4" 'BEGIN {printf "%.0f %%", 100*a/b}')
	printf '| %s | %s | %s/s | %s ms | %s ms | %s | %s ms | %s |\n' "$1" "$3" "$rps" "$p50" "$p99" "$errs" "$cpu" "$ratio"
}
echo
echo "| database | work | throughput | p50 | p99 | errors | server CPU / request | of pgbench |"
echo "|---|---|---|---|---|---|---|---|"
for db in postgres sqlite; do
	base_ins=$INSERT_TPS; base_sel=$SELECT_TPS
	[ "$db" = sqlite ] && base_ins="" && base_sel=""
	row $db create "POST /transactions, 16 clients" "$base_ins"
	row $db create_half "POST /transactions at half that rate" ""
	row $db get "GET /transactions/{id}, 16 clients" "$base_sel"
	row $db quote "POST /quotes, 16 clients" ""
	row $db list "GET /transactions?limit=20, 16 clients" ""
done
echo
echo "pgbench, same server and run: 3 INSERTs $INSERT_TPS tps, select by primary key $SELECT_TPS tps"
