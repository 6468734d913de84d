#!/usr/bin/env bash
# bench-webhooks.sh — webhook delivery throughput and commit-to-delivery delay on
# PostgreSQL, with two server instances sharing one database.
#
# For each job poll interval it:
#   1. creates a throwaway database partnerd_bench_<random> (dropped on exit),
#   2. migrates it and creates one partner via the CLI (bin/partnerd is built once),
#   3. starts two `partnerd serve` on free 127.0.0.1 ports (APP_ENV=staging, the same
#      DATABASE_URL and JOB_POLL_INTERVAL, WEBHOOK_ALLOW_PRIVATE_URLS=true for the
#      loopback receiver) and waits for /readyz,
#   4. runs scripts/benchwebhooks: a local receiver registered with
#      PUT /webhooks/endpoint, and either a rate-limited load driver creating
#      transactions (one transaction.created event each) round-robin over both
#      instances, or (BENCH_DRAIN) a backlog of pending events released at once by
#      enabling the endpoint; it waits for every event to arrive (bounded) and
#      prints events sent, delivered, duplicates, concurrent duplicates, throughput
#      and (rate mode) p50/p90/p99/max delay,
#   5. prints the CPU time of each server, of the database's backends and the
#      database transactions and rows written per delivery, how busy the machine was
#      during the run, and what the database recorded (events by publish status,
#      attempts, River delivery jobs by state, insert-to-start time and the
#      instance that ran them).
# It ends with a table, one row per poll interval.
#
# On PostgreSQL a committed delivery job wakes the workers by LISTEN/NOTIFY, so the
# poll interval only bounds retries; the delay is the notification and fetch
# cooldowns (20 ms each) plus the work.
#
# Usage:
#   scripts/bench-webhooks.sh
#
# Environment:
#   BENCH_DATABASE_URL     admin connection (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable);
#                          its role must be allowed to CREATE DATABASE.
#   BENCH_POLL_INTERVALS   JOB_POLL_INTERVAL values, one run each (default "default";
#                          "default" leaves it unset, i.e. the configured default of 200ms)
#   BENCH_RATE             target events (creates) per second (default 200)
#   BENCH_DURATION         load duration per run (default 25s)
#   BENCH_CONCURRENCY      creates in flight at most (default 64)
#   BENCH_WAIT             how long to wait for the last deliveries (default 60s)
#   BENCH_HOLD             how long the receiver holds each delivery before its 200 (default 0s)
#   BENCH_DRAIN            throughput mode: instead of the rate-limited creates, insert this many pending
#                          events with the endpoint disabled, enable it, and measure how fast both
#                          instances deliver them (deliveries/s sustained); BENCH_RATE/DURATION unused
#   BENCH_PPROF            a directory: serve net/http/pprof on each instance (PPROF_ADDR) and save a CPU
#                          profile of instance 1 taken over the first BENCH_PPROF_SECONDS (default 10) of the run
#   BENCH_PARTNERD         a partnerd binary to benchmark instead of building bin/partnerd (to compare builds)
#   BENCH_LOGS             a directory to copy the servers' logs into at the end (default: none)
#
# Needs: go, psql, curl, jq.
set -euo pipefail
shopt -s inherit_errexit

cd "$(dirname "$0")/.."

