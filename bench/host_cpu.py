#!/usr/bin/env python3
"""Host CPU by program while a bench runs: is the host or the device the bound?

    bench/host_cpu.py [--every S] [--top N] OUT &   ... the bench ...; kill %1

Every S seconds (default 2) appends one line to OUT: the window's total CPU
use in cores (from /proc/stat: user + nice + system + irq + softirq, over
the window's wall time) and the N programs (default 6) that used the most,
in cores, by command name (utime + stime of /proc/PID/stat, threads
included; processes that ended inside the window are missed). 16 cores all
busy reads "busy 16.0 cores". Linux only; stops on SIGTERM or SIGINT.
"""
import argparse
import os
import signal
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def total_busy():
    """Busy jiffies of all CPUs (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    v = [int(x) for x in parts]
    return v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)


def by_process():
    """{pid: (comm, utime + stime jiffies)} of every readable process."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                s = f.read()
        except OSError:
            continue
        # comm is in parentheses and may hold spaces; the fields after it are fixed.
        comm = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        out[int(name)] = (comm, int(rest[11]) + int(rest[12]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--every", type=float, default=2.0)
    ap.add_argument("--top", type=int, default=6)
    a = ap.parse_args()
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    t0, busy0, procs0 = time.monotonic(), total_busy(), by_process()
    with open(a.out, "a") as out:
        while not stop:
            time.sleep(a.every)
            t1, busy1, procs1 = time.monotonic(), total_busy(), by_process()
            wall = t1 - t0
            if wall <= 0:
                continue
            use = {}
            for pid, (comm, j) in procs1.items():
                before = procs0.get(pid)
                d = j - before[1] if before else j  # a kworker's comm changes with its work
                use[comm] = use.get(comm, 0) + d
            tops = sorted(use.items(), key=lambda kv: -kv[1])[:a.top]
            line = f"t={t1:.1f} busy {(busy1 - busy0) / TICK / wall:.1f} cores | " + \
                "  ".join(f"{c} {j / TICK / wall:.2f}" for c, j in tops if j > 0)
            print(line, file=out, flush=True)
            t0, busy0, procs0 = t1, busy1, procs1
    return 0


if __name__ == "__main__":
    sys.exit(main())
