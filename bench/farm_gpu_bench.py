#!/usr/bin/env python3
"""Keep-the-GPU-busy benchmark: 100 partitions (10 jobs x 10 distinct
witnesses) of a test key through one zkfarmd, in steady state (the key is
made resident by one warm-up partition first).

    farm_gpu_bench.py --bin DIR --backend cuda|cpu --log 20 [--log 22 ...]
                      [--jobs 10] [--synth-workers 4] [--arena-mib 4096]
                      [--depth 2] [--out DIR]

Prints for each key: partitions/s; the GPU worker's busy share (the sum of
its compute times, STARTED to PROVE_DONE, over the wall time) and, where
nvidia-smi exists, NVML utilization sampled every 100 ms; the stages (witness
load in the synthesis workers, wait in the GPU worker's queue, compute:
synthesis on the device plus the prove step); a timeline of partitions done
per tenth of the run; the ratio to the compute bound (1 / median compute
time); and host-to-device bytes per partition (the witness, n_vars x 32: the
only per-partition upload of the CUDA backend); then the GPU worker is
SIGKILLed and its replacement's first proof is timed against the steady ones.
All jobs are submitted at once by concurrent clients (submit_checks and
submit_copies set to half the cores), and the time until all were accepted is
printed. With --backend cpu it also
runs the same 100 partitions through zkfarm-prove one after another and
prints farm/sequential. Proofs go to OUT/LOG/job-J/ for snarkjs.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import tempfile
import socket
import threading
import time
import urllib.request
from datetime import datetime

LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\] .*job (\d+) partition (\d+): proved by (\S+) and verified "
                  r"\(witness (\d+) ms, queued at the worker (\d+) ms, proving (\d+) ms\)")


def n_vars_of(zkey):
    """nVars from the zkey's header section (2): snarkjs zkey layout."""
    with open(zkey, "rb") as f:
        data = f.read(4096)
    pos, (nsec,) = 8, struct.unpack_from("<I", data, 8)
    pos = 12
    for _ in range(nsec):
        sid, size = struct.unpack_from("<IQ", data, pos)
        pos += 12
        if sid == 2:
            n8q = struct.unpack_from("<I", data, pos)[0]
            p = pos + 4 + n8q
            n8r = struct.unpack_from("<I", data, p)[0]
            return struct.unpack_from("<I", data, p + 4 + n8r)[0]
        pos += size
    raise SystemExit(f"{zkey}: no header section")