ADMIN_URL=${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
read -r -a POLLS <<<"${BENCH_POLL_INTERVALS:-default}"
RATE=${BENCH_RATE:-200}
DURATION=${BENCH_DURATION:-25s}
CONCURRENCY=${BENCH_CONCURRENCY:-64}
WAIT=${BENCH_WAIT:-60s}
HOLD=${BENCH_HOLD:-0s}
DRAIN=${BENCH_DRAIN:-0}
PPROF_DIR=${BENCH_PPROF:-}
PPROF_SECONDS=${BENCH_PPROF_SECONDS:-10}

for tool in go psql curl jq; do
	command -v "$tool" >/dev/null || { echo "bench-webhooks: $tool is required" >&2; exit 1; }
done
[ ${#POLLS[@]} -gt 0 ] || { echo "bench-webhooks: BENCH_POLL_INTERVALS is empty" >&2; exit 1; }

WORK=$(mktemp -d)
DB=""          # the current benchmark database
SERVER_PIDS=() # the current partnerd serve processes
RESULTS=()

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

admin_sql() { psql "$ADMIN_URL" -X -q -v ON_ERROR_STOP=1 -At -c "$1"; }

stop_servers() {
	local pid
	for pid in "${SERVER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${SERVER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	SERVER_PIDS=()
}

drop_db() {
	if [ -n "$DB" ]; then
		admin_sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" || true
		DB=""
	fi
}

cleanup() {
	stop_servers
	if [ -n "${BENCH_LOGS:-}" ]; then mkdir -p "$BENCH_LOGS" && cp "$WORK"/serve-*.log "$BENCH_LOGS"/ 2>/dev/null || true; fi
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

# free_port [EXCEPT]: a port on 127.0.0.1 nothing listens on (other than EXCEPT).
free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 20000))
		[ "$p" = "${1:-}" ] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "bench-webhooks: no free port found" >&2
	return 1
}

# cpu_ticks PID: user+system clock ticks the process has used.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# machine_ticks: "busy total" clock ticks of all CPUs since boot.
machine_ticks() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }

