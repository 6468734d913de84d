#!/usr/bin/env bash
# bench-list.sh — latency of the keyset-paged transaction list on PostgreSQL.
#
# For each size N it:
#   1. creates a throwaway database partnerd_bench_<random> (dropped on exit),
#   2. builds bin/partnerd, migrates, and creates one partner via the CLI,
#   3. seeds N transactions for that partner and N for a neighbour, interleaved in
#      time, with one INSERT … SELECT each, then ANALYZE,
#   4. starts `partnerd serve` on a free 127.0.0.1 port,
#   5. times GET /api/v1/partner/transactions?limit=100 with curl: the median of
#      REPS requests of the first page, walks every page by next_cursor (timed,
#      and checked to return exactly N distinct rows), then the median of REPS
#      requests of the middle page and of the last page,
#   6. prints EXPLAIN (ANALYZE, BUFFERS) of the store's list query for a page in
#      the middle of the data and checks that it is an Index Scan on
#      transactions_partner_created_idx with no Sort node (PASS/FAIL).
# It ends with a table: size, first/middle/last page medians, walk time, plan check,
# and how many rows the middle-page plan read and discarded (Rows Removed by Filter).
#
# Usage:
#   scripts/bench-list.sh [SIZE ...]          # default: 100000 1000000
#
# Environment:
#   BENCH_DATABASE_URL  admin connection (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable);
#                       its role must be allowed to CREATE DATABASE.
#   BENCH_REPS          requests per median (default 20)
#   BENCH_LIMIT         page size (default 100, the API maximum)
#   BENCH_MAX_WALK_SECONDS  stop a walk after this long (default 3600); the table then
#                       says TIMEOUT and the middle/last pages are the deepest reached
#
# Needs: go, psql, curl, jq (apt-get install -y jq).
set -euo pipefail
shopt -s inherit_errexit

cd "$(dirname "$0")/.."

