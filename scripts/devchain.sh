#!/usr/bin/env bash
# make devchain [NETWORK=bep20|trc20]: the development chain (cmd/devchain) and the
# service watching it, in one terminal; Ctrl-C stops both.
#
# The service's chain settings are the ones devchain prints: devchain writes them to a
# file (--env-file) and the service starts from it, so nothing here repeats them. The
# chain lives in memory, so the service gets a fresh embedded database each time
# (data/devchain-NETWORK.db, replaced at each start), and prints the demo partner's key.
#
# Settings: NETWORK (or the first argument; default bep20); LISTEN_ADDR (the service's
# address, default :8080) and DEVCHAIN_PORT (the chain's, default 8545; bin/devchain
# send follows it); PARTNERD and DEVCHAIN (the binaries, default bin/partnerd and
# bin/devchain, which make devchain builds); DEVCHAIN_DB (the database file).
set -euo pipefail
network=${1:-${NETWORK:-bep20}}
case $network in
  bep20 | trc20) ;;
  *) echo "devchain.sh: NETWORK must be bep20 or trc20, not \"$network\"" >&2; exit 2 ;;
esac
partnerd=${PARTNERD:-bin/partnerd}
devchain=${DEVCHAIN:-bin/devchain}
db=${DEVCHAIN_DB:-data/devchain-$network.db}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/devchain.XXXXXX")
chain_pid="" serve_pid=""
stop() {
  trap - EXIT INT TERM
  for pid in $serve_pid $chain_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$devchain" --network "$network" --env-file "$tmp/chain.env" &
chain_pid=$!
until [ -s "$tmp/chain.env" ]; do
  if ! kill -0 "$chain_pid" 2>/dev/null; then
    echo "devchain.sh: devchain stopped before it was ready (is port ${DEVCHAIN_PORT:-8545} taken? set DEVCHAIN_PORT)" >&2
    exit 1
  fi
  sleep 0.1
done

mkdir -p "$(dirname "$db")"
rm -f "$db" "$db-wal" "$db-shm"
(
  set -a
  # shellcheck source=/dev/null
  . "$tmp/chain.env"
  set +a
  # A receiver on this machine (bin/partnerd listen) may take webhooks, as under make run.
  DATABASE_URL="sqlite:$db" WEBHOOK_ALLOW_PRIVATE_URLS=true exec "$partnerd" serve
) &
serve_pid=$!

# Either one ending (a taken port, a crash) stops the other.
status=0
wait -n "$chain_pid" "$serve_pid" || status=$?
exit "$status"