bench_poll() {
	local poll=$1 label url key json port1 port2 i pid out
	label="JOB_POLL_INTERVAL=$poll"
	[ "$poll" = default ] && label="JOB_POLL_INTERVAL default (200ms)"
	DB="partnerd_bench_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
	url=$(bench_url "$DB")
	log "$label: database $DB"
	admin_sql "CREATE DATABASE $DB"

	DATABASE_URL=$url "$PARTNERD" migrate >/dev/null
	json=$(APP_ENV=staging DATABASE_URL=$url "$PARTNERD" partners create --name Bench --json 2>"$WORK/create.log")
	key=$(jq -r .api_key <<<"$json")

	port1=$(free_port)
	port2=$(free_port "$port1")
	# The receiver listens on loopback, which staging refuses unless told otherwise.
	local -a env=(APP_ENV=staging DATABASE_URL="$url" WEBHOOK_ALLOW_PRIVATE_URLS=true)
	[ "$poll" = default ] || env+=(JOB_POLL_INTERVAL="$poll")
	local -a pprof=()
	for port in "$port1" "$port2"; do
		pprof=()
		[ -z "$PPROF_DIR" ] || pprof=(PPROF_ADDR="127.0.0.1:$((port + 1))")
		env "${env[@]}" "${pprof[@]}" LISTEN_ADDR="127.0.0.1:$port" \
			"$PARTNERD" serve >"$WORK/serve-$port.out" 2>"$WORK/serve-$port.log" &
		SERVER_PIDS+=($!)
	done
	for port in "$port1" "$port2"; do
		for _ in $(seq 1 100); do
			curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
			for pid in "${SERVER_PIDS[@]}"; do
				kill -0 "$pid" 2>/dev/null || { tail -n 20 "$WORK"/serve-*.log >&2; return 1; }
			done
			sleep 0.1
		done
		curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { tail -n 20 "$WORK/serve-$port.log" >&2; return 1; }
	done

	local -a cpu0=() m0 m1 pgpids=() pg0=() db0 db1
	for pid in "${SERVER_PIDS[@]}"; do cpu0+=("$(cpu_ticks "$pid")"); done
	read -r -a m0 < <(machine_ticks)
	local -a mode=(-rate "$RATE" -duration "$DURATION")
	if [ "$DRAIN" -gt 0 ]; then
		mode=(-drain "$DRAIN" -db "$url")
		log "$label: draining $DRAIN pending events through 127.0.0.1:$port1 and 127.0.0.1:$port2"
	else
		log "$label: $RATE events/s for $DURATION over 127.0.0.1:$port1 and 127.0.0.1:$port2"
	fi
	# The database's side: its backends' CPU (those connected now; the pools are
	# warm) and its transaction count.
	mapfile -t pgpids < <(admin_sql "SELECT pid FROM pg_stat_activity WHERE datname = '$DB'")
	for pid in "${pgpids[@]}"; do pg0+=("$(cpu_ticks "$pid")"); done
	read -r -a db0 < <(admin_sql "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database WHERE datname = '$DB'" | tr '|' ' ')
	out="$WORK/result.txt"
	local prof_pid=""
	if [ -n "$PPROF_DIR" ]; then
		mkdir -p "$PPROF_DIR"
		curl -s -o "$PPROF_DIR/cpu-$poll-$DRAIN.pprof" "http://127.0.0.1:$((port1 + 1))/debug/pprof/profile?seconds=$PPROF_SECONDS" &
		prof_pid=$!
	fi
	if ! bin/benchwebhooks -api "http://127.0.0.1:$port1,http://127.0.0.1:$port2" -key "$key" \
		"${mode[@]}" -concurrency "$CONCURRENCY" -wait "$WAIT" -hold "$HOLD" \
		-label "$label" >"$out"; then
		tail -n 20 "$WORK"/serve-*.log >&2
		return 1
	fi
	read -r -a m1 < <(machine_ticks)
	[ -z "$prof_pid" ] || wait "$prof_pid" || true
	read -r -a db1 < <(admin_sql "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database WHERE datname = '$DB'" | tr '|' ' ')
	echo
	grep -v '^RESULT ' "$out"

	local hz cpus
	hz=$(getconf CLK_TCK)
	cpus=$(nproc)
	printf '%-26s' "server CPU"
	i=0
	for pid in "${SERVER_PIDS[@]}"; do
		awk -v a="${cpu0[$i]}" -v b="$(cpu_ticks "$pid")" -v hz="$hz" -v n=$((i + 1)) \
			'BEGIN { printf "instance %d %.1fs  ", n, (b - a) / hz }'
		i=$((i + 1))
	done
	awk -v b0="${m0[0]}" -v t0="${m0[1]}" -v b1="${m1[0]}" -v t1="${m1[1]}" -v n="$cpus" \
		'BEGIN { printf "(machine %.0f%% busy over %d CPUs during the run)\n", 100 * (b1 - b0) / (t1 - t0), n }'
	# Backends connected since the start count whole (pools grow under load).
	local pgticks=0 delivered j now_pids
	mapfile -t now_pids < <(admin_sql "SELECT pid FROM pg_stat_activity WHERE datname = '$DB'")
	for pid in "${now_pids[@]}"; do
		local base=0
		for j in "${!pgpids[@]}"; do [ "${pgpids[$j]}" = "$pid" ] && base=${pg0[$j]}; done
		pgticks=$((pgticks + $(cpu_ticks "$pid") - base))
	done
	delivered=$(sed -n 's/^RESULT .*delivered=\([0-9]*\).*/\1/p' "$out")
	i=0
	local srvticks=0
	for pid in "${SERVER_PIDS[@]}"; do
		srvticks=$((srvticks + $(cpu_ticks "$pid") - cpu0[i]))
		i=$((i + 1))
	done
	awk -v s="$srvticks" -v p="$pgticks" -v hz="$hz" -v d="${delivered:-0}" -v np="${#now_pids[@]}" \
		-v x="$((db1[0] - db0[0]))" -v t="$((db1[1] - db0[1]))" 'BEGIN {
		if (d == 0) d = 1
		printf "per delivery              servers %.2f ms CPU, PostgreSQL %.2f ms CPU (%d backends), %.1f transactions, %.1f rows written\n",
			1000 * s / hz / d, 1000 * p / hz / d, np, x / d, t / d }'
	[ "$DRAIN" -gt 0 ] || echo "(per delivery here includes each event's create: the servers also served the creates)"
	stop_servers

	echo "-- database --"
	psql "$url" -X -q -v ON_ERROR_STOP=1 -P footer=off <<'SQL'
