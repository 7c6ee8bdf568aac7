#!/usr/bin/env python3
"""The farm against sequential zkfarm-prove on the same K partitions, in one run.

    farm_bench.py --bin build/bin --zkey KEY --wtns W [W ...] [--partitions K] [--reps R]

Sequential: K runs of zkfarm-prove one after another. Farm: one zkfarmd (1
synthesis worker, 1 GPU worker on the CPU backend), started once; timed from
submit until `zkfarmctl wait` returns. Witnesses are used round-robin for the K
partitions. Also samples `zkfarmctl status` latency while the workers are busy.
Prints medians, the ratio farm/sequential, and status latency.
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--zkey", required=True)
    ap.add_argument("--wtns", nargs="+", required=True)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    wtns = [os.path.abspath(a.wtns[i % len(a.wtns)]) for i in range(a.partitions)]
    zkey = os.path.abspath(a.zkey)
    work = tempfile.mkdtemp(prefix="zkfarm-bench-")
    state = os.path.join(work, "state")
    ctl = [os.path.join(a.bin, "zkfarmctl"), "--state-dir", state]
    daemon = subprocess.Popen([os.path.join(a.bin, "zkfarmd"), "--state-dir", state, "--synth-workers", "1",
                               "--backend", "cpu"], stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "log"), "w"))
    try:
        for _ in range(300):
            if subprocess.run(ctl + ["status"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        seq, farm, latencies = [], [], []
        for rep in range(a.reps):
            t0 = time.perf_counter()
            for k, w in enumerate(wtns):
                subprocess.run([os.path.join(a.bin, "zkfarm-prove"), zkey, w, os.path.join(work, "p.json"),
                                os.path.join(work, "q.json")], check=True)
            seq.append(time.perf_counter() - t0)

            out = os.path.join(work, f"out{rep}")
            t0 = time.perf_counter()
            job = subprocess.run(ctl + ["submit", "--zkey", zkey, "--wtns", *wtns, "--out", out],
                                 check=True, capture_output=True, text=True).stdout.strip()
            done = threading.Event()

            def sample():
                while not done.is_set():
                    s = time.perf_counter()
                    subprocess.run(ctl + ["status", "--json"], capture_output=True, check=True)
                    latencies.append(time.perf_counter() - s)
                    time.sleep(0.2)

            sampler = threading.Thread(target=sample)
            sampler.start()
            subprocess.run(ctl + ["wait", job, "--quiet"], check=True, stdout=subprocess.DEVNULL)
            farm.append(time.perf_counter() - t0)
            done.set()
            sampler.join()
        s, f = statistics.median(seq), statistics.median(farm)
        print(f"{a.partitions} partitions of {os.path.basename(zkey)}, {a.reps} reps, {os.cpu_count()} cores")
        print(f"{'run':<24} {'median s':>9} {'min s':>8} {'max s':>8}")
        print(f"{'sequential zkfarm-prove':<24} {s:9.3f} {min(seq):8.3f} {max(seq):8.3f}")
        print(f"{'farm (1 synth + 1 gpu)':<24} {f:9.3f} {min(farm):8.3f} {max(farm):8.3f}")
        print(f"farm / sequential: {f / s:.3f}x")
        # status latency includes starting the zkfarmctl process
        lat = sorted(latencies)
        print(f"zkfarmctl status while busy: {len(lat)} samples, median {1000 * statistics.median(lat):.1f} ms, "
              f"max {1000 * lat[-1]:.1f} ms")
    finally:
        subprocess.run(ctl + ["stop"], capture_output=True)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
