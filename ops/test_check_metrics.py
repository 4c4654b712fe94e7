"""Tests of ops/check_metrics.py on a small source tree and operator files written here."""

import json
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import check_metrics  # noqa: E402

SOURCE = """
fn f() {
    metrics::counter!("dsa_http_requests_total", "route" => route.clone(), "status" => status).increment(1);
    metrics::histogram!("dsa_upstream_seconds", "protocol" => p.as_str(), "outcome" => if ok { "answer" } else { "error" })
        .record(1.0);
    metrics::gauge!("dsa_ledger_queue_depth").set(1.0);
}
"""


def tree(rules: str = "", external: str = "", dashboard: dict | None = None) -> Path:
    root = Path(tempfile.mkdtemp())
    (root / "api/src").mkdir(parents=True)
    (root / "api/src/lib.rs").write_text(SOURCE)
    (root / "ops/prometheus").mkdir(parents=True)
    (root / "ops/grafana").mkdir(parents=True)
    (root / "ops/prometheus/external-metrics.txt").write_text("pg_up  postgres_exporter\n")
    if rules:
        (root / "ops/prometheus/dsa-alerts.yml").write_text(textwrap.dedent(rules))
    if external:
        (root / "ops/prometheus/dsa-external-alerts.yml").write_text(textwrap.dedent(external))
    if dashboard is not None:
        (root / "ops/grafana/d.json").write_text(json.dumps(dashboard))
    return root


def problems(root: Path) -> list[str]:
    found: list[str] = []
    checker = check_metrics.Checker(root, found)
    for p in sorted((root / "ops/prometheus").glob("*.yml")):
        checker.rules(p)
    for p in sorted((root / "ops/grafana").glob("*.json")):
        checker.dashboard(p)
    return found


def alert(expr: str, summary: str = "x") -> str:
    return f"""
    groups:
      - name: g
        rules:
          - alert: A
            expr: '{expr}'
            annotations:
              summary: "{summary}"
    """


class Exported(unittest.TestCase):
    def test_names_labels_and_summary_suffixes(self):
        series, buckets = check_metrics.exported(tree(), [])
        self.assertFalse(buckets)
        self.assertEqual(series["dsa_http_requests_total"].labels, {"route", "status"})
        self.assertEqual(series["dsa_upstream_seconds"].labels, {"protocol", "outcome", "quantile"})
        self.assertIn("dsa_upstream_seconds_sum", series)
        self.assertIn("dsa_upstream_seconds_count", series)
        self.assertNotIn("dsa_upstream_seconds_bucket", series)
        self.assertEqual(series["dsa_ledger_queue_depth"].labels, set())


class Parse(unittest.TestCase):
    def test_selectors_and_grouping(self):
        e = check_metrics.Expr(
            'sum by (route) (rate(dsa_http_requests_total{status=~"5..",job="x"}[5m:1m] offset 1h))'
            ' / on (route) group_left (status) rec:ord:ed and {__name__="dsa_ledger_queue_depth"}'
        )
        self.assertEqual(
            e.selectors,
            [("dsa_http_requests_total", {"status", "job"}), ("rec:ord:ed", set()), ("dsa_ledger_queue_depth", set())],
        )
        self.assertEqual(e.grouping, {"route", "status"})


class Rules(unittest.TestCase):
    def test_the_good_pass(self):
        root = tree(alert('sum by (route, job) (rate(dsa_http_requests_total{status="502"}[5m])) > 0', "{{ $labels.route }}"))
        self.assertEqual(problems(root), [])

    def test_a_name_not_exported_fails(self):
        found = problems(tree(alert("rate(dsa_http_request_total[5m]) > 0")))
        self.assertEqual(len(found), 1)
        self.assertIn("dsa_http_request_total is not exported", found[0])

    def test_a_bucket_of_a_summary_fails(self):
        found = problems(tree(alert("histogram_quantile(0.9, sum by (le) (rate(dsa_upstream_seconds_bucket[5m]))) > 1")))
        self.assertTrue(any("no _bucket" in p for p in found), found)

    def test_a_label_the_series_lacks_fails(self):
        found = problems(tree(alert('rate(dsa_http_requests_total{tld="de"}[5m]) > 0')))
        self.assertTrue(any("no label 'tld'" in p for p in found), found)
        found = problems(tree(alert("sum by (tld) (rate(dsa_http_requests_total[5m])) > 0")))
        self.assertTrue(any("groups by 'tld'" in p for p in found), found)
        found = problems(tree(alert("sum by (route) (rate(dsa_http_requests_total[5m])) > 0", "{{ $labels.tld }}")))
        self.assertTrue(any("$labels.tld" in p for p in found), found)

    def test_other_exporters_only_in_the_external_file(self):
        self.assertTrue(problems(tree(alert("pg_up == 0"))))
        self.assertEqual(problems(tree(external=alert("pg_up == 0"))), [])

    def test_recorded_names_may_be_used(self):
        rules = """
        groups:
          - name: g
            rules:
              - record: route:dsa_http_requests:rate5m
                expr: sum by (route) (rate(dsa_http_requests_total[5m]))
              - alert: A
                expr: route:dsa_http_requests:rate5m{route="/v1/dns"} > 1
        """
        self.assertEqual(problems(tree(rules)), [])


class Dashboard(unittest.TestCase):
    def dashboard(self, expr: str, uid: str = "${datasource}") -> dict:
        ds = {"type": "prometheus", "uid": uid}
        return {
            "uid": "d",
            "templating": {"list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus"},
                {"name": "job", "type": "query", "datasource": ds, "query": {"query": "label_values(up, job)"}},
            ]},
            "panels": [{"id": 1, "title": "p", "datasource": ds, "gridPos": {"x": 0, "y": 0, "w": 12, "h": 8},
                        "targets": [{"refId": "A", "datasource": ds, "expr": expr}]}],
        }

    def test_queries_are_checked(self):
        good = 'sum by (route) (rate(dsa_http_requests_total{job=~"$job"}[$__rate_interval]))'
        self.assertEqual(problems(tree(dashboard=self.dashboard(good))), [])
        found = problems(tree(dashboard=self.dashboard("rate(dsa_nothing_total[$__rate_interval])")))
        self.assertTrue(any("dsa_nothing_total is not exported" in p for p in found), found)

    def test_a_fixed_datasource_uid_fails(self):
        found = problems(tree(dashboard=self.dashboard("dsa_ledger_queue_depth", uid="P1809F7CD0C75ACF3")))
        self.assertTrue(any("datasource uid" in p for p in found), found)


if __name__ == "__main__":
    unittest.main()
