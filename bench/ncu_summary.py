#!/usr/bin/env python3
"""Kernels of an ncu run, summed by name: where the device time of a step goes
and how much of the device each kernel fills.

    ncu --csv --clock-control none --metrics gpu__time_duration.sum,\
sm__throughput.avg.pct_of_peak_sustained_elapsed,\
sm__warps_active.avg.pct_of_peak_sustained_active PROGRAM > RAW.csv
    bench/ncu_summary.py RAW.csv [--steps N]

Per kernel (its name, G2 marked): launches, device time in µs, the
time-weighted SM throughput (% of peak) and "full-device µs" = Σ time ×
throughput: what the kernel would take if it filled the SMs. With several
lanes the device overlaps steps, so the full-device sum, not the time, bounds
a lane farm's rate. --steps divides the sums (a bench that ran N steps).
"""
import argparse
import csv
import re
import collections
import sys


def kernel_name(full):
    """`k_bit_sums G2` from ncu's demangled name (templates and arguments cut;
    the namespace `<unnamed>` would fool a plain cut at '<')."""
    s = full.replace("<unnamed>", "anon").removeprefix("void ")
    head = re.split(r"[<(]", s, maxsplit=1)[0]
    name = head.rsplit("::", 1)[-1]
    return name + (" G2" if "DFp2<" in s else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--steps", type=float, default=1.0)
    a = ap.parse_args()
    rows = collections.defaultdict(dict)  # launch id → {metric: value, "name": …}
    with open(a.raw, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]  # ncu's own messages start with ==
    for r in csv.DictReader(lines):
        k = rows[r["ID"]]
        k["name"] = kernel_name(r["Kernel Name"])
        try:
            v = float(r["Metric Value"].replace(",", ""))
        except ValueError:
            continue
        unit = r.get("Metric Unit", "")
        if r["Metric Name"] == "gpu__time_duration.sum":
            v = v / 1000.0 if unit in ("nsecond", "ns") else v * 1000.0 if unit in ("msecond", "ms") else v
        k[r["Metric Name"]] = v
    agg = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for k in rows.values():
        t = k.get("gpu__time_duration.sum", 0.0)
        sm = k.get("sm__throughput.avg.pct_of_peak_sustained_elapsed", 0.0)
        occ = k.get("sm__warps_active.avg.pct_of_peak_sustained_active", 0.0)
        g = agg[k["name"]]
        g[0] += 1
        g[1] += t
        g[2] += t * sm / 100.0
        g[3] += t * occ / 100.0
    s = a.steps
    total = sum(g[1] for g in agg.values())
    full = sum(g[2] for g in agg.values())
    print(f"{'kernel':<28} {'launches':>8} {'time µs':>9} {'SM %':>6} {'occ %':>6} {'full-device µs':>15}")
    for name, g in sorted(agg.items(), key=lambda kv: -kv[1][2]):
        print(f"{name[:28]:<28} {g[0] / s:8.1f} {g[1] / s:9.1f} {100 * g[2] / max(g[1], 1e-9):6.1f} "
              f"{100 * g[3] / max(g[1], 1e-9):6.1f} {g[2] / s:15.1f}")
    print(f"{'total':<28} {sum(g[0] for g in agg.values()) / s:8.1f} {total / s:9.1f} "
          f"{100 * full / max(total, 1e-9):6.1f} {'':>6} {full / s:15.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
