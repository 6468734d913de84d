#!/usr/bin/env bash
# Makes sure a Redis server answers for the test suite and prints the
# TEST_REDIS_URL to use. Order:
#   1. TEST_REDIS_URL (or the default redis://127.0.0.1:6379/0) answers: use it.
#   2. Otherwise, if redis-server is installed, start a throwaway server on a free
#      port of 127.0.0.1 (no persistence, its files under ${TMPDIR:-/tmp}) and print
#      its URL (stopped by scripts/test-redis.sh stop DIR, which `make test` calls).
#   3. Otherwise fail loudly: the rate-limit suites need Redis and never skip it.
set -euo pipefail

default_url="redis://127.0.0.1:6379/0"
url="${TEST_REDIS_URL:-$default_url}"

# host_port prints "HOST PORT" of a redis:// URL (default port 6379).
host_port() {
  local rest=${1#*://}
  rest=${rest##*@}   # drop user:password@
  rest=${rest%%/*}   # drop /db
  local host=${rest%%:*} port=6379
  [ "$rest" != "$host" ] && port=${rest##*:}
  echo "$host $port"
}

# answers sends PING and expects +PONG (redis-cli when installed, else bash's /dev/tcp).
answers() {
  local host port
  read -r host port < <(host_port "$1")
  if command -v redis-cli >/dev/null 2>&1; then
    [ "$(redis-cli -u "$1" ping 2>/dev/null)" = "PONG" ]
  else
    local reply
    reply=$(timeout 3 bash -c "exec 3<>/dev/tcp/$host/$port && printf 'PING\r\n' >&3 && head -c 5 <&3" 2>/dev/null) || return 1
    [ "$reply" = "+PONG" ]
  fi
}

if [ "${1:-}" = "stop" ]; then
  dir="${2:-}"
  { [ -n "$dir" ] && [ -d "$dir" ]; } || exit 0
  if [ -f "$dir/redis.pid" ]; then
    pid=$(cat "$dir/redis.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$dir"
  exit 0
fi

if answers "$url"; then
  echo "TEST_REDIS_URL=$url"
  exit 0
fi

server=$(command -v redis-server || true)
if [ -z "$server" ]; then
  echo "Redis does not answer at $url and redis-server is not installed." >&2
  echo "Start Redis or set TEST_REDIS_URL; the rate-limit tests require Redis." >&2
  exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/partnerd-redis.XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 56379)
"$server" --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir" \
  --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/server.log" >/dev/null
url="redis://127.0.0.1:$port/0"
for _ in $(seq 50); do answers "$url" && break; sleep 0.1; done
answers "$url" || { echo "the throwaway Redis server did not start; see $dir/server.log" >&2; exit 1; }
echo "TEST_REDIS_URL=$url"
echo "TEST_REDIS_DIR=$dir"
