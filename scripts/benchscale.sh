#!/usr/bin/env bash
# benchscale.sh — every read, page and export at two sizes, in the same minutes.
#
#   1. seeds two PostgreSQL databases of the same shape (scripts/benchscale/seed.sql:
#      50 partners, the largest with 22 % of the transactions; 12 months; the status
#      mix; history, deposits and transfers on chain, webhook events and attempts,
#      daily payouts, hourly fills, revenue, the operators' audit): partnerd_scale_small
#      with BENCH_SCALE_SMALL_ROWS transactions (10,000) and partnerd_scale_large with
#      BENCH_SCALE_ROWS (2,000,000; about 10 minutes on 2 cores), each with one
#      INSERT … SELECT a table, keys and indexes built after the rows, then VACUUM
#      ANALYZE (as autovacuum leaves a database in production);
#   2. starts partnerd (built from this tree) on each, with one partner key (the
#      largest partner's) and one operator key made by the CLI;
#   3. runs scripts/benchscale: each partner API read, operator API read, console
#      page and export, asked of both servers in turn (15 times each, fewer for a
#      slow one), printing
#          read=NAME small_p50_ms=… large_p50_ms=… ratio=…
#      (exports are compared at the same number of lines: small_lines, large_lines);
#   4. for every read whose ratio exceeds BENCH_SCALE_MAX_RATIO (1.5), starts a third
#      server on the large database whose connections run auto_explain, replays the
#      read once and prints the plan (EXPLAIN ANALYZE, BUFFERS) of each statement it
#      sent, from the PostgreSQL server log.
#
# Usage: scripts/benchscale.sh          (or make benchscale)
#   BENCH_SCALE_ROWS        transactions in the large database (default 2000000)
#   BENCH_SCALE_SMALL_ROWS  transactions in the small one (default 10000)
#   BENCH_SCALE_REPS        timed requests per read and server (default 15)
#   BENCH_SCALE_ONLY        only the reads whose name matches this regular expression
#   BENCH_SCALE_REUSE=1     keep a database already seeded with the same number of
#                           rows (migrating it: a new index is built on the seeded
#                           rows) instead of seeding it again
#   BENCH_SCALE_DROP=1      drop both databases at the end (they are kept for reuse)
#   BENCH_SCALE_PGLOG       the PostgreSQL server log auto_explain writes to
#                           (default the newest /var/log/postgresql/postgresql-*.log)
#   BENCH_DATABASE_URL      admin connection (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable);
#                           a superuser (the seed turns off foreign-key triggers, and
#                           auto_explain is loaded per connection)
# Needs: go, psql, jq, curl.
set -euo pipefail
cd "$(dirname "$0")/.."

ADMIN_URL=${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
ROWS=${BENCH_SCALE_ROWS:-2000000}
SMALL_ROWS=${BENCH_SCALE_SMALL_ROWS:-10000}
REPS=${BENCH_SCALE_REPS:-15}
MAX_RATIO=${BENCH_SCALE_MAX_RATIO:-1.5}
PGLOG=${BENCH_SCALE_PGLOG:-$(ls -t /var/log/postgresql/postgresql-*.log 2>/dev/null | head -1 || true)}
for tool in go psql jq curl; do
	command -v "$tool" >/dev/null || { echo "benchscale: $tool is required" >&2; exit 1; }
done
for n in "$ROWS" "$SMALL_ROWS"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -ge 5000 ] || { echo "benchscale: $n rows: want a whole number of at least 5000" >&2; exit 1; }
done

