#!/usr/bin/env bash
# conformance.sh — `make conformance`: the conformance check a QA team runs, against
# a service started here, as CI runs it after the smoke runs.
#
#   1. creates an operator with the CLI on a fresh embedded SQLite database in a
#      temporary directory (bin/partnerd is built by make), holding the roles the
#      check needs to exercise every operation as permitted: admin, treasury and
#      compliance (treasury is required; without admin or compliance the
#      operations needing them are checked as the 403 they must answer),
#   2. starts `bin/partnerd serve` on that database (staging, on a free 127.0.0.1
#      port), which creates the demo partner and prints its sandbox key,
#   3. runs `bin/partnerd conformance` with that key and the operator key (passed
#      in PARTNERD_API_KEY and PARTNERD_OPERATOR_KEY, not on the command line;
#      CONFORMANCE_FLAGS adds flags, e.g. --json),
#   4. stops the service (SIGTERM) and removes the directory.
#
# The service runs with this environment: APPROVALS=payout,fill,… (staging's
# default is none) makes it hold those actions for a second operator, which the
# check then verifies as 202 proposals and withdraws.
#
# Exits with the check's status: non-zero on any violation.
set -euo pipefail
cd "$(dirname "$0")/.."

PARTNERD=${PARTNERD:-bin/partnerd}
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
	if [ -n "$SERVER_PID" ]; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port: a port on 127.0.0.1 nothing listens on.
free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "conformance: no free port found" >&2
	return 1
}

export APP_ENV=staging DATABASE_URL="sqlite:$WORK/partnerd.db"
op_key=$("$PARTNERD" operators create --name "Conformance check" --role admin,treasury,compliance --json 2>"$WORK/operator.log" | jq -r .api_key)
[ -n "$op_key" ] && [ "$op_key" != null ] || { cat "$WORK/operator.log" >&2; exit 1; }

port=$(free_port)
LISTEN_ADDR="127.0.0.1:$port" "$PARTNERD" serve >"$WORK/serve.out" 2>"$WORK/serve.log" &
SERVER_PID=$!
for _ in $(seq 1 100); do
	curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
	kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 20 "$WORK/serve.log" >&2; exit 1; }
	sleep 0.1
done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { echo "conformance: the service did not get ready" >&2; tail -n 20 "$WORK/serve.log" >&2; exit 1; }
key=$(grep -oE 'sk_sandbox_[A-Za-z0-9_-]+' "$WORK/serve.out" | head -n 1)
[ -n "$key" ] || { echo "conformance: the service printed no demo key" >&2; cat "$WORK/serve.out" >&2; exit 1; }

echo "== partnerd conformance --base-url http://127.0.0.1:$port (demo partner's sandbox key, an operator key)" >&2
# shellcheck disable=SC2086 # CONFORMANCE_FLAGS is a list of flags
PARTNERD_API_KEY=$key PARTNERD_OPERATOR_KEY=$op_key "$PARTNERD" conformance --base-url "http://127.0.0.1:$port" ${CONFORMANCE_FLAGS:-}
