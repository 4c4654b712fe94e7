#!/usr/bin/env bash
# MCP server tests (issue 27): the official MCP Python SDK (tests/mcp/requirements.txt, pinned)
# drives dsa's two MCP transports against a standalone dsa on the registry simulator (dsa-sim):
# Streamable HTTP at /mcp (served by `dsa serve`) and stdio (`dsa mcp`, started by the SDK on the
# same configuration and store). See tests/mcp/test_mcp.py for what is checked.
#
# Usage: .ci/mcp.sh [--bench N] [TEST-NAME-FILTER…]
#   --bench N   also time N cached check_domain round trips over MCP against the REST call
#               (tests/mcp/bench.py) and print the ratio
# Environment: MCP_VENV (default $CARGO_TARGET_DIR/mcp-venv), CARGO_TARGET_DIR (default target),
# MCP_DSA (the dsa binary to test, default the debug build; e.g. target/release/dsa for the bench).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

bench=""
filters=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) bench="$2"; shift 2 ;;
    *) filters+=("$1"); shift ;;
  esac
done

target="${CARGO_TARGET_DIR:-$repo/target}"
venv="${MCP_VENV:-$target/mcp-venv}"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# --- The client: a venv with the pinned SDK (reused between runs when up to date).
reqs=tests/mcp/requirements.txt
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$reqs" "$venv/requirements.txt"; then
  echo "mcp: installing $reqs into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$reqs"
  cp "$reqs" "$venv/requirements.txt"
fi

# --- Binaries: dsa and the registry simulator.
cargo build --locked --quiet -p dsa-api -p dsa-tests --bins
dsa="${MCP_DSA:-$target/debug/dsa}"
sim="$target/debug/dsa-sim"

wait_for() { # file-or-url, what, seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    if [[ "$1" == http* ]]; then curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    elif [ -s "$1" ]; then return 0; fi
    sleep 0.1
  done
  echo "mcp: $2 did not come up in $3 s" >&2
  return 1
}

# --- The registry simulator on free loopback ports; it writes the [engine] section for dsa.
"$sim" --scenario tests/fixtures/scenarios/demo.toml --write-config "$work/sim.toml" >"$work/sim.log" 2>&1 &
pids+=($!)
wait_for "$work/sim.toml" "dsa-sim" 30 || { cat "$work/sim.log" >&2; exit 1; }

# --- A standalone dsa on a free port, its SQLite store in the scratch directory. The per-minute
# limits are lifted: the credit test spends a whole free allowance in a few seconds.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat "$work/sim.toml" - >"$work/dsa.toml" <<TOML

[server]
listen = "127.0.0.1:$port"

[database]
url = "sqlite://$work/dsa.db?mode=rwc"

[bootstrap]
create_dev_key = false

[policy]
per_ip_per_minute = 0

[policy.per_minute]
free = 1000000
starter = 1000000
pro = 1000000
reseller = 1000000
TOML
export DSA_CONFIG="$work/dsa.toml" DSA_LOG=warn
"$dsa" serve >"$work/dsa.log" 2>&1 &
pids+=($!)
base="http://127.0.0.1:$port"
wait_for "$base/healthz" "dsa" 60 || { cat "$work/dsa.log" >&2; exit 1; }

status=0
DSA_MCP_BASE="$base" DSA_BIN="$dsa" "$venv/bin/python" tests/mcp/test_mcp.py "${filters[@]}" || status=$?
if [ -n "$bench" ]; then
  DSA_MCP_BASE="$base" DSA_BIN="$dsa" "$venv/bin/python" tests/mcp/bench.py "$bench" || status=$?
fi
if grep -q 'panicked' "$work/dsa.log"; then
  echo "mcp: dsa logged a panic:" >&2
  grep -B2 -A10 'panicked' "$work/dsa.log" >&2
  status=1
fi
[ "$status" -eq 0 ] || { echo "mcp: dsa log:" >&2; tail -n 40 "$work/dsa.log" >&2; }
exit "$status"
