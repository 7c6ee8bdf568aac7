#!/usr/bin/env python3
"""Checks of docs/monitoring/ (the Grafana dashboard and the alert rules)
against docs/metrics.md and against a live scrape of zkfarmd's /metrics.
Called by test_monitoring.sh; standard library only (no PyYAML: the rules
file is read line by line, so it must stay in the block style it has).

  check_monitoring.py static SOURCE_DIR OUT_RULES
      The dashboard parses; every alert has `for:`, a severity label and
      summary/description/runbook annotations; every metric name an alert or
      a panel uses is documented in docs/metrics.md; every docs/FILE.md#anchor
      they name (and every FILE.md#anchor link of docs/metrics.md) exists. Writes the dashboard's expressions (Grafana variables
      replaced) as recording rules to OUT_RULES, for `promtool check rules`.

  check_monitoring.py live SOURCE_DIR SCRAPE
      SCRAPE (the text of GET /metrics) has every metric name docs/metrics.md
      lists and every one the dashboard and the alerts use (zkfarm_gpu_* are
      skipped when the scrape has none: no NVML, or backend cpu), every label
      value their selectors ask for, and each histogram has exactly the
      documented buckets, written as short decimals (le="0.1").
"""
import json
import os
import re
import sys

DASHBOARD = "docs/monitoring/zkfarm-dashboard.json"
ALERTS = "docs/monitoring/zkfarm-alerts.yml"
METRICS_MD = "docs/metrics.md"

# Names Prometheus makes itself for each target; never in a scrape.
SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling",
             "scrape_series_added"}
# Labels Prometheus adds to every series of a target.
TARGET_LABELS = {"instance", "job"}
GPU_PREFIX = "zkfarm_gpu_"

BUCKETS = ["0.01", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "300"]
HISTOGRAM_BUCKETS = {
    "zkfarm_job_duration_seconds": BUCKETS + ["600", "1800", "3600", "+Inf"],
    "zkfarm_queue_wait_seconds": BUCKETS + ["600", "1800", "3600", "+Inf"],
    "zkfarm_synthesis_seconds": BUCKETS + ["+Inf"],
    "zkfarm_proving_seconds": BUCKETS + ["+Inf"],
}

PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                "offset", "inf", "nan"}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def grafana_to_promql(expr):
    """A panel's expression as plain PromQL: Grafana's variables replaced."""
    expr = expr.replace("$__rate_interval", "5m").replace("$__range", "1h").replace("$__interval", "1m")
    return re.sub(r"\$\{?\w+\}?", "x", expr)


def selectors(expr):
    """[(metric name, [(label, op, value)])] of every vector selector in a PromQL expression."""
    e = re.sub(r"\[[^\]]*\]", "", expr)  # range and subquery durations
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)  # label lists
    out = []
    for m in re.finditer(r"(?<![\w.:])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?(\s*\()?", e):
        name, braces, call = m.group(1), m.group(2), m.group(3)
        if call and not braces:
            continue  # a function or an aggregation
        if name.lower() in PROMQL_WORDS:
            continue
        matchers = re.findall(r'(\w+)\s*(=~|!=|!~|=)\s*"([^"]*)"', braces or "")
        out.append((name, matchers))
    return out


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    with open(path) as f:
        return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", f.read(), re.M)}


def documented(src):
    """{family: type} from the tables of docs/metrics.md (rows "| `name` | type | ...")."""
    fams = {}
    with open(os.path.join(src, METRICS_MD)) as f:
        for line in f:
            m = re.match(r"^\|\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`\s*\|\s*(counter|gauge|histogram|summary)\s*\|", line)
            if m:
                fams[m.group(1)] = m.group(2)
    return fams


def sample_names(fams):
    names = set()
    for name, typ in fams.items():
        if typ == "histogram":
            names |= {name + "_bucket", name + "_sum", name + "_count"}
        else:
            names.add(name)
    return names


