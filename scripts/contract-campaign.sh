#!/usr/bin/env bash
# Long schemathesis campaign (issue 9): every operation of /v1/openapi.json, 1,000 cases each by
# default, against a standalone dsa on the registry simulator, with the same checks as CI.
# Reports go to target/contract-report/ (JUnit XML, NDJSON events) and a summary is printed:
# requests per operation and status, failures, and 5xx other than the documented 502.
#
# Usage: scripts/contract-campaign.sh [EXAMPLES] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
examples="${1:-1000}"
seed="${2:-}"
report="${CARGO_TARGET_DIR:-target}/contract-report"
rm -rf "$report"
status=0
start=$(date +%s)
bash .ci/contract.sh --examples "$examples" --report "$report" ${seed:+--seed "$seed"} || status=$?
elapsed=$(( $(date +%s) - start ))
python3 - "$report" "$examples" "$elapsed" <<'PY'
import collections, glob, json, sys
report, examples, elapsed = sys.argv[1], sys.argv[2], sys.argv[3]
by_op = collections.defaultdict(collections.Counter)
failures = 0
for path in glob.glob(f"{report}/**/*.ndjson", recursive=True):
    for line in open(path):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        text = json.dumps(event)
        # ScenarioFinished events carry the recorded interactions with their status codes.
        for kind, body in event.items():
            if not isinstance(body, dict):
                continue
            recorder = body.get("recorder") or {}
            for interaction in (recorder.get("interactions") or {}).values():
                req = interaction.get("request") or {}
                resp = interaction.get("response") or {}
                op = recorder.get("label") or f"{req.get('method')} {req.get('uri', '').split('?')[0]}"
                if resp:
                    by_op[op][resp.get("status_code")] += 1
            for check in (recorder.get("checks") or {}).values():
                failures += sum(1 for c in check if c.get("status") == "FAILURE")
print(f"campaign: {examples} examples per operation, {elapsed} s")
bad5xx = 0
for op, counts in sorted(by_op.items()):
    total = sum(counts.values())
    bad5xx += sum(n for s, n in counts.items() if s and s >= 500 and s != 502)
    print(f"  {op}: {total} requests, statuses {dict(sorted(counts.items()))}")
print(f"campaign: {sum(sum(c.values()) for c in by_op.values())} requests, {failures} failed checks, {bad5xx} responses 5xx other than 502")
PY
exit "$status"
