#!/usr/bin/env python3
"""The farm end to end from circom inputs (docs/witness.md): one registered
circuit, a job of P distinct inputs, with 1, 2, 4, 8 … synthesis workers
making the witnesses (the circuit's witness graph in the worker, or its
generator, a process per input: --witness-engine) and the GPU worker proving
them; every proof is verified by zkfarmd before it counts. --fed adds, per
worker count, the same key fed ready witnesses (NAME.K.wtns in DIR): the
rate the inputs are measured against.

    farm_inputs_bench.py --bin DIR --circuit NAME --dir DIR [--kind native|wasm]
                         [--backend cuda|cpu] [--workers 1,2,4,8] [--partitions 48]
                         [--generators CACHE] [--arena-mib 4096] [--out DIR]

DIR holds NAME.zkey, NAME_cpp/ (native) or NAME_js/NAME.wasm (wasm) and the
inputs NAME.K.json (K = 0, 1, …; a job cycles through them). --generators:
a folder of generators built before (zkfarm-prove's cache,
XDG_CACHE_HOME/zkfarm/generators/HASH/), copied into each farm's
STATE/circuits so that `circuit add` needs no compiler (the GPU machine has
none). Prints, per worker count: inputs/s from the first dispatch to the job's
end, the ratio to linear scaling from one worker, the GPU worker's busy share
(its compute over the wall time), and the median witness time (generation,
check and copy into the slot).
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

LINE = re.compile(r"partition (\d+): proved by (\S+) and verified \(witness (\d+) ms, queued at the worker (\d+) ms, "
                  r"proving (\d+) ms\)")


def ctl(bin_dir, state, *args, timeout=3600):
    p = subprocess.run([os.path.join(bin_dir, "zkfarmctl"), "--state-dir", state, *args], capture_output=True,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        raise SystemExit(f"zkfarmctl {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.stdout


def one(a, workers, inputs, gen_src, out_root):
    work = tempfile.mkdtemp(prefix=f"zkfarm-inputs-{workers}-")
    state = os.path.join(work, "state")
    os.makedirs(os.path.join(state, "circuits"))
    os.chmod(state, 0o750)
    for d in glob.glob(os.path.join(a.generators or "/nonexistent", "*")):
        if os.path.isdir(d):
            shutil.copytree(d, os.path.join(state, "circuits", os.path.basename(d)))
    log = open(os.path.join(work, "zkfarmd.out"), "w")
    config = os.path.join(work, "zkfarmd.toml")
    with open(config, "w") as f:  # issue 32: the witness graph (auto) or the generator
        f.write(f'witness_engine = "{a.witness_engine}"\ngpu_lanes = {a.lanes}\ngpu_queue_depth = {min(32, max(2, 2 * a.lanes))}\n')
    proc = subprocess.Popen([os.path.join(a.bin, "zkfarmd"), "--state-dir", state, "--backend", a.backend,
                             "--synth-workers", str(workers), "--arena-mib", str(a.arena_mib), "--config", config],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        ctl(a.bin, state, "ready", "--wait", "--timeout", "120")
        ctl(a.bin, state, "circuit", "add", a.circuit, "--zkey", os.path.join(a.dir, a.circuit + ".zkey"),
            "--wasm" if a.kind == "wasm" else "--c", gen_src)
        out = os.path.join(out_root, f"w{workers}")
        # One warm-up input per worker: the key resident, the generator paged in, each worker's graph loaded.
        warm = ctl(a.bin, state, "submit", "--circuit", a.circuit, "--input", *inputs[:max(1, workers)],
                   "--out", out + "-warm").strip()
        ctl(a.bin, state, "wait", warm, "-q")
        with open(os.path.join(state, "zkfarmd.log")) as f:
            skip = len(f.read().splitlines())
        batch = [inputs[k % len(inputs)] for k in range(a.partitions)]
        if a.fed:  # the baseline: the same key fed ready witnesses (made by the warm-up's farm beforehand)
            wtns = [a.fed[k % len(a.fed)] for k in range(a.partitions)]
            job = ctl(a.bin, state, "submit", "--zkey", os.path.join(a.dir, a.circuit + ".zkey"), "--wtns", *wtns,
                      "--out", out).strip()
        else:
            job = ctl(a.bin, state, "submit", "--circuit", a.circuit, "--input", *batch, "--out", out).strip()
        ctl(a.bin, state, "wait", job, "-q")
        info = json.loads(ctl(a.bin, state, "jobs", "--json", "--limit", "1"))[0]
        with open(os.path.join(state, "zkfarmd.log")) as f:
            lines = f.read().splitlines()[skip:]
        proved = [m for m in (LINE.search(line) for line in lines) if m]
        wall = (info["finished_ms"] - info["submitted_ms"] - (info["queue_wait_ms"] or 0)) / 1000.0
        busy = sum(int(m.group(5)) for m in proved) / 1000.0 / wall
        witness = statistics.median(int(m.group(3)) for m in proved)
        ctl(a.bin, state, "stop", "--wait", "-q")
        return {"workers": workers, "rate": len(proved) / wall, "busy": busy, "witness_ms": witness,
                "proved": len(proved), "wall": wall}
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
        log.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--circuit", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--kind", default="native", choices=["native", "wasm"])
    ap.add_argument("--backend", default="cuda", choices=["cuda", "cpu", "auto"])
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--partitions", type=int, default=48)
    ap.add_argument("--generators", default=None)
    ap.add_argument("--arena-mib", type=int, default=4096)
    ap.add_argument("--out", default=None)
    ap.add_argument("--witness-engine", default="auto", choices=["auto", "graph", "generator"],
                    help="zkfarmd's witness_engine: the circuit's witness graph (auto, graph) or its generator")
    ap.add_argument("--lanes", type=int, default=1, help="gpu_lanes: prove steps at once for small keys (issue 36)")
    ap.add_argument("--fed", action="store_true",
                    help="also the baseline: the same key fed ready witnesses (NAME.K.wtns in --dir) instead of inputs")
    a = ap.parse_args()
    a.want_fed, a.fed = a.fed, None
    inputs = sorted((p for p in glob.glob(os.path.join(a.dir, a.circuit + ".*.json")) if p.rsplit(".", 2)[1].isdigit()),
                    key=lambda p: int(p.rsplit(".", 2)[1]))
    if not inputs:
        raise SystemExit(f"no inputs {a.circuit}.K.json in {a.dir}")
    gen_src = os.path.join(a.dir, a.circuit + "_cpp") if a.kind == "native" else os.path.join(
        a.dir, a.circuit + "_js", a.circuit + ".wasm")
    out_root = a.out or tempfile.mkdtemp(prefix="zkfarm-inputs-out-")
    rows = []
    fed_wtns = sorted(glob.glob(os.path.join(a.dir, a.circuit + ".*.wtns")))
    for w in [int(x) for x in a.workers.split(",")]:
        r = one(a, w, inputs, gen_src, out_root)
        rows.append(r)
        print(f"{w} synthesis workers ({a.witness_engine}): {r['proved']} inputs in {r['wall']:.2f} s, "
              f"{r['rate']:.2f}/s, GPU worker busy {100 * r['busy']:.0f} %, witness {r['witness_ms']:.0f} ms (median)",
              flush=True)
        if fed_wtns and a.want_fed:
            a.fed = fed_wtns
            f = one(a, w, inputs, gen_src, out_root + "-fed")
            a.fed = None
            print(f"{w} synthesis workers, witnesses given: {f['rate']:.2f}/s, GPU worker busy {100 * f['busy']:.0f} %; "
                  f"inputs/witnesses {r['rate'] / f['rate']:.2f}", flush=True)
    base = rows[0]["rate"] / rows[0]["workers"]
    print(f"\n{a.circuit} ({a.kind} generator, {a.backend} backend, {a.partitions} inputs a run, gpu_lanes {a.lanes})")
    print(f"{'workers':>7}  {'inputs/s':>8}  {'vs linear':>9}  {'GPU busy':>8}  {'witness ms':>10}")
    for r in rows:
        print(f"{r['workers']:>7}  {r['rate']:>8.2f}  {r['rate'] / (base * r['workers']):>9.2f}  "
              f"{100 * r['busy']:>7.0f}%  {r['witness_ms']:>10.0f}")
    print(f"proofs in {out_root}")


if __name__ == "__main__":
    main()
