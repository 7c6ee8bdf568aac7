#!/usr/bin/env python3
"""Times two or more commands in one run: interleaved repetitions, median wall
time, peak resident memory (ru_maxrss of each child, from wait4), and the ratio
of each to the first (the baseline).

    compare.py --reps 5 [--json FILE] --label snarkjs -- CMD... --label zkfarm -- CMD...

--json FILE writes {label: {"median_s", "peak_mib"}} for a summary table.

Each command's stdout/stderr are discarded; a non-zero exit aborts the run.
"""
import json
import os
import statistics
import subprocess
import sys
import time


def parse(argv):
    reps, runs, i, out = 5, [], 0, None
    while i < len(argv):
        if argv[i] == "--reps":
            reps = int(argv[i + 1]); i += 2
        elif argv[i] == "--json":
            out = argv[i + 1]; i += 2
        elif argv[i] == "--label":
            label = argv[i + 1]
            assert argv[i + 2] == "--", "--label NAME -- CMD..."
            j = i + 3
            while j < len(argv) and argv[j] != "--label":
                j += 1
            runs.append((label, argv[i + 3:j])); i = j
        else:
            sys.exit(f"compare.py: unexpected argument {argv[i]!r}")
    if len(runs) < 1:
        sys.exit("compare.py: no commands")
    return reps, runs, out


def run_once(cmd):
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"compare.py: {' '.join(cmd)} exited {proc.returncode}: {err.strip()[:500]}")
    return wall, usage.ru_maxrss / 1024.0  # KiB -> MiB


def main():
    reps, runs, out = parse(sys.argv[1:])
    times = {label: [] for label, _ in runs}
    peak = {label: 0.0 for label, _ in runs}
    for _ in range(reps):  # interleaved, so drift in machine load hits all alike
        for label, cmd in runs:
            wall, rss = run_once(cmd)
            times[label].append(wall)
            peak[label] = max(peak[label], rss)
    base = statistics.median(times[runs[0][0]])
    print(f"{'command':<12} {'median s':>9} {'min s':>8} {'max s':>8} {'peak MiB':>9} {'speed-up':>9}")
    for label, _ in runs:
        med = statistics.median(times[label])
        print(f"{label:<12} {med:9.3f} {min(times[label]):8.3f} {max(times[label]):8.3f} "
              f"{peak[label]:9.1f} {base / med:8.2f}x")
    if out:
        with open(out, "w") as f:
            json.dump({label: {"median_s": statistics.median(times[label]), "peak_mib": peak[label]}
                       for label, _ in runs}, f)


if __name__ == "__main__":
    main()