SELECT type, publish_status, count(*) AS events, sum(attempts) AS attempts
  FROM events GROUP BY 1, 2 ORDER BY 1, 2;
SELECT state, count(*) AS delivery_jobs, sum(attempt) AS job_attempts,
       round(avg(extract(epoch FROM attempted_at - created_at)) * 1000) AS avg_ms_insert_to_start,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM attempted_at - created_at)) * 1000)::numeric) AS p50_ms,
       round((percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM attempted_at - created_at)) * 1000)::numeric) AS p99_ms
  FROM river_job WHERE kind = 'deliver_webhook_event' GROUP BY 1 ORDER BY 1;
SELECT 'instance ' || dense_rank() OVER (ORDER BY attempted_by[1]) AS ran_by, count(*) AS delivery_jobs
  FROM river_job WHERE kind = 'deliver_webhook_event' GROUP BY attempted_by[1] ORDER BY 1;
SQL
	echo

	local r
	r=$(sed -n 's/^RESULT //p' "$out")
	RESULTS+=("$(awk -v label="$poll" '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "%-9s %6s %9s %4s %7s %8s %10s %9s %9s %9s %9s\n", label, v["sent"], v["delivered"], v["dup"], v["concdup"],
			v["offered"], v["thr"], v["p50"], v["p90"], v["p99"], v["max"]
	}' <<<"$r")")
	drop_db
}

# How busy the machine is before the benchmark: other work skews the results.
read -r -a idle0 < <(machine_ticks)
sleep 1
read -r -a idle1 < <(machine_ticks)
BUSY_BEFORE=$(awk -v b0="${idle0[0]}" -v t0="${idle0[1]}" -v b1="${idle1[0]}" -v t1="${idle1[1]}" \
	'BEGIN { printf "%.0f", 100 * (b1 - b0) / (t1 - t0) }')
log "machine $BUSY_BEFORE% busy over $(nproc) CPUs before the benchmark"
[ "$BUSY_BEFORE" -lt 20 ] || log "WARNING: the machine is already busy; results will be lower than on an idle machine"

PARTNERD=${BENCH_PARTNERD:-bin/partnerd}
log "building $([ -n "${BENCH_PARTNERD:-}" ] || echo "bin/partnerd and ")bin/benchwebhooks"
[ -n "${BENCH_PARTNERD:-}" ] || go build -o bin/partnerd ./cmd/partnerd
go build -o bin/benchwebhooks ./scripts/benchwebhooks

begin=$SECONDS
for poll in "${POLLS[@]}"; do bench_poll "$poll"; done

if [ "$DRAIN" -gt 0 ]; then
	echo "Summary: $DRAIN pending events released at once, two instances, one PostgreSQL database."
	echo "sent/s = deliveries per second between the 10th and 90th percentile arrival; deliv/s = delivered ÷ (enable to last arrival)."
else
	echo "Summary: target $RATE events/s for $DURATION, two instances, one PostgreSQL database."
	echo "sent/s = creates (events) per second the API sustained; deliv/s = delivered ÷ (first create to last arrival);"
fi
echo "delay = arrival at the receiver − the event's created_at (taken when the create's DB transaction begins, so an upper bound"
echo "of commit-to-delivery; the per-run '201→receiver' line is the lower bound)."
echo "machine $BUSY_BEFORE% busy over $(nproc) CPUs before the benchmark."
printf '%-9s %6s %9s %4s %7s %8s %10s %9s %9s %9s %9s\n' poll sent delivered dup concdup sent/s deliv/s p50 p90 p99 max
for r in "${RESULTS[@]}"; do echo "$r"; done
echo "total ${SECONDS}s (benchmarks $((SECONDS - begin))s)"
