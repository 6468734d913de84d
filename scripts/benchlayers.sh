#!/usr/bin/env bash
# benchlayers.sh — where a server's CPU went, by layer, from the profiles
# scripts/bench.sh writes with BENCH_PROFILE=DIR.
#
#   scripts/benchlayers.sh DIR [RUN…]     (RUN: postgres.get, sqlite.create, …; default all)
#
# Each sample is counted once, in the first layer of this list its stack passes
# through (innermost first), so the shares add up to 100 %:
#
#   statements       the database driver, database/sql and GORM
#   rate limit       the limiter (a lease, or Redis's round trip)
#   authentication   the API key's partner (partners.Service.Authenticate)
#   validation       the request checks and kin-openapi
#   encoding         JSON in and out (encoding/json, the generated response writers)
#   logging          the access log (log/slog)
#   metrics/tracing  Prometheus and OpenTelemetry
#   use case         the rest of the handler (the generated strict handler's target)
#   HTTP, routing    the rest of a request: net/http, Echo, the other middleware
#   outside requests garbage collection's workers, the scheduler, background jobs
#
# and, from the allocation profiles, the bytes and objects allocated per request
# (all of the server's allocations during the run, divided by its requests: needs
# DIR/runs.jsonl, which bench.sh writes there too).
set -euo pipefail
DIR=$1
shift
runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
	for f in "$DIR"/*.cpu; do runs+=("$(basename "$f" .cpu)"); done
fi
layers=(
	"statements|database/sql\.|jackc/pgx|mattn/go-sqlite3|gorm\.io/"
	"rate limit|partnerd/internal/ratelimit\.\(\*"
	"authentication|partners\.\(\*Service\)\.Authenticate"
	"validation|kin-openapi|httpkit\.(decodeBody|textProblem|treeTextProblem|checkQuery|checkParams)"
	"encoding|encoding/json|Visit[A-Za-z]*Response|runtime\.BindJSONValue"
	"logging|log/slog"
	"metrics/tracing|prometheus/client_golang|go\.opentelemetry\.io/otel/|otelecho\.spanNameFormatter|propagation"
	"use case|partnerd/internal/(httpapi|operatorapi)\.\(\*Server\)\."
	"HTTP, routing|net/http\.\(\*conn\)\.serve"
)
# seconds FOCUS IGNORE PROFILE: the seconds of samples through FOCUS and not IGNORE.
seconds() {
	local args=(-top -nodefraction=0 -nodecount=1000000)
	[ -n "$1" ] && args+=("-focus=$1")
	[ -n "$2" ] && args+=("-ignore=$2")
	go tool pprof "${args[@]}" "$DIR/partnerd" "$3" 2>/dev/null |
		awk '/^Showing nodes accounting for/ { v = $5; sub(/,$/, "", v); u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v); print (u == "ms" ? v / 1000 : v) }'
}
total() {
	go tool pprof -top -nodecount=1 "$DIR/partnerd" "$1" 2>/dev/null |
		awk '/Total samples/ { for (i = 1; i <= NF; i++) if ($i == "=") v = $(i+1); u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v); print (u == "ms" ? v / 1000 : v) }'
}
header="| run | CPU sampled"
for l in "${layers[@]}"; do header+=" | ${l%%|*}"; done
echo "$header | outside requests | allocated / request |"
sep="|---|---"
for _ in "${layers[@]}"; do sep+="|---"; done
echo "$sep|---|---|"
for run in "${runs[@]}"; do
	prof="$DIR/$run.cpu"
	t=$(total "$prof")
	line="| $run | ${t} s"
	ignore=""
	for l in "${layers[@]}"; do
		re=${l#*|}
		s=$(seconds "$re" "$ignore" "$prof")
		line+=" | $(awk -v s="${s:-0}" -v t="$t" 'BEGIN { printf "%.0f %%", 100 * s / t }')"
		ignore=${ignore:+$ignore|}$re
	done
	rest=$(seconds "" "$ignore" "$prof")
	line+=" | $(awk -v s="${rest:-0}" -v t="$t" 'BEGIN { printf "%.0f %%", 100 * s / t }')"
	alloc="–"
	if [ -f "$DIR/$run.allocs" ] && [ -f "$DIR/runs.jsonl" ]; then
		db=${run%%.*} op=${run#*.}
		n=$(jq -s --arg db "$db" --arg op "$op" '[.[] | select(.db == $db and .op == $op)] | last | .requests // 0' "$DIR/runs.jsonl")
		bytes=$(go tool pprof -sample_index=alloc_space -top -nodefraction=0 -nodecount=1000000 -diff_base "$DIR/$run.allocs0" "$DIR/partnerd" "$DIR/$run.allocs" 2>/dev/null |
			awk '/^Showing nodes accounting for/ { v = $5; sub(/,$/, "", v); u = v; sub(/[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v); m = (u == "GB" ? 1e9 : u == "MB" ? 1e6 : u == "kB" ? 1e3 : 1); print v * m }')
		objs=$(go tool pprof -sample_index=alloc_objects -top -nodefraction=0 -nodecount=1000000 -diff_base "$DIR/$run.allocs0" "$DIR/partnerd" "$DIR/$run.allocs" 2>/dev/null |
			awk '/^Showing nodes accounting for/ { v = $5; sub(/,$/, "", v); m = 1; if (v ~ /k$/) m = 1e3; if (v ~ /M$/) m = 1e6; sub(/[kM]$/, "", v); print v * m }')
		[ "$n" -gt 0 ] && alloc=$(awk -v b="${bytes:-0}" -v o="${objs:-0}" -v n="$n" 'BEGIN { printf "%.1f KB, %.0f objects", b / n / 1000, o / n }')
	fi
	echo "$line | $alloc |"
done
