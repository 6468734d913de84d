#!/usr/bin/env bash
# bench.sh — the write and read paths against the machine's own limit, in the same
# minutes.
#
#   1. partnerd on PostgreSQL (a throwaway database), one instance, rate limits set
#      high but still taken (through Redis when BENCH_REDIS_URL is set, as in
#      production), driven by scripts/benchapi from this machine;
#   2. pgbench on the same PostgreSQL server, alternated with partnerd: each round
#      runs pgbench's transaction of three INSERTs (what a create must at least do:
#      transaction, history, event), then POST /transactions, then pgbench's select
#      by primary key (what a GET must at least do), then GET /transactions/{id},
#      POST /quotes and GET /transactions?limit=20, 16 clients each, with the load
#      average before each run; then the create at half its flat-out rate (open
#      loop: its p99), the floor's create (below) at that same rate, and pgbench's
#      transaction at that same rate (PostgreSQL's own commit latency, from
#      pgbench's per-transaction log);
#   3. the floor: scripts/benchfloor beside partnerd on the same database, the least
#      a Go HTTP server with pgx can do for a create (the same three rows in one
#      transaction) and a GET (the same read), with nothing else (no authentication,
#      validation, idempotency, rate limit, logging); driven by benchapi right after
#      the pgbench run it compares with, in every round. Between pgbench and the
#      floor is what Go, HTTP over loopback and the load generator cost on these
#      cores; between the floor and partnerd is what partnerd's own work costs;
#   4. partnerd on SQLite (a temp file): create, create at half rate, get;
#   5. a table: each figure (the median over the rounds) beside pgbench's and the
#      floor's in the same rounds, the ratios, the server's CPU time per request;
#      and every run.
#
# Usage: scripts/bench.sh            (BENCH_DURATION=10s, BENCH_ROUNDS=2 by default)
#   BENCH_PGBENCH_SCALE  pgbench's -s for the select baseline (default 10; 1 for a smoke run)
#   BENCH_REDIS_URL      rate limits through this Redis (default: in memory)
#   BENCH_PROFILE=DIR    write a CPU profile (OP.cpu) and the allocations (OP.allocs,
#                        a delta: go tool pprof -sample_index=alloc_space
#                        -diff_base OP.allocs0 OP.allocs) of the server's last run of
#                        each operation to DIR, with the binary (DIR/partnerd) and
#                        the runs (DIR/runs.jsonl): scripts/benchlayers.sh DIR
#                        makes them a table of layers; and each server's heap
#                        when its load is over (postgres.heap, sqlite.heap:
#                        go tool pprof -sample_index=inuse_space)
# Needs: go, psql, pgbench, jq, curl.
set -euo pipefail
cd "$(dirname "$0")/.."

