#!/usr/bin/env bash
# ---- browser tests (widget, front page, /domain-check, account portal) ------------------------
# Real Chromium (Debian's package; nothing can download Playwright's own builds here) driven by
# playwright-core, against a real dsa server and the registry simulator. Called by .ci/run;
# runs alone too: `bash .ci/browser.sh`. Screenshots: tests/browser/test-output/.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! /usr/bin/chromium --version >/dev/null 2>&1; then
  echo "== installing chromium (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi
/usr/bin/chromium --version 2>/dev/null || { echo "browser: /usr/bin/chromium does not run" >&2; exit 1; }
command -v node >/dev/null || { echo "browser: node is missing (apt-get install nodejs npm)" >&2; exit 1; }

echo "== browser tests: build dsa and dsa-sim"
cargo build --locked -p dsa-api -p dsa-tests --bins

echo "== browser tests: npm ci"
(cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)

echo "== browser tests: run"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
(cd tests/browser && node --test --test-concurrency=1 --test-reporter=spec)