def read_alerts(src):
    """[{alert, expr, for, severity, annotations}] of the rules file (block style, as written)."""
    with open(os.path.join(src, ALERTS)) as f:
        lines = f.read().split("\n")
    rules, cur = [], None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*- alert:\s*(\S+)", line)
        if m:
            cur = {"alert": m.group(1), "expr": None, "for": None, "severity": None, "annotations": set()}
            rules.append(cur)
        elif cur is not None:
            m = re.match(r"^(\s*)expr:\s*(.*)$", line)
            if m:
                indent, value = len(m.group(1)), m.group(2).strip()
                if value in ("|", "|-", ">", ">-"):
                    block = []
                    while i + 1 < len(lines) and (not lines[i + 1].strip() or
                                                  len(lines[i + 1]) - len(lines[i + 1].lstrip()) > indent):
                        i += 1
                        block.append(lines[i].strip())
                    value = " ".join(b for b in block if b)
                elif value[:1] in "'\"":
                    value = value[1:-1]
                cur["expr"] = value
            m = re.match(r"^\s+for:\s*(\S+)", line)
            if m:
                cur["for"] = m.group(1)
            m = re.match(r"^\s+severity:\s*(\S+)", line)
            if m:
                cur["severity"] = m.group(1)
            m = re.match(r"^\s+(summary|description|runbook|runbook_url):\s*(.*)", line)
            if m:
                cur["annotations"].add(m.group(1))
                cur.setdefault("values", {})[m.group(1)] = m.group(2).strip().strip('"')
        i += 1
    return rules


def dashboard_exprs(src):
    """[(where, PromQL)] of every panel target and the instance variable's metric."""
    with open(os.path.join(src, DASHBOARD)) as f:
        dash = json.load(f)  # the parse check itself
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((f'panel "{p.get("title")}" {t.get("refId")}', grafana_to_promql(t["expr"])))
            walk(p.get("panels", []))

    walk(dash.get("panels", []))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else (q or "")
            m = re.match(r"^\s*label_values\((.*),\s*\w+\)\s*$", q)
            out.append((f'variable "{v.get("name")}"', grafana_to_promql(m.group(1) if m else q)))
    return dash, out


def all_exprs(src):
    exprs = [(f"alert {r['alert']}", r["expr"]) for r in read_alerts(src)]
    return exprs + dashboard_exprs(src)[1]