def free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def scrape(port, names):
    """The values of the named counters on zkfarmd's /metrics (0 when absent)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = dict.fromkeys(names, 0.0)
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in out:
            out[parts[0]] = float(parts[1])
    return out


LOOP_METRICS = ("zkfarm_loop_busy_seconds_total", "zkfarm_verify_proofs_total", "zkfarm_verify_batches_total")


def sampler(stop, samples):
    if not shutil.which("nvidia-smi"):
        return
    p = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "100"],
                         stdout=subprocess.PIPE, text=True)
    try:
        for line in p.stdout:
            if stop.is_set():
                break
            try:
                samples.append(float(line.split(",")[0]))
            except ValueError:
                pass
    finally:
        p.terminate()
        p.wait()


def run_key(a, log, work, out_root):
    prefix = os.path.join(work, f"tk{log}")
    subprocess.run([os.path.join(a.bin, "zkfarm-testkey"), "--constraints", str((1 << log) - 64), "--public", "2",
                    "--witnesses", str(a.per_job - 1), "--curve", a.curve, "--seed", str(log), "--out", prefix], check=True, stdout=subprocess.DEVNULL)
    zkey = prefix + ".zkey"
    wtns = [prefix + ".wtns"] + [f"{prefix}.{k}.wtns" for k in range(1, a.per_job)]
    out = os.path.join(out_root, str(log))
    os.makedirs(out, exist_ok=True)
    shutil.copy(prefix + ".vkey.json", os.path.join(out, "vkey.json"))
    state = os.path.join(work, f"state{log}")
    ctl = [os.path.join(a.bin, "zkfarmctl"), "--state-dir", state]
    logf = os.path.join(work, f"zkfarmd{log}.log")
    # Submits are checked (copied, hashed, validated) submit_checks at a time;
    # the clients below submit all jobs at once, as a busy farm's clients do.
    cfg = os.path.join(work, f"zkfarmd{log}.toml")
    port = free_port()
    with open(cfg, "w") as f:
        f.write(f"submit_checks = {a.submit_checks}\nsubmit_copies = {a.submit_copies}\n"
                f"gpu_lanes = {a.lanes}\nverify_threads = {a.verify_threads}\n"
                + (f"gpu_msm_copies = {a.msm_copies}\n" if a.msm_copies is not None else "") +
                f'http_address = "127.0.0.1:{port}"\n')
    daemon = subprocess.Popen([os.path.join(a.bin, "zkfarmd"), "--state-dir", state, "--backend", a.backend,
                               "--synth-workers", str(a.synth_workers), "--arena-mib", str(a.arena_mib),
                               "--gpu-queue-depth", str(a.depth), "--config", cfg],
                              stdout=subprocess.DEVNULL, stderr=open(logf, "w"))
    try:
        for _ in range(600):
            if subprocess.run(ctl + ["status"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        # Warm-up: the key becomes resident (read, checked, uploaded).
        t0 = time.time()
        job = subprocess.run(ctl + ["submit", "--zkey", zkey, "--wtns", wtns[0], "--out", os.path.join(work, "warm")],
                             check=True, capture_output=True, text=True).stdout.strip()
        subprocess.run(ctl + ["wait", job, "--quiet"], check=True, stdout=subprocess.DEVNULL)
        warm_s = time.time() - t0

        before = scrape(port, LOOP_METRICS)
        stop, util = threading.Event(), []
        th = threading.Thread(target=sampler, args=(stop, util), daemon=True)
        th.start()
        t0 = time.time()
        jobs = [None] * a.jobs
        accepted_at = [0.0] * a.jobs

        def submit(j):
            p = subprocess.run(ctl + ["submit", "--zkey", zkey, "--wtns", *wtns, "--out", os.path.join(out, f"job-{j}")],
                               capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit(f"submit {j}: exit {p.returncode}: {p.stderr.strip()}")
            jobs[j] = p.stdout.strip()
            accepted_at[j] = time.time() - t0

        clients = [threading.Thread(target=submit, args=(j,)) for j in range(a.jobs)]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
        accepted = time.time() - t0
        for job in jobs:
            subprocess.run(ctl + ["wait", job, "--quiet", "--timeout", "3600"], check=True, stdout=subprocess.DEVNULL)
        wall = time.time() - t0
        stop.set()
        after = scrape(port, LOOP_METRICS)
        restart = None
        if a.restart:
            # A GPU worker SIGKILLed and replaced: its first proof against a steady one.
            gpu = [w for w in json.loads(subprocess.run(ctl + ["status", "--json"], capture_output=True, text=True,
                                                        check=True).stdout)["workers"] if w["kind"] == "gpu"][0]
            os.kill(gpu["pid"], signal.SIGKILL)
            for _ in range(1200):
                st = json.loads(subprocess.run(ctl + ["status", "--json"], capture_output=True, text=True).stdout or "{}")
                g = [w for w in st.get("workers", []) if w["kind"] == "gpu"]
                if g and g[0]["pid"] not in (0, gpu["pid"]) and g[0]["state"] == "idle":
                    break
                time.sleep(0.1)
            rjob = subprocess.run(ctl + ["submit", "--zkey", zkey, "--wtns", wtns[1], "--out",
                                         os.path.join(work, "restart")], check=True, capture_output=True,
                                  text=True).stdout.strip()
            subprocess.run(ctl + ["wait", rjob, "--quiet"], check=True, stdout=subprocess.DEVNULL)
            restart = rjob
    finally:
        subprocess.run(ctl + ["stop"], capture_output=True)
        try:
            daemon.wait(timeout=120)
        except subprocess.TimeoutExpired:
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
    shutil.copy(logf, os.path.join(out, "zkfarmd.log"))

    recs, first_after_restart = [], None
    ids = set(jobs)
    for line in open(logf):
        m = LINE.match(line)
        if m and m.group(2) in ids:
            ts = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            recs.append((ts, int(m.group(5)), int(m.group(6)), int(m.group(7))))
        if m and m.group(2) == restart:
            first_after_restart = int(m.group(7))
    n = len(recs)
    compute = [r[3] for r in recs]
    bound = 1000.0 / statistics.median(compute)
    rate = n / wall
    busy = sum(compute) / 1000.0 / wall
    nv = n_vars_of(zkey)
    print(f"\n== {a.curve}, domain 2^{log}, backend {a.backend}: {n} partitions ({a.jobs} jobs x {a.per_job} witnesses), "
          f"{a.synth_workers} synthesis workers, gpu_queue_depth {a.depth}, gpu_lanes {a.lanes}, "
          f"{os.cpu_count()} cores ==")
    print(f"warm-up (key resident): {warm_s:.2f} s; first job accepted {min(accepted_at):.2f} s, all {a.jobs} "
          f"{accepted:.2f} s after the first submit (submit_checks {a.submit_checks}, submit_copies {a.submit_copies})")
    print(f"wall {wall:.2f} s   partitions/s {rate:.2f}   compute bound {bound:.2f}/s   "
          f"ratio to bound {rate / bound:.2f}")
    # From the first proof to the last: the proving pipeline without the
    # intake ramp (each submit copies, hashes, fsyncs and checks its witnesses
    # before the job is accepted; see docs/performance.md).
    recs.sort()
    window = recs[-1][0] - recs[0][0] if n > 1 else 0.0
    if window > 0:
        print(f"proving window (first to last proof, {window:.2f} s): partitions/s {(n - 1) / window:.2f}   "
              f"ratio to bound {(n - 1) / window / bound:.2f}   GPU worker busy "
              f"{100 * sum(compute[1:]) / 1000.0 / window:.1f}%")
    print(f"GPU worker busy (compute time / wall): {100 * busy:.1f}%", end="")
    if util:
        print(f"   NVML utilization: mean {statistics.mean(util):.1f}%, median {statistics.median(util):.0f}% "
              f"({len(util)} samples)")
    else:
        print("   NVML: no nvidia-smi here")
    d = {k: after[k] - before[k] for k in LOOP_METRICS}
    print(f"supervisor loop thread busy: {100 * d['zkfarm_loop_busy_seconds_total'] / wall:.1f}% of the wall time; "
          f"proofs verified {d['zkfarm_verify_proofs_total']:.0f} in {d['zkfarm_verify_batches_total']:.0f} batches "
          f"(mean {d['zkfarm_verify_proofs_total'] / max(1, d['zkfarm_verify_batches_total']):.1f})")
    print(f"{'stage (ms)':<34} {'median':>8} {'mean':>8} {'max':>8}")
    for name, k in (("witness load (synthesis worker)", 1), ("queued at the GPU worker", 2),
                    ("compute: synthesis + prove step", 3)):
        v = [r[k] for r in recs]
        print(f"{name:<34} {statistics.median(v):8.1f} {statistics.mean(v):8.1f} {max(v):8d}")
    print("timeline (partitions proved per tenth of the wall time): " +
          " ".join(str(sum(1 for r in recs if t0 + wall * i / 10 <= r[0] < t0 + wall * (i + 1) / 10)) for i in range(10)))
    print(f"host-to-device per partition: {nv * 32 / 1e6:.1f} MB (the witness, {nv} x 32 B); "
          f"a slot of a, b, c and the witness was {(nv + 3 * (1 << log)) * 32 / 1e6:.1f} MB")
    if first_after_restart is not None:
        steady = statistics.median(compute)
        print(f"GPU worker SIGKILLed and replaced: its first proof's compute {first_after_restart} ms "
              f"against {steady:.0f} ms steady (+{first_after_restart - steady:.0f} ms: the key read, checked, "
              f"prepared and uploaded again)")
    if a.backend == "cpu":
        t = time.time()
        for j in range(a.jobs):
            for w in wtns:
                subprocess.run([os.path.join(a.bin, "zkfarm-prove"), zkey, w, os.path.join(work, "p.json"),
                                os.path.join(work, "q.json")], check=True)
        seq = time.time() - t
        print(f"sequential zkfarm-prove, same {n} partitions: {seq:.2f} s; farm / sequential: {wall / seq:.3f}")
    return n == a.per_job * a.jobs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--log", type=int, action="append")
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--curve", default="bn128", choices=["bn128", "bls12381"], help="the test key's curve")
    ap.add_argument("--per-job", type=int, default=10, help="distinct witnesses a job (≥ 2)")
    ap.add_argument("--synth-workers", type=int, default=4)
    ap.add_argument("--arena-mib", type=int, default=4096)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--lanes", type=int, default=1, help="gpu_lanes: prove steps at once for small keys (issue 36)")
    ap.add_argument("--msm-copies", type=int, default=None,
                    help="gpu_msm_copies: precomputed copies of a key's bases (1: none; 0: up to 16; default: zkfarmd's)")
    ap.add_argument("--verify-threads", type=int, default=0, help="verify_threads (0: a quarter of the cores)")
    ap.add_argument("--out", default="build/farm-gpu")
    ap.add_argument("--submit-checks", type=int, default=max(2, (os.cpu_count() or 2) // 2))
    ap.add_argument("--submit-copies", type=int, default=max(4, (os.cpu_count() or 2) // 2))
    ap.add_argument("--no-restart", dest="restart", action="store_false",
                    help="skip the GPU-worker restart measurement")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="zkfarm-farmgpu-")
    ok = True
    try:
        for log in a.log or [20, 22]:
            ok &= run_key(a, log, work, os.path.abspath(a.out))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
