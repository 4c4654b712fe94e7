#!/usr/bin/env bash
# Validates the operator files (issue 30, "Operators too"), as CI does (.ci/run):
#  1. `promtool check rules` on ops/prometheus (Debian's `prometheus` package provides promtool;
#     installed here when missing);
#  2. ops/check_metrics.py: every series name and label in the rules and in the Grafana
#     dashboard's queries is one the code exports (read from api/src, workers/src, common/src),
#     and the dashboard imports anywhere (uid, datasource variable, unique panel ids);
#  3. `promtool test rules` (the rules' unit tests), `promtool check config` on the example
#     scrape configuration, and the checker's own tests (ops/test_check_metrics.py).
# Exits non-zero, naming the problem, on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# No __pycache__ left in the tree by the checker's tests.
export PYTHONDONTWRITEBYTECODE=1

if ! command -v promtool >/dev/null 2>&1; then
  echo "ops/check: installing Debian's prometheus package for promtool"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
if ! python3 -c 'import yaml' 2>/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-yaml >/dev/null
fi
promtool --version 2>&1 | head -n1

rules=(ops/prometheus/dsa-alerts.yml ops/prometheus/dsa-external-alerts.yml)
tests=(ops/prometheus/dsa-alerts.test.yml ops/prometheus/dsa-external-alerts.test.yml)
promtool check rules "${rules[@]}"
# Names first: a misspelt series is named here rather than as a failing rule test below.
queries=$(mktemp --suffix=.yml)
trap 'rm -f "$queries"' EXIT
python3 ops/check_metrics.py . --dashboard-rules "$queries"
# The dashboard's queries are PromQL that Prometheus parses.
promtool check rules "$queries" >/dev/null || { echo "ops/check: a dashboard query does not parse (above)" >&2; exit 1; }
promtool test rules "${tests[@]}"
# The example scrape configuration, with the rule files it loads.
promtool check config ops/prometheus/prometheus.example.yml
python3 -m json.tool ops/grafana/dsa-fleet.json >/dev/null
python3 -m unittest -q ops/test_check_metrics.py
echo "ops/check: OK"