def static(src, out_rules):
    fams = documented(src)
    if len(fams) < 20:
        fail(f"{METRICS_MD}: only {len(fams)} metric rows found")
    known = sample_names(fams) | SYNTHETIC
    rules = read_alerts(src)
    if not rules:
        fail(f"{ALERTS}: no alerts found")
    for r in rules:
        for what in ("expr", "for", "severity"):
            if not r[what]:
                fail(f"alert {r['alert']}: no {what}")
        if r["severity"] not in (None, "critical", "warning", "info"):
            fail(f"alert {r['alert']}: severity {r['severity']}")
        for a in ("summary", "description", "runbook", "runbook_url"):
            if a not in r["annotations"]:
                fail(f"alert {r['alert']}: no {a} annotation")
        # runbook_url: the runbook hint as an absolute URL (Alertmanager and
        # Grafana link it), under the one base the file's header names.
        vals = r.get("values", {})
        url, hint = vals.get("runbook_url", ""), vals.get("runbook", "")
        if not re.match(r"^https://[^/\s]+/\S*$", url) or not url.endswith("/" + hint):
            fail(f"alert {r['alert']}: runbook_url {url!r} is not an absolute URL ending in its runbook {hint!r}")
    dash, dexprs = dashboard_exprs(src)
    ds_vars = [v for v in dash["templating"]["list"] if v.get("type") == "datasource" and v.get("query") == "prometheus"]
    if not ds_vars:
        fail("dashboard: no datasource variable of type prometheus")
    exprs = [(f"alert {r['alert']}", r["expr"]) for r in rules if r["expr"]] + dexprs
    used = set()
    for where, e in exprs:
        for name, _ in selectors(e):
            used.add(name)
            if name not in known:
                fail(f"{where}: {name} is not a metric of {METRICS_MD}: {e}")
    # Runbook hints: every docs/FILE.md#anchor the alerts and the dashboard
    # name, and every (FILE.md#anchor) link of docs/metrics.md, must exist.
    texts = open(os.path.join(src, ALERTS)).read() + open(os.path.join(src, DASHBOARD)).read()
    refs = set(re.findall(r"(docs/[\w.-]+\.md)#([\w-]+)", texts))
    with open(os.path.join(src, METRICS_MD)) as f:
        refs |= {("docs/" + d, a) for d, a in re.findall(r"\]\(([\w.-]+\.md)#([\w-]+)\)", f.read())}
    for doc, anchor in sorted(refs):
        path = os.path.join(src, doc)
        if not os.path.exists(path):
            fail(f"runbook hint {doc}#{anchor}: no {doc}")
        elif anchor not in anchors(path):
            fail(f"runbook hint {doc}#{anchor}: no such section in {doc}")
    with open(out_rules, "w") as f:
        f.write("# The dashboard's expressions as recording rules, for `promtool check rules` (generated).\n")
        f.write("groups:\n  - name: zkfarm_dashboard\n    rules:\n")
        for k, (where, e) in enumerate(dexprs):
            f.write(f"      # {where}\n      - record: zkfarm_dashboard:expr_{k}\n        expr: {json.dumps(e)}\n")
    print(f"static: {len(rules)} alerts, {len(dexprs)} dashboard expressions, {len(used)} metric names used, "
          f"{len(fams)} documented families")


def parse_scrape(path):
    """{sample name: [ {label: value} ]} of a text-format exposition."""
    samples = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+\S+(\s+\S+)?$", line)
            if not m:
                fail(f"scrape: unparsable line {line!r}")
                continue
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            samples.setdefault(m.group(1), []).append(labels)
    return samples


def live(src, scrape):
    samples = parse_scrape(scrape)
    have_gpu = any(n.startswith(GPU_PREFIX) for n in samples)
    if not have_gpu:
        print("live: no zkfarm_gpu_* metrics in the scrape (no NVML, or no GPU worker on a CUDA device): skipping those names")

    def expected(name):
        return have_gpu or not name.startswith(GPU_PREFIX)

    fams = documented(src)
    for name in sorted(sample_names(fams)):
        if expected(name) and name not in samples:
            fail(f"scrape: no {name} (documented in {METRICS_MD})")
    checked = 0
    for where, e in all_exprs(src):
        for name, matchers in selectors(e):
            if name in SYNTHETIC or not expected(name):
                continue
            checked += 1
            if name not in samples:
                fail(f"{where}: {name} is not in the scrape")
                continue
            for label, op, value in matchers:
                if label in TARGET_LABELS or "$" in value or op not in ("=", "=~"):
                    continue
                if op == "=~" and not re.fullmatch(r"[\w|]+", value):
                    continue
                for v in value.split("|") if op == "=~" else [value]:
                    if not any(s.get(label) == v for s in samples[name]):
                        fail(f'{where}: no sample {name}{{{label}="{v}"}} in the scrape')
    for name, bounds in HISTOGRAM_BUCKETS.items():
        got = [s.get("le") for s in samples.get(name + "_bucket", [])]
        if got != bounds:
            fail(f"scrape: {name}_bucket le values {got}, expected {bounds}")
    print(f"live: {len(samples)} sample names in the scrape, {checked} selector uses checked")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("static", "live"):
        print(__doc__)
        return 2
    if sys.argv[1] == "static":
        static(sys.argv[2], sys.argv[3])
    else:
        live(sys.argv[2], sys.argv[3])
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