ADMIN_URL=${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
REPS=${BENCH_REPS:-20}
LIMIT=${BENCH_LIMIT:-100}
MAX_WALK=${BENCH_MAX_WALK_SECONDS:-3600}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(100000 1000000)

for tool in go psql curl jq; do
	command -v "$tool" >/dev/null || { echo "bench-list: $tool is required" >&2; exit 1; }
done
for n in "${SIZES[@]}"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench-list: size $n is not a positive integer" >&2; exit 1; }
done

WORK=$(mktemp -d)
DB=""         # the current benchmark database
SERVER_PID="" # the current partnerd serve
RESULTS=()

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

admin_sql() { psql "$ADMIN_URL" -X -q -v ON_ERROR_STOP=1 -At -c "$1"; }

stop_server() {
	if [ -n "$SERVER_PID" ]; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		SERVER_PID=""
	fi
}

drop_db() {
	if [ -n "$DB" ]; then
		admin_sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" || true
		DB=""
	fi
}

cleanup() {
	stop_server
	drop_db
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bench_url NAME: ADMIN_URL with its database replaced by NAME.
bench_url() {
	local base=${ADMIN_URL%%\?*} query=""
	[[ $ADMIN_URL == *\?* ]] && query="?${ADMIN_URL#*\?}"
	echo "${base%/*}/$1$query"
}

free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "bench-list: no free port found" >&2
	return 1
}

# median: the median of the numbers on stdin.
median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# get_page CURSOR OUT: fetch one page into OUT; prints curl's time_total in seconds.
get_page() {
	local url="$BASE_URL/api/v1/partner/transactions?limit=$LIMIT" res code
	[ -n "$1" ] && url+="&cursor=$1"
	res=$(curl -sS -o "$2" -w '%{http_code} %{time_total}' -H "X-API-KEY: $API_KEY" "$url")
	code=${res%% *}
	if [ "$code" != 200 ]; then
		echo "bench-list: GET $url returned $code: $(head -c 500 "$2")" >&2
		return 1
	fi
	echo "${res#* }"
}

# median_ms CURSOR: median latency in ms of REPS requests of one page (after one warm-up).
median_ms() {
	local out="$WORK/page.json"
	get_page "$1" "$out" >/dev/null
	for _ in $(seq 1 "$REPS"); do get_page "$1" "$out"; done | median | awk '{ printf "%.2f", $1 * 1000 }'
}

bench_size() {
	local n=$1 url port pid_json
	DB="partnerd_bench_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
	url=$(bench_url "$DB")
	log "N=$n: database $DB"
	admin_sql "CREATE DATABASE $DB"

	DATABASE_URL=$url bin/partnerd migrate >/dev/null
	pid_json=$(DATABASE_URL=$url bin/partnerd partners create --name Bench --json 2>"$WORK/create.log")
	PARTNER_ID=$(jq -r .partner_id <<<"$pid_json")
	API_KEY=$(jq -r .api_key <<<"$pid_json")
	# A neighbour with as many transactions, interleaved in time: a production
	# database holds many partners, so the list must reach its partner's rows
	# through the partner's index, not through the index of every partner's.
	NEIGHBOUR_ID=$(DATABASE_URL=$url bin/partnerd partners create --name Neighbour --json 2>>"$WORK/create.log" | jq -r .partner_id)

	# Seed: row i gets the timestamp slot i, except that every third row reuses the
	# slot of the row before it, so a third of the rows share a created_at with a
	# neighbour and the list must break the tie by id. Slots are one second apart
	# plus a sub-second fraction, so the cursor must keep microseconds.
	log "N=$n: seeding"
	local t0=$SECONDS
	psql "$url" -X -q -v ON_ERROR_STOP=1 -v partner="$PARTNER_ID" -v neighbour="$NEIGHBOUR_ID" -v n="$n" <<'SQL'
SET synchronous_commit = off;
INSERT INTO transactions (
    id, partner_id, merchant_reference, reference_key, merchant_id, terminal_id, seller_phone,
    crypto_currency, network, crypto_amount, fiat_amount, rate, quote_id,
    deposit_address, address_index, status, created_at, updated_at, expires_at)
SELECT gen_random_uuid(), :'neighbour'::uuid,
       'Other-' || lpad(i::text, 8, '0'), 'other-' || lpad(i::text, 8, '0'), NULL, NULL, NULL,
       'usdt', net, 100, 155000.00, 1550.00, NULL,
       CASE net WHEN 'bep20' THEN '0x' || substr(md5('o' || i::text) || md5('o' || (-i)::text), 1, 40)
                ELSE 'T' || substr(md5('o' || i::text) || md5('o' || (-i)::text), 1, 33) END,
       :n + i, 'completed', at, at, at + interval '30 minutes'
FROM generate_series(1, :n) AS i,
     LATERAL (SELECT CASE WHEN i % 2 = 0 THEN 'bep20' ELSE 'trc20' END AS net) s,
     LATERAL (SELECT timestamptz '2024-01-01 00:00:00.5+00' + i * interval '1 second' AS at) t;
INSERT INTO transactions (
    id, partner_id, merchant_reference, reference_key, merchant_id, terminal_id, seller_phone,
    crypto_currency, network, crypto_amount, fiat_amount, rate, quote_id,
    deposit_address, address_index, status, created_at, updated_at, expires_at)
SELECT gen_random_uuid(), :'partner'::uuid,
       'Bench-' || lpad(i::text, 8, '0'), 'bench-' || lpad(i::text, 8, '0'),
       'merchant-' || (i % 50), 'terminal-' || (i % 500), NULL,
       'usdt', net, amt, round(amt * 1550.00, 2), 1550.00, NULL,
       CASE net WHEN 'bep20' THEN '0x' || substr(md5(i::text) || md5((-i)::text), 1, 40)
                ELSE 'T' || substr(md5(i::text) || md5((-i)::text), 1, 33) END,
       i, 'awaiting_deposit', at, at, at + interval '30 minutes'
FROM generate_series(1, :n) AS i,
     LATERAL (SELECT CASE WHEN i % 2 = 0 THEN 'bep20' ELSE 'trc20' END AS net,
                     (10 + i % 990)::numeric(30, 6) + (i % 1000000) / 1000000.0 AS amt,
                     i - (i % 3 = 0)::int AS slot) s,
     LATERAL (SELECT timestamptz '2024-01-01 00:00:00+00'
                     + slot * interval '1 second'
                     + (slot::bigint * 7919 % 1000000) * interval '1 microsecond' AS at) t;
ANALYZE transactions;
SQL
	log "N=$n: seeded in $((SECONDS - t0))s"

	port=$(free_port)
	BASE_URL="http://127.0.0.1:$port"
	APP_ENV=staging LISTEN_ADDR=127.0.0.1:$port DATABASE_URL=$url \
		bin/partnerd serve >"$WORK/serve.out" 2>"$WORK/serve.log" &
	SERVER_PID=$!
	for _ in $(seq 1 100); do
		curl -sf "$BASE_URL/readyz" >/dev/null 2>&1 && break
		kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; return 1; }
		sleep 0.1
	done
	curl -sf "$BASE_URL/readyz" >/dev/null

	log "N=$n: first page x$REPS"
	local first_ms mid_ms last_ms
	first_ms=$(median_ms "")

	# Walk every page, keeping the cursors of the middle and the last page. One jq
	# per page prints the next cursor first, then the ids of the page.
	log "N=$n: walking all pages"
	local pages=$(((n + LIMIT - 1) / LIMIT)) mid_page cursor="" page=0 rows mid_cursor="" last_cursor=""
	local ids="$WORK/ids" times="$WORK/times" body="$WORK/walk.json" start end walk_s req_s walk_ok="ok"
	mid_page=$(((pages + 1) / 2))
	: >"$ids"
	: >"$times"
	start=$(date +%s.%N)
	while :; do
		page=$((page + 1))
		[ "$page" -eq "$mid_page" ] && mid_cursor=$cursor
		last_cursor=$cursor
		get_page "$cursor" "$body" >>"$times"
		{ read -r cursor; cat >>"$ids"; } < <(jq -r '(.data.next_cursor // ""), .data.data[].id' "$body")
		[ -n "$cursor" ] || break
		if awk -v a="$start" -v b="$(date +%s.%N)" -v m="$MAX_WALK" 'BEGIN { exit !(b - a >= m) }'; then
			walk_ok="TIMEOUT"
			log "N=$n: walk stopped after ${MAX_WALK}s at page $page of $pages"
			last_cursor=$cursor
			[ -n "$mid_cursor" ] || mid_cursor=$cursor
			break
		fi
	done
	end=$(date +%s.%N)
	walk_s=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	req_s=$(awk '{ s += $1 } END { printf "%.1f", s }' "$times")
	rows=$(sort -u "$ids" | wc -l)
	log "N=$n: walked $page pages, $rows distinct rows in ${walk_s}s (${req_s}s inside curl)"
	if [ "$walk_ok" = ok ] && ! { [ "$page" -eq "$pages" ] && [ "$rows" -eq "$n" ] && [ "$(wc -l <"$ids")" -eq "$n" ]; }; then
		walk_ok="BAD"
		log "N=$n: walk returned $(wc -l <"$ids") ids, $rows distinct, over $page pages; want $n over $pages"
	fi

	log "N=$n: middle page and last page x$REPS"
	mid_ms=$(median_ms "$mid_cursor")
	last_ms=$(median_ms "$last_cursor")
	stop_server

	# The store's query for the page after the middle row, as a prepared statement
	# (the driver prepares and caches it, so the planner sees $n, not literals).
	# Five executions first, so the plan cache may settle on a generic plan as it
	# would in the long-running server.
	local plan check="PASS"
	plan=$(psql "$url" -X -q -v ON_ERROR_STOP=1 -At -v partner="$PARTNER_ID" -v off="$((n / 2))" -v lim="$((LIMIT + 1))" <<'SQL'
SELECT created_at AS mid_at, id AS mid_id FROM transactions
WHERE partner_id = :'partner' ORDER BY created_at DESC, id DESC OFFSET :off LIMIT 1 \gset
PREPARE list_page(uuid, timestamptz, uuid) AS
  SELECT *, (SELECT d.status FROM deposits d WHERE d.transaction_id = transactions.id) FROM transactions
  WHERE partner_id = $1 AND (created_at, id) < ($2, $3)
  ORDER BY created_at DESC, id DESC LIMIT :lim;
\o /dev/null
EXECUTE list_page(:'partner', :'mid_at', :'mid_id');
EXECUTE list_page(:'partner', :'mid_at', :'mid_id');
EXECUTE list_page(:'partner', :'mid_at', :'mid_id');
EXECUTE list_page(:'partner', :'mid_at', :'mid_id');
EXECUTE list_page(:'partner', :'mid_at', :'mid_id');
\o
EXPLAIN (ANALYZE, BUFFERS) EXECUTE list_page(:'partner', :'mid_at', :'mid_id');
SQL
)
	echo
	echo "== N=$n: EXPLAIN (ANALYZE, BUFFERS) of the list query after row $((n / 2)) =="
	echo "$plan"
	grep -Eq 'Index Scan( Backward)? using transactions_partner_created_idx' <<<"$plan" || check="FAIL"
	grep -Eq '(^|->  )Sort( |$)' <<<"$plan" && check="FAIL"
	echo "plan check (Index Scan on transactions_partner_created_idx, no Sort): $check"
	# Informational: rows the scan read and discarded because the keyset condition
	# is a Filter rather than an Index Cond (0 when it bounds the index scan).
	local filtered
	filtered=$(sed -n 's/.*Rows Removed by Filter: \([0-9]*\).*/\1/p' <<<"$plan" | head -1)
	filtered=${filtered:-0}
	echo

	drop_db
	RESULTS+=("$(printf '%-8s %9s %10s %8s %7s %7s %6s  %-7s %-4s %s' \
		"$n" "$first_ms" "$mid_ms" "$last_ms" "$walk_s" "$req_s" "$page" "$walk_ok" "$check" "$filtered")")
}

log "building bin/partnerd"
go build -o bin/partnerd ./cmd/partnerd

begin=$SECONDS
for n in "${SIZES[@]}"; do bench_size "$n"; done

echo
echo "GET /api/v1/partner/transactions?limit=$LIMIT: page medians of $REPS requests (ms); walk wall time and time inside curl (s);"
echo "plan = index check of the middle-page query; filtered = its Rows Removed by Filter"
printf '%-8s %9s %10s %8s %7s %7s %6s  %-7s %-4s %s\n' size first_ms middle_ms last_ms walk_s curl_s pages walk plan filtered
for r in "${RESULTS[@]}"; do echo "$r"; done
echo "total ${SECONDS}s (benchmarks $((SECONDS - begin))s)"
