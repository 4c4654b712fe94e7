#!/usr/bin/env bash
# Generated clients (issue 30): clients generated from the served OpenAPI document by the tools
# outside developers use, each running a smoke flow against a standalone dsa on the registry
# simulator (dsa-sim), plus a lint of the document.
#
#  1. Redocly CLI lints /v1/openapi.json with its recommended rules (tests/clients/redocly.yaml):
#     0 errors.
#  2. openapi-python-client generates a Python client (--fail-on-warning); `mypy --strict` checks
#     it with tests/clients/python/smoke.py, which then calls every operation once: the NDJSON
#     bulk stream read line by line into the generated line models, the error cases as the
#     generated ErrorBody.
#  3. openapi-typescript generates the types, openapi-fetch makes the calls; `tsc --strict`
#     compiles tests/clients/ts/smoke.ts, which runs the same flow.
#
# Usage: .ci/clients.sh
# Environment: CLIENTS_VENV (default $CARGO_TARGET_DIR/clients-venv), CARGO_TARGET_DIR (default
# target). Needs python3 (venv), node and npm, PyPI and the npm registry for the pinned tools in
# tests/clients/python/requirements.txt and tests/clients/ts/package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

target="${CARGO_TARGET_DIR:-$repo/target}"
venv="${CLIENTS_VENV:-$target/clients-venv}"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# --- Tools: the Python generator, runtime and mypy in a venv; the npm tools from the lock file.
reqs=tests/clients/python/requirements.txt
if [ ! -x "$venv/bin/openapi-python-client" ] || ! cmp -s "$reqs" "$venv/requirements.txt"; then
  echo "clients: installing $reqs into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$reqs"
  cp "$reqs" "$venv/requirements.txt"
fi
command -v node >/dev/null || { echo "clients: node is missing (apt-get install nodejs npm)" >&2; exit 1; }
(cd tests/clients/ts && npm ci --no-audit --no-fund --loglevel=error)

# --- Binaries: dsa and the registry simulator.
cargo build --locked --quiet -p dsa-api -p dsa-tests --bins
dsa="$target/debug/dsa"
sim="$target/debug/dsa-sim"

wait_for() { # file-or-url, what, seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    if [[ "$1" == http* ]]; then curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    elif [ -s "$1" ]; then return 0; fi
    sleep 0.1
  done
  echo "clients: $2 did not come up in $3 s" >&2
  return 1
}

# --- The registry simulator (its rate limits lifted: the flows are short but run back to back).
sed 's/^rate_limit = .*/rate_limit = {}/' tests/fixtures/scenarios/demo.toml >"$work/scenario.toml"
"$sim" --scenario "$work/scenario.toml" --write-config "$work/sim.toml" >"$work/sim.log" 2>&1 &
pids+=($!)
wait_for "$work/sim.toml" "dsa-sim" 30 || { cat "$work/sim.log" >&2; exit 1; }

# --- A standalone dsa on a free port. The free plan's per-minute limit is small: each flow
# reaches its 429 with its own free key.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat "$work/sim.toml" - >"$work/dsa.toml" <<TOML

[server]
listen = "127.0.0.1:$port"

[database]
url = "sqlite://$work/dsa.db?mode=rwc"

[bootstrap]
create_dev_key = false

[pricing]
platform_checkout_url = "https://checkout.example/register"

[policy]
per_ip_per_minute = 0

[policy.per_minute]
free = 3
starter = 100000
pro = 100000
reseller = 100000
TOML
export DSA_CONFIG="$work/dsa.toml" DSA_LOG=warn
new_key() { "$dsa" keys create "$@" | grep -o 'dsa_server_[A-Za-z0-9_-]*' | head -n1; }
key=$(new_key --kind server --plan reseller --pricing --purchase-button --purchase-url https://shop.example/buy --commission 10)
free_py=$(new_key --kind server --plan free)
free_ts=$(new_key --kind server --plan free)
[ -n "$key" ] && [ -n "$free_py" ] && [ -n "$free_ts" ] || { echo "clients: could not create keys" >&2; exit 1; }
"$dsa" serve >"$work/dsa.log" 2>&1 &
pids+=($!)
base="http://127.0.0.1:$port"
wait_for "$base/healthz" "dsa" 60 || { cat "$work/dsa.log" >&2; exit 1; }
curl -fsS "$base/v1/openapi.json" -o "$work/openapi.json"

status=0
# --- 1. Lint: Redocly's recommended rules, 0 errors (warnings are printed).
echo "clients: redocly lint"
(cd tests/clients/ts && npx --no-install redocly lint --config ../redocly.yaml --format=summary "$work/openapi.json") || status=1

# --- 2. Python: openapi-python-client, mypy --strict, the smoke flow.
echo "clients: python (openapi-python-client)"
py=tests/clients/python
rm -rf "$py/generated"
mkdir -p "$py/generated"
PATH="$venv/bin:$PATH" "$venv/bin/openapi-python-client" generate --path "$work/openapi.json" \
  --config "$py/config.yaml" --output-path "$py/generated/dsa_client" --meta none --fail-on-warning || status=1
if [ -d "$py/generated/dsa_client" ]; then
  (cd "$py/generated" && cp ../smoke.py . && "$venv/bin/mypy" --config-file ../mypy.ini smoke.py dsa_client) || status=1
  PYTHONPATH="$py/generated" "$venv/bin/python" "$py/smoke.py" "$base" "$key" "$free_py" || status=1
fi

# --- 3. TypeScript: openapi-typescript + openapi-fetch, tsc --strict, the smoke flow.
echo "clients: typescript (openapi-typescript, openapi-fetch)"
(
  cd tests/clients/ts
  rm -rf generated dist
  npx --no-install openapi-typescript "$work/openapi.json" -o generated/schema.d.ts
  npx --no-install tsc -p .
  node dist/smoke.js "$base" "$key" "$free_ts"
) || status=1

if grep -q 'panicked' "$work/dsa.log"; then
  echo "clients: dsa logged a panic:" >&2
  grep -B2 -A10 'panicked' "$work/dsa.log" >&2
  status=1
fi
[ "$status" = 0 ] && echo "clients: both generated clients passed their smoke flow; the lint has 0 errors"
exit "$status"
