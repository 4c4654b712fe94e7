#!/usr/bin/env bash
# Instructions per cached GET /v1/domains/check and per GET /healthz on a standalone front, and
# their ratio, counted by callgrind (repeatable whatever the machine's load; issue 29).
#
#   scripts/profile-check.sh [REQUESTS]    # default 5000
#
# Keep REQUESTS in the thousands: start-up (lazily built tables, the first connections) differs by
# several million instructions from one run to the next, a few thousand per request at 2,000.
#
# Builds the `check_profile` bench (release), runs it three times under callgrind (start-up and
# warm-up only; + N healthz; + N checks), subtracts, and leaves the check run's profile in
# $OUT/check.out for `callgrind_annotate --inclusive=yes`. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-5000}"
OUT="${PROFILE_OUT:-${CARGO_TARGET_DIR:-target}/profile-check}"
mkdir -p "$OUT"
BIN=$(cargo bench -p dsa-tests --bench check_profile --no-run --message-format=json 2>/dev/null \
  | sed -n 's/.*"executable":"\([^"]*check_profile[^"]*\)".*/\1/p' | tail -1)
[ -x "$BIN" ] || { echo "check_profile bench binary not built" >&2; exit 1; }
total() { sed -n 's/^summary: \([0-9]*\).*/\1/p' "$1"; }
for target in none healthz check; do
  PROFILE_TARGET=$target PROFILE_REQUESTS=$N \
    valgrind --tool=callgrind --callgrind-out-file="$OUT/$target.out" "$BIN" 2>"$OUT/$target.log" | tail -1
done
base=$(total "$OUT/none.out"); h=$(total "$OUT/healthz.out"); c=$(total "$OUT/check.out")
awk -v b="$base" -v h="$h" -v c="$c" -v n="$N" 'BEGIN {
  hp = (h - b) / n; cp = (c - b) / n;
  printf "instructions per request (callgrind, %d requests): healthz %.0f, cached check %.0f; check/healthz cost %.2f (throughput ratio at equal CPU %.2f)\n", n, hp, cp, cp / hp, hp / cp }'
