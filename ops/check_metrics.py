#!/usr/bin/env python3
"""Checks that the operator files use only metric names (and labels) that dsa exports.

Reads the names from the source (every `counter!`/`gauge!`/`histogram!` call in api/src,
workers/src and common/src, with the label keys given in the call), then every PromQL expression
in ops/prometheus/*.yml (rule `expr`s) and in ops/grafana/*.json (panel targets, template
variables), and reports:

* a series name used but not exported (histogram suffixes included: metrics-exporter-prometheus
  renders histograms as summaries, so `_sum`, `_count` and `{quantile=...}` exist and `_bucket`
  only when the code configures buckets);
* a label matched on, or grouped by, that none of the expression's series carries (beside the
  scrape labels `job` and `instance`);
* a `$labels.X` in an alert's annotations that the expression does not carry.

Series of other exporters are allowed in dsa-external-alerts.yml only, by the names listed in
ops/prometheus/external-metrics.txt; Prometheus' own `up` is allowed everywhere.

Usage: check_metrics.py REPO_ROOT [--dashboard-rules FILE]. Exit status 1 with one line per
problem. With --dashboard-rules, also writes the dashboard's queries (Grafana's variables
replaced) to FILE as recording rules, for `promtool check rules` to parse them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

SOURCE_DIRS = ("api/src", "workers/src", "common/src")
MACRO = re.compile(r"\b(counter|gauge|histogram)!\s*\(")
SCRAPE_LABELS = {"job", "instance"}
# Series Prometheus itself makes for every target.
PROMETHEUS_OWN = {"up": set()}
AGGREGATORS = {
    "sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk",
    "quantile", "count_values", "group",
}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "atan2"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}


class Metric:
    """One exported series name: its kind and the label keys the code gives it."""

    def __init__(self, kind: str, labels: set[str]):
        self.kind = kind
        self.labels = labels


def balanced(text: str, start: int) -> str:
    """The text between the `(` at `start - 1` and its closing `)` (string literals respected)."""
    depth, i, in_str = 1, start, False
    while i < len(text) and depth:
        c = text[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1
    return text[start : i - 1]


def exported(root: Path, problems: list[str]) -> tuple[dict[str, Metric], bool]:
    """The series the code exports, by rendered name, and whether histograms have buckets."""
    bases: dict[str, Metric] = {}
    buckets = False
    for d in SOURCE_DIRS:
        for path in sorted((root / d).rglob("*.rs")):
            text = path.read_text(encoding="utf-8")
            buckets |= "set_buckets" in text
            for m in MACRO.finditer(text):
                if text[max(0, m.start() - 9) : m.start()].endswith("describe_"):
                    continue
                args = balanced(text, m.end())
                name = re.match(r'\s*"([^"]+)"', args)
                line = text.count("\n", 0, m.start()) + 1
                if not name:
                    problems.append(f"{path.relative_to(root)}:{line}: a metric whose name is not a string literal cannot be checked")
                    continue
                labels = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*=>', args))
                known = bases.setdefault(name.group(1), Metric(m.group(1), set()))
                if known.kind != m.group(1):
                    problems.append(f"{path.relative_to(root)}:{line}: {name.group(1)} is both a {known.kind} and a {m.group(1)}")
                known.labels |= labels
    series: dict[str, Metric] = {}
    for name, metric in bases.items():
        if metric.kind == "histogram":
            if buckets:
                series[name + "_bucket"] = Metric("histogram", metric.labels | {"le"})
            else:
                series[name] = Metric("summary", metric.labels | {"quantile"})
            series[name + "_sum"] = Metric("histogram", metric.labels)
            series[name + "_count"] = Metric("histogram", metric.labels)
        else:
            series[name] = metric
    return series, buckets


TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>\#[^\n]*)
      |(?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
      |(?P<num>0x[0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?:ms|[smhdwy])?(?:\d+(?:ms|[smhdwy]))*)
      |(?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
      |(?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=,(){}\[\]@])""",
    re.X,
)


def tokens(expr: str) -> list[tuple[str, str]]:
    out, i = [], 0
    while i < len(expr):
        m = TOKEN.match(expr, i)
        if not m:
            raise ValueError(f"cannot read {expr[i:i + 20]!r}")
        i = m.end()
        kind = m.lastgroup
        if kind not in ("ws", "comment"):
            out.append((kind, m.group()))
    return out