ADMIN_URL=${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
DURATION=${BENCH_DURATION:-10s}
ROUNDS=${BENCH_ROUNDS:-2}
PGB_SCALE=${BENCH_PGBENCH_SCALE:-10}
PROFILE=${BENCH_PROFILE:-}
SECS=${DURATION%s}
for tool in go psql pgbench jq curl; do
	command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done

WORK=$(mktemp -d)
DB="partnerd_bench_$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
PGB="${DB}_pgbench"
SERVER_PID=""
FLOOR_PID=""
cleanup() {
	[ -n "$FLOOR_PID" ] && kill "$FLOOR_PID" 2>/dev/null && wait "$FLOOR_PID" 2>/dev/null || true
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
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
load() { cut -d' ' -f1 /proc/loadavg; }

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(psql "$ADMIN_URL" -Atc 'show server_version') (max_connections $(psql "$ADMIN_URL" -Atc 'show max_connections'))"

# --- pgbench's database ------------------------------------------------------------
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
pgbench -i -q -s "$PGB_SCALE" "$PGB_URL" >/dev/null 2>&1

# pgbench_run NAME ARGS…: one pgbench run as a JSON line like benchapi's.
pgbench_run() {
	local name=$1 l tps
	shift
	l=$(load)
	tps=$(pgbench -n -c 16 -j 2 -T "$SECS" "$@" "$PGB_URL" 2>&1 | grep -Eo 'tps = [0-9.]+' | tail -1 | awk '{print $3}')
	jq -nc --arg op "$name" --argjson rps "${tps:-0}" --argjson load "$l" '{op: $op, rps: $rps, load: $load}' >>"$WORK/runs.jsonl"
}

# pgbench_rate NAME RATE ARGS…: one pgbench run at RATE transactions a second (open
# loop, -R), with its latency percentiles from the per-transaction log (-l: the
# third field is the latency in µs, counted from when the transaction was due, as
# benchapi's open loop counts).
pgbench_rate() {
	local name=$1 rate=$2 l dir out tps failed
	shift 2
	l=$(load)
	dir=$(mktemp -d -p "$WORK")
	out=$(cd "$dir" && pgbench -n -c 16 -j 2 -R "$rate" -T "$SECS" -l "$@" "$PGB_URL" 2>&1)
	tps=$(echo "$out" | grep -Eo 'tps = [0-9.]+' | tail -1 | awk '{print $3}')
	failed=$(echo "$out" | grep -Eo 'number of failed transactions: [0-9]+' | awk '{print $5}')
	cat "$dir"/pgbench_log.* | awk '$3 ~ /^[0-9]+$/ {print $3}' |
		jq -sc --arg op "$name" --argjson rps "${tps:-0}" --argjson rate "$rate" --argjson errors "${failed:-0}" --argjson load "$l" '
			sort as $lat | ($lat | length) as $n
			| def pct(p): if $n == 0 then 0 else $lat[[$n - 1, (p * $n | floor)] | min] / 1000 end;
			{op: $op, rate: $rate, requests: $n, errors: $errors, rps: $rps, p50_ms: pct(0.50), p90_ms: pct(0.90), p99_ms: pct(0.99), max_ms: pct(1), load: $load}' \
		>>"$WORK/runs.jsonl"
	rm -rf "$dir"
}

# --- partnerd ----------------------------------------------------------------------
go build -o "$WORK/partnerd" ./cmd/partnerd
go build -o "$WORK/benchapi" ./scripts/benchapi
go build -o "$WORK/benchfloor" ./scripts/benchfloor
if [ -n "$PROFILE" ]; then mkdir -p "$PROFILE" && cp "$WORK/partnerd" "$PROFILE/partnerd"; fi

# measure DB OP PID BENCHAPI-ARGS…: runs benchapi, adds the load average before the
# run and the server's CPU time per request (user + system time of process PID, the
# server, during the run, from /proc), and with BENCH_PROFILE partnerd's profiles.
measure() {
	local db=$1 op=$2 pid=$3 tck before after l cpu=""
	shift 3
	tck=$(getconf CLK_TCK)
	l=$(load)
	if [ -n "$PROFILE" ] && [ "$pid" = "$SERVER_PID" ]; then
		curl -fs "http://$PPROF/debug/pprof/allocs" -o "$PROFILE/$db.$op.allocs0"
		curl -fs "http://$PPROF/debug/pprof/profile?seconds=$((SECS > 3 ? SECS - 2 : 1))" -o "$PROFILE/$db.$op.cpu" &
		cpu=$!
	fi
	before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	"$WORK/benchapi" "$@" >"$WORK/raw.json"
	after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	if [ -n "$cpu" ]; then
		wait "$cpu"
		curl -fs "http://$PPROF/debug/pprof/allocs" -o "$PROFILE/$db.$op.allocs"
	fi
	jq -c --arg db "$db" --arg op "$op" --argjson ticks "$((after - before))" --argjson tck "$tck" --argjson load "$l" \
		'. + {db: $db, op: $op, load: $load, cpu_ms_per_req: (if .requests > 0 then ($ticks * 1000 / $tck / .requests * 1000 | round) / 1000 else 0 end)}' \
		"$WORK/raw.json" >>"$WORK/runs.jsonl"
}

start_partnerd() { # $1 = name, $2 = DATABASE_URL; sets SERVER_PID, BASE, KEY, PPROF
	local name=$1 url=$2 port
	port=$(free_port)
	PPROF=127.0.0.1:$(free_port)
	export DATABASE_URL=$url APP_ENV=staging LISTEN_ADDR=127.0.0.1:$port PPROF_ADDR=$PPROF \
		RATE_LIMIT_READS=1000000/1s RATE_LIMIT_WRITES=1000000/1s REDIS_URL=${BENCH_REDIS_URL:-}
	"$WORK/partnerd" migrate >/dev/null 2>&1
	KEY=$("$WORK/partnerd" partners create --name bench --json 2>/dev/null | jq -r .api_key)
	"$WORK/partnerd" serve >"$WORK/$name.log" 2>&1 &
	SERVER_PID=$!
	BASE="http://127.0.0.1:$port"
	for _ in $(seq 100); do curl -fs "$BASE/readyz" >/dev/null && break; sleep 0.1; done
}
start_floor() { # scripts/benchfloor on partnerd's DATABASE_URL; sets FLOOR_PID, FLOOR_BASE
	local port
	port=$(free_port)
	"$WORK/benchfloor" -addr "127.0.0.1:$port" >"$WORK/floor.log" 2>&1 &
	FLOOR_PID=$!
	FLOOR_BASE="http://127.0.0.1:$port"
	for _ in $(seq 100); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$FLOOR_BASE/api/v1/partner/transactions/00000000-0000-0000-0000-000000000000")" = 404 ] && break
		sleep 0.1
	done
}
stop_floor() {
	kill "$FLOOR_PID"; wait "$FLOOR_PID" 2>/dev/null || true; FLOOR_PID=""
}
stop_partnerd() { # $1 = name: its resident size after the load (and with BENCH_PROFILE its heap) first
	local mb go
	mb() { awk -v k="$1:" '$1 == k {printf "%.1f", $2 / 1024}' "/proc/$SERVER_PID/status"; }
	# Go's own account (runtime.MemStats, from the heap profile's text form): the
	# live heap, what the heap holds free (not yet given back to the system), stacks.
	go=$(curl -fs "http://$PPROF/debug/pprof/heap?debug=1" | awk '
		/^# HeapInuse/ {inuse = $4} /^# HeapIdle/ {idle = $4} /^# HeapReleased/ {rel = $4} /^# Stack = / {stack = $4} /^# Sys/ {sys = $4}
		END {printf "Go heap in use %.1f MB, free not returned %.1f MB, stacks %.1f MB, from the system %.1f MB", inuse / 1048576, (idle - rel) / 1048576, stack / 1048576, sys / 1048576}')
	echo "$1 server after the load: resident $(mb VmRSS) MB (peak $(mb VmHWM) MB; anonymous $(mb RssAnon) MB, file $(mb RssFile) MB); $go" >>"$WORK/memory.txt"
	if [ -n "$PROFILE" ]; then
		curl -fs "http://$PPROF/debug/pprof/heap" -o "$PROFILE/$1.heap"
		curl -fs "http://$PPROF/debug/pprof/heap?gc=1" -o "$PROFILE/$1.inuse.heap"
	fi
	kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
	unset DATABASE_URL
}
api() { # DB OP [benchapi args…]
	local db=$1 op=$2
	shift 2
	measure "$db" "$op" "$SERVER_PID" -base "$BASE" -key "$KEY" -op "${op%_half}" -clients 16 -duration "$DURATION" "$@"
}
floor() { # OP [benchapi args…]: benchapi's OP against the floor, recorded as postgres floor_OP
	local op=$1
	shift
	measure postgres "floor_$op" "$FLOOR_PID" -base "$FLOOR_BASE" -key floor -op "${op%_half}" -clients 16 -duration "$DURATION" "$@"
}
half_rate() { # half the mean flat-out create rate of DB
	jq -s --arg db "$1" '[.[] | select(.db == $db and .op == "create") | .rps] | add / length / 2 | floor' "$WORK/runs.jsonl"
}

psql "$ADMIN_URL" -qc "CREATE DATABASE $DB" >/dev/null
start_partnerd postgres "$(db_url "$ADMIN_URL" "$DB")"
start_floor # after partnerd: its schema, its one partner, its address sequences
for round in $(seq "$ROUNDS"); do
	echo "round $round of $ROUNDS (load average $(load))" >&2
	api postgres create
	pgbench_run pgbench_insert3 -f "$WORK/insert3.sql"
	floor create
	api postgres get
	pgbench_run pgbench_select -S
	floor get
	api postgres quote
	api postgres list
done
rate=$(half_rate postgres)
api postgres create_half -rate "$rate"
floor create_half -rate "$rate"
pgbench_rate pgbench_insert3_half "$rate" -f "$WORK/insert3.sql"
stop_floor
stop_partnerd postgres

start_partnerd sqlite "sqlite:$WORK/bench.db"
api sqlite create
api sqlite create_half -rate "$(half_rate sqlite)"
api sqlite get
stop_partnerd sqlite

[ -n "$PROFILE" ] && cp "$WORK/runs.jsonl" "$PROFILE/runs.jsonl"

# --- the table ------------------------------------------------------------------------
# median FILTER FIELD: the median of FIELD over the runs that FILTER selects.
median() { jq -s "[.[] | select($1) | .$2] | sort | if length == 0 then null elif length % 2 == 0 then (.[length / 2 - 1] + .[length / 2]) / 2 else .[length / 2 | floor] end | if . == null then . else (. * 100 | round) / 100 end" "$WORK/runs.jsonl"; }
row() { # db op label [pgbench-op] [floor-op]; pgbench's runs count as postgres
	local sel="(.db // \"postgres\") == \"$1\" and .op == \"$2\""
	local rps p50 p99 errs cpu ratio="" base="" of_floor=""
	rps=$(median "$sel" rps | awk '{printf "%d", $1}'); p50=$(median "$sel" p50_ms); p99=$(median "$sel" p99_ms)
	errs=$(jq -s "[.[] | select($sel) | .errors] | add // 0" "$WORK/runs.jsonl"); cpu=$(median "$sel" cpu_ms_per_req)
	if [ -n "${4:-}" ]; then
		base=$(median ".op == \"$4\"" rps | awk '{printf "%d", $1}')
		ratio=$(awk -v a="$rps" -v b="$base" 'BEGIN {printf "**%.0f %%** of %s tps", 100*a/b, b}')
	fi
	if [ -n "${5:-}" ]; then
		base=$(median ".db == \"$1\" and .op == \"$5\"" rps | awk '{printf "%d", $1}')
		of_floor=$(awk -v a="$rps" -v b="$base" 'BEGIN {printf "**%.0f %%** of %s/s", 100*a/b, b}')
	fi
	[ "$cpu" = null ] && cpu="" || cpu="$cpu ms"
	printf '| %s | %s | %s/s | %s ms | %s ms | %s | %s | %s | %s |\n' "$1" "$3" "$rps" "$p50" "$p99" "$errs" "$cpu" "$ratio" "$of_floor"
}
echo
echo "Medians over $ROUNDS rounds, 16 clients, $DURATION per run; pgbench and the floor (scripts/benchfloor) alternated with partnerd in the same minutes."
echo
echo "| database | work | throughput | p50 | p99 | errors | server CPU / request | of pgbench (same rounds) | of the floor (same rounds) |"
echo "|---|---|---|---|---|---|---|---|---|"
row postgres create 'POST /transactions' pgbench_insert3 floor_create
row postgres floor_create 'the floor: net/http + pgx, same rows, nothing else (POST /transactions)' pgbench_insert3
row postgres create_half 'POST /transactions at half that rate (open loop)'
row postgres floor_create_half 'the floor at the same rate (open loop)'
row postgres pgbench_insert3_half "pgbench's 3-INSERT transaction at the same rate (open loop)"
row postgres get 'GET /transactions/{id}' pgbench_select floor_get
row postgres floor_get 'the floor: net/http + pgx, same rows, nothing else (GET /transactions/{id})' pgbench_select
row postgres quote 'POST /quotes'
row postgres list 'GET /transactions?limit=20'
row sqlite create 'POST /transactions'
row sqlite create_half 'POST /transactions at half that rate (open loop)'
row sqlite get 'GET /transactions/{id}'
echo
cat "$WORK/memory.txt"
echo
echo "Every run, in order (load average before it):"
echo
jq -r '"- \(.db // "pgbench") \(.op): \(.rps | floor)/s" + (if .p99_ms then ", p50 \(.p50_ms) ms, p99 \(.p99_ms) ms" else "" end) + ", load \(.load)"' "$WORK/runs.jsonl"