WORK=$(mktemp -d)
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
	if [ "${BENCH_SCALE_DROP:-}" = 1 ]; then
		for db in partnerd_scale_small partnerd_scale_large; do
			psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
		done
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
db_url() { # the admin URL with another database name
	echo "$ADMIN_URL" | sed -E "s#/[^/?]*(\?|$)#/$1\1#"
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cli() { # DATABASE_URL CLI-ARGS…: the partnerd command line on a database
	local url=$1
	shift
	DATABASE_URL=$url APP_ENV=staging "$WORK/partnerd" "$@"
}

go build -o "$WORK/partnerd" ./cmd/partnerd
go build -o "$WORK/benchscale" ./scripts/benchscale

# prepare NAME ROWS: a database of ROWS transactions (seeded, or kept with
# BENCH_SCALE_REUSE=1 when it holds as many), its keys, and the side's JSON file.
prepare() {
	local name=$1 rows=$2 db url have="" t0 partner operator pid key
	db=partnerd_scale_$name
	url=$(db_url "$db")
	if [ "${BENCH_SCALE_REUSE:-}" = 1 ]; then
		have=$(psql "$ADMIN_URL" -Atc "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '$db'")
	fi
	if [ "$have" = "benchscale rows=$rows" ]; then
		log "$db: reusing its $rows transactions (migrating)"
		cli "$url" migrate >/dev/null
		pid=$(psql "$url" -Atc "SELECT partner_id FROM transactions GROUP BY partner_id ORDER BY count(*) DESC LIMIT 1")
		key=$(psql "$url" -Atc "SELECT id FROM api_keys WHERE owner_kind = 'partner' AND owner_id = '$pid' AND revoked_at IS NULL ORDER BY created_at DESC LIMIT 1")
		partner=$(cli "$url" partners keys roll --partner "$pid" --key "$key" --overlap 1s --json 2>/dev/null)
		partner=$(jq -c --arg id "$pid" '. + {partner_id: $id}' <<<"$partner")
		operator=$(cli "$url" operators create --name "Bench $(date +%s)" --role viewer,support,treasury,compliance,admin --json 2>/dev/null)
	else
		psql "$ADMIN_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
		psql "$ADMIN_URL" -qc "CREATE DATABASE $db" >/dev/null
		cli "$url" migrate >/dev/null
		partner=$(cli "$url" partners create --name "Largest partner" --json 2>/dev/null)
		operator=$(cli "$url" operators create --name Bench --role viewer,support,treasury,compliance,admin --json 2>/dev/null)
		log "$db: seeding $rows transactions"
		t0=$SECONDS
		psql "$url" -X -q -v n="$rows" -v big="$(jq -r .partner_id <<<"$partner")" -v op="$(jq -r .operator_id <<<"$operator")" \
			-f scripts/benchscale/seed.sql 2>&1 | sed 's/^/    /' >&2
		psql "$url" -X -q -c "VACUUM (ANALYZE)"
		psql "$ADMIN_URL" -qc "COMMENT ON DATABASE $db IS 'benchscale rows=$rows'"
		log "$db: seeded in $((SECONDS - t0)) s ($(psql "$url" -Atc "SELECT pg_size_pretty(pg_database_size(current_database()))"))"
	fi
	jq -n --arg name "$name" --arg db "$url" --argjson p "$partner" --argjson o "$operator" \
		'{name: $name, db: $db, partner_id: $p.partner_id, partner_key: $p.api_key, operator_key: $o.api_key}' >"$WORK/$name.json"
}

# start NAME DATABASE_URL: partnerd serve on it; sets BASE.
start() {
	local name=$1 url=$2 port
	port=$(free_port)
	DATABASE_URL=$url APP_ENV=staging LISTEN_ADDR=127.0.0.1:$port PPROF_ADDR=127.0.0.1:$(free_port) \
		RATE_LIMIT_READS=1000000/1s RATE_LIMIT_WRITES=1000000/1s "$WORK/partnerd" serve >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	BASE="http://127.0.0.1:$port"
	for _ in $(seq 300); do curl -fs "$BASE/readyz" >/dev/null && return; sleep 0.1; done
	echo "benchscale: the $name server did not start:" >&2
	tail -n 20 "$WORK/$name.log" >&2
	exit 1
}

prepare small "$SMALL_ROWS"
prepare large "$ROWS"
for name in small large; do
	jq -r '"\(.name): \(.db | sub(".*/"; "") | sub("[?].*"; "")): " + .partner_id' "$WORK/$name.json" >&2
	psql "$(jq -r .db "$WORK/$name.json")" -Atc "SELECT 'transactions ' || (SELECT count(*) FROM transactions) || ', of the largest partner ' ||
		(SELECT count(*) FROM transactions WHERE partner_id = '$(jq -r .partner_id "$WORK/$name.json")') ||
		', history ' || (SELECT count(*) FROM status_history) || ', events ' || (SELECT count(*) FROM events) ||
		', attempts ' || (SELECT count(*) FROM webhook_attempts) || ', audit ' || (SELECT count(*) FROM operator_audit) ||
		', payouts ' || (SELECT count(*) FROM operator_batches WHERE kind = 'payout') ||
		', fills ' || (SELECT count(*) FROM operator_batches WHERE kind = 'fill')" | sed 's/^/    /' >&2
done

start small "$(jq -r .db "$WORK/small.json")"
jq --arg b "$BASE" '.base = $b' "$WORK/small.json" >"$WORK/small.tmp" && mv "$WORK/small.tmp" "$WORK/small.json"
start large "$(jq -r .db "$WORK/large.json")"
jq --arg b "$BASE" '.base = $b' "$WORK/large.json" >"$WORK/large.tmp" && mv "$WORK/large.tmp" "$WORK/large.json"

echo "== $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); small: $SMALL_ROWS transactions, large: $ROWS"
"$WORK/benchscale" -small "$WORK/small.json" -large "$WORK/large.json" -reps "$REPS" -out "$WORK/results.jsonl" \
	${BENCH_SCALE_ONLY:+-only "$BENCH_SCALE_ONLY"}

over=$(jq -rs --argjson max "$MAX_RATIO" '[.[] | select(.ratio > $max) | .read] | join(",")' "$WORK/results.jsonl")
errors=$(jq -s '[.[] | select(.error)] | length' "$WORK/results.jsonl")
echo "== $(jq -s 'length' "$WORK/results.jsonl") reads, $errors failed, over ${MAX_RATIO}×: ${over:-none}"
if [ -n "$over" ]; then
	if [ -z "$PGLOG" ] || [ ! -r "$PGLOG" ]; then
		echo "benchscale: no readable PostgreSQL log (BENCH_SCALE_PGLOG) for the plans" >&2
	else
		large_db=$(jq -r .db "$WORK/large.json")
		explain_url="$large_db&session_preload_libraries=auto_explain&auto_explain.log_min_duration=0"
		explain_url+="&auto_explain.log_analyze=on&auto_explain.log_buffers=on&auto_explain.log_nested_statements=on"
		[[ $large_db == *\?* ]] || explain_url=${explain_url/&/?}
		start explain "$explain_url"
		echo
		echo "== plans on the large database (auto_explain of each statement the read sent)"
		"$WORK/benchscale" -small "$WORK/small.json" -large "$WORK/large.json" -explain "$over" -explain-base "$BASE" -pglog "$PGLOG"
	fi
fi
[ "$errors" = 0 ]