class Expr:
    """What one PromQL expression uses: series with their matched labels, grouping labels."""

    def __init__(self, expr: str):
        self.selectors: list[tuple[str, set[str]]] = []
        self.grouping: set[str] = set()
        toks = tokens(expr)
        i = 0
        while i < len(toks):
            kind, text = toks[i]
            nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
            if kind == "ident" and text in GROUPING and nxt == "(":
                j = i + 2
                while j < len(toks) and toks[j][1] != ")":
                    if toks[j][0] == "ident":
                        self.grouping.add(toks[j][1])
                    j += 1
                i = j + 1
                continue
            if kind == "ident" and (nxt == "(" or text in AGGREGATORS):  # a function or an aggregator
                i += 1
                continue
            if kind == "ident" and text.lower() in KEYWORDS:
                i += 1
                continue
            if kind == "ident" or text == "{":
                name = text if kind == "ident" else None
                labels: set[str] = set()
                j = i + 1 if kind == "ident" else i
                if j < len(toks) and toks[j][1] == "{":
                    j += 1
                    while j < len(toks) and toks[j][1] != "}":
                        if toks[j][0] == "ident" and j + 1 < len(toks) and toks[j + 1][1] in ("=", "!=", "=~", "!~"):
                            label = toks[j][1]
                            if label == "__name__" and toks[j + 1][1] == "=" and j + 2 < len(toks):
                                name = toks[j + 2][1].strip("\"'`")
                            else:
                                labels.add(label)
                            j += 3
                            continue
                        j += 1
                    j += 1
                if name is None:
                    raise ValueError("a selector without a plain metric name cannot be checked")
                self.selectors.append((name, labels))
                i = j
                continue
            if text == "[":  # a range or subquery: durations only
                while i < len(toks) and toks[i][1] != "]":
                    i += 1
            i += 1


