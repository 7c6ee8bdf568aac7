#!/usr/bin/env python3
"""The table scripts/test.sh ends with: each phase's seconds, then the slowest
tests of each suite.

    scripts/test_report.py REPORT_DIR [--slowest N]

REPORT_DIR (scripts/test.sh writes it: build/test-report/) holds
  phases.tsv      one line a phase: NAME <TAB> SECONDS <TAB> NOTE, in the
                  order they ran (NOTE may be empty);
  SUITE.xml       ctest's JUnit report of a suite (ctest --output-junit),
                  one file a suite (release.xml, sanitizer.xml).
Each test's seconds are ctest's own (the <testcase time=...> attribute).
Prints the table on stdout; exits 0 even when a file is missing (the table
says so), since it reports on a run that has already passed or failed.
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ET


def phases(path):
    """[(name, seconds, note)] from phases.tsv; [] if absent."""
    rows = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 2:
                    rows.append((parts[0], float(parts[1]), parts[2] if len(parts) > 2 else ""))
    except FileNotFoundError:
        pass
    return rows


def testcases(path):
    """[(seconds, name, status, output)] of a ctest JUnit file; status is
    passed, failed or skipped; output is the test's <system-out> text."""
    root = ET.parse(path).getroot()
    out = []
    for case in root.iter("testcase"):
        # ctest writes status="run" (passed), "fail" or "notrun" (skipped, disabled)
        status = "passed"
        if case.get("status") == "fail" or case.find("failure") is not None:
            status = "failed"
        elif case.get("status") in ("notrun", "disabled") or case.find("skipped") is not None:
            status = "skipped"
        out.append((float(case.get("time") or 0.0), case.get("name", "?"), status, case.findtext("system-out") or ""))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report_dir")
    ap.add_argument("--slowest", type=int, default=15)
    ap.add_argument("--tail", type=int, default=30, help="lines of each failed test's output")
    a = ap.parse_args()

    rows = phases(os.path.join(a.report_dir, "phases.tsv"))
    print("== the test command, phase by phase (cpu: both cores' busy share while it ran)")
    width = max([len(n) for n, _, _ in rows] + [len("total (wall)")])
    for name, sec, note in rows:
        print(f"  {name:<{width}}  {sec:8.0f} s" + (f"   {note}" if note else ""))
    total = os.path.join(a.report_dir, "total")
    if os.path.exists(total):
        with open(total) as f:
            print(f"  {'total (wall)':<{width}}  {float(f.read()):8.0f} s")

    for suite in ("release", "sanitizer"):
        path = os.path.join(a.report_dir, suite + ".xml")
        if not os.path.exists(path):
            print(f"== {suite} suite: not run")
            continue
        try:
            cases = testcases(path)
        except ET.ParseError as e:
            print(f"== {suite} suite: {path}: not a JUnit report ({e})")
            continue
        counts = {s: sum(1 for c in cases if c[2] == s) for s in ("passed", "failed", "skipped")}
        busy = sum(c[0] for c in cases)
        print(f"== {suite} suite: {len(cases)} tests ({counts['passed']} passed, {counts['failed']} failed, "
              f"{counts['skipped']} skipped), {busy:.0f} s of test time; the {a.slowest} slowest:")
        for sec, name, status, _ in sorted(cases, key=lambda c: c[:2], reverse=True)[:a.slowest]:
            print(f"  {sec:8.1f} s  {name}" + ("" if status == "passed" else f"  ({status})"))
        # Every failure by name with the end of its output: a CI log cut in
        # the middle still names them at its end.
        for sec, name, status, output in cases:
            if status != "failed":
                continue
            print(f"!! {suite} suite: {name} failed; the end of its output:")
            for line in output.rstrip().splitlines()[-a.tail:]:
                print(f"   | {line[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