class Checker:
    def __init__(self, root: Path, problems: list[str]):
        self.root = root
        self.problems = problems
        self.series, self.buckets = exported(root, problems)
        self.external: set[str] = set()
        listed = root / "ops/prometheus/external-metrics.txt"
        if listed.exists():
            for line in listed.read_text(encoding="utf-8").splitlines():
                if line.strip() and not line.startswith("#"):
                    self.external.add(line.split()[0])
        self.recorded: dict[str, set[str] | None] = {}
        # The dashboard's queries with Grafana's variables replaced, for `promtool check rules`.
        self.dashboard_exprs: list[str] = []

    def labels_of(self, name: str, external_ok: bool) -> set[str] | None:
        """Label keys of a usable series (None: any), or raise KeyError when it may not be used."""
        if name in self.series:
            return self.series[name].labels | SCRAPE_LABELS
        if name in PROMETHEUS_OWN:
            return PROMETHEUS_OWN[name] | SCRAPE_LABELS
        if name in self.recorded:
            labels = self.recorded[name]
            return None if labels is None else labels | SCRAPE_LABELS
        if external_ok and name in self.external:
            return None
        raise KeyError(name)

    def check(self, where: str, expr: str, external_ok: bool = False, templates: str = "") -> set[str] | None:
        """Checks one expression; returns the labels its series carry (None: unknown)."""
        try:
            parsed = Expr(expr)
        except ValueError as e:
            self.problems.append(f"{where}: {e}: {expr.strip()}")
            return None
        carried: set[str] | None = set(SCRAPE_LABELS)
        for name, matched in parsed.selectors:
            try:
                labels = self.labels_of(name, external_ok)
            except KeyError:
                hint = ""
                if name.endswith("_bucket") and not self.buckets:
                    hint = " (histograms are exported as summaries: no _bucket; use {quantile=...} or _sum/_count)"
                self.problems.append(f"{where}: {name} is not exported by dsa{hint}")
                carried = None  # its labels are unknown: no label problems on top of the name
                continue
            if labels is None:
                carried = None
                continue
            for label in sorted(matched - labels):
                self.problems.append(f"{where}: {name} has no label {label!r} (it has {sorted(labels - SCRAPE_LABELS)})")
            if carried is not None:
                carried |= labels
        if carried is not None:
            for label in sorted(parsed.grouping - carried):
                self.problems.append(f"{where}: groups by {label!r}, which none of its series carries")
            for label in sorted(set(re.findall(r"\$labels\.([A-Za-z_][A-Za-z0-9_]*)", templates)) - carried):
                self.problems.append(f"{where}: its annotations use $labels.{label}, which its expression does not carry")
        return carried

    def rules(self, path: Path) -> int:
        external_ok = path.name == "dsa-external-alerts.yml"
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        groups = doc.get("groups", []) if isinstance(doc, dict) else []
        count = 0
        # Recorded names first, so alerts in any group may use them.
        for group in groups:
            for rule in group.get("rules", []):
                if "record" in rule:
                    grouping = Expr(str(rule["expr"])).grouping
                    self.recorded[rule["record"]] = grouping or None
        for group in groups:
            for rule in group.get("rules", []):
                name = rule.get("record") or rule.get("alert")
                where = f"{path.relative_to(self.root)} [{group.get('name')}] {name}"
                templates = json.dumps(rule.get("annotations", {})) + json.dumps(rule.get("labels", {}))
                self.check(where, str(rule["expr"]), external_ok, templates)
                count += 1
        return count

    def dashboard(self, path: Path) -> int:
        doc = json.loads(path.read_text(encoding="utf-8"))
        count = 0

        def plain(expr: str) -> str:
            # Grafana's variables: intervals become a duration, others a plain value.
            expr = re.sub(r"\$__(rate_interval|interval|range)|\$\{__(rate_interval|interval|range)\}", "5m", expr)
            return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_:]*\}|\$[A-Za-z_][A-Za-z0-9_]*", "x", expr)

        def walk(node, where: str):
            nonlocal count
            if isinstance(node, dict):
                title = node.get("title") or node.get("name") or where
                if isinstance(node.get("expr"), str) and node["expr"].strip():
                    self.check(f"{path.relative_to(self.root)} panel {title!r}", plain(node["expr"]))
                    self.dashboard_exprs.append(plain(node["expr"]))
                    count += 1
                query = node.get("query")
                if isinstance(query, dict):
                    query = query.get("query")
                if node.get("type") == "query" and isinstance(query, str):
                    m = re.fullmatch(r"\s*label_values\((?:(.*),\s*)?([A-Za-z_][A-Za-z0-9_]*)\)\s*", query)
                    if m and m.group(1):
                        labels = self.check(f"{path.relative_to(self.root)} variable {title!r}", plain(m.group(1)))
                        if labels is not None and m.group(2) not in labels:
                            self.problems.append(f"{path.relative_to(self.root)} variable {title!r}: label {m.group(2)!r} is not on {m.group(1)}")
                        count += 1
                    elif query.strip().startswith("query_result("):
                        self.check(f"{path.relative_to(self.root)} variable {title!r}", plain(query.strip()[13:-1]))
                        count += 1
                    elif not m:
                        self.problems.append(f"{path.relative_to(self.root)} variable {title!r}: query {query!r} cannot be checked")
                for value in node.values():
                    walk(value, title)
            elif isinstance(node, list):
                for value in node:
                    walk(value, where)

        walk(doc, path.name)
        self.importable(path, doc)
        return count

    def importable(self, path: Path, doc: dict) -> None:
        """What makes a dashboard import anywhere: a uid, unique panel ids, panels that do not
        overlap, and every datasource given by the `datasource` variable (no instance's uid)."""
        where = path.relative_to(self.root)
        if not isinstance(doc.get("uid"), str) or not doc["uid"]:
            self.problems.append(f"{where}: no dashboard uid")
        variables = [v.get("name") for v in doc.get("templating", {}).get("list", [])]
        if "datasource" not in variables:
            self.problems.append(f"{where}: no `datasource` template variable")
        panels = list(doc.get("panels", []))
        for panel in list(panels):
            panels.extend(panel.get("panels", []))
        ids = [p.get("id") for p in panels]
        for dup in sorted({i for i in ids if ids.count(i) > 1}, key=str):
            self.problems.append(f"{where}: panel id {dup} used twice")
        boxes = []
        for p in panels:
            g = p.get("gridPos", {})
            box = (g.get("x", 0), g.get("y", 0), g.get("w", 0), g.get("h", 0))
            for other, title in boxes:
                if box[0] < other[0] + other[2] and other[0] < box[0] + box[2] and box[1] < other[1] + other[3] and other[1] < box[1] + box[3]:
                    self.problems.append(f"{where}: panels {title!r} and {p.get('title')!r} overlap")
            boxes.append((box, p.get("title")))

        def sources(node, title):
            if isinstance(node, dict):
                title = node.get("title", title)
                ds = node.get("datasource")
                if isinstance(ds, dict) and ds.get("uid") not in ("${datasource}", "-- Grafana --", None):
                    self.problems.append(f"{where} {title!r}: datasource uid {ds.get('uid')!r}; use ${{datasource}}")
                elif isinstance(ds, str) and ds not in ("${datasource}", "$datasource"):
                    self.problems.append(f"{where} {title!r}: datasource {ds!r}; use ${{datasource}}")
                for value in node.values():
                    sources(value, title)
            elif isinstance(node, list):
                for value in node:
                    sources(value, title)

        sources(doc, str(where))


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else ".").resolve()
    problems: list[str] = []
    checker = Checker(root, problems)
    if not checker.series:
        problems.append("no metric found in the source: has the way metrics are recorded changed?")
    rules = sum(checker.rules(p) for p in sorted((root / "ops/prometheus").glob("*.yml")) if not p.name.endswith(".test.yml") and p.name != "prometheus.example.yml")
    panels = sum(checker.dashboard(p) for p in sorted((root / "ops/grafana").glob("*.json")))
    if "--dashboard-rules" in sys.argv:
        # One recording rule per dashboard query, so promtool parses each as PromQL.
        out = Path(sys.argv[sys.argv.index("--dashboard-rules") + 1])
        queries = [{"record": f"dashboard:query_{i}", "expr": e} for i, e in enumerate(checker.dashboard_exprs)]
        out.write_text(yaml.safe_dump({"groups": [{"name": "dashboard-queries", "rules": queries}]}, width=1000))
    for p in problems:
        print(f"ops/check: {p}")
    print(f"ops/check: {len(checker.series)} exported series names; {rules} rule expressions and {panels} dashboard queries checked; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
