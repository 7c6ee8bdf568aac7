#!/usr/bin/env python3
"""Witnesses per second: circomlib's SHA-256 over enough blocks for about
2^16 and 2^20 constraints, compiled here by circom2, its witness computed from
the same random inputs by

  snarkjs     `snarkjs wtns calculate circuit.wasm input.json w.wtns` (Node, V8)
  wasm        `zkfarm-prove witness circuit.wasm …` (wasm2c + gcc, docs/witness.md)
  native      `zkfarm-prove witness circuit_cpp …` (circom --c, g++ and nasm)

each as a user runs it (a process per witness, start-up included), one after
the other, in one run; every witness is checked byte for byte against
snarkjs's. Prints witnesses/s and the ratio to snarkjs, and the one-off build
times of both generators.

    witness_bench.py --bin DIR --src DIR [--blocks 2,35] [--poseidon 127,2028] [--reps 5] [--work DIR]

--blocks: SHA-256 blocks per circuit (2: 63k constraints, about 2^16; 35:
1.09M, about 2^20); --poseidon: a chain of that many Poseidon(2) hashes
(517 constraints each: 127 about 2^16, 2028 about 2^20; empty: none);
--reps: witnesses per tool and circuit.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import tempfile
import time


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--blocks", default="2,35")
    ap.add_argument("--poseidon", default="")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    work = a.work or os.path.join(a.src, "build", "bench-witness")
    os.makedirs(work, exist_ok=True)
    # Witnesses are written to memory (tmpfs) by every tool alike: the
    # generation is measured, not the disk (zkfarm-prove fsyncs what it writes).
    wout = tempfile.mkdtemp(prefix="zkfarm-wbench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        measure(a, work, wout)
    finally:  # a failed or interrupted run leaves nothing in /dev/shm either
        shutil.rmtree(wout, ignore_errors=True)


def measure(a, work, wout):
    node = os.path.join(a.src, "node_modules")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
    rows = []
    specs = [("sha", int(b)) for b in a.blocks.split(",") if b] + [("poseidon", int(n)) for n in a.poseidon.split(",") if n]
    for kind_of, size in specs:
        if kind_of == "sha":
            bits = size * 512 - 65  # the message bits that pad into exactly `size` blocks
            name = f"sha256_{size}b"
            source = ('pragma circom 2.0.0;\ninclude "circomlib/circuits/sha256/sha256.circom";\n'
                      "template D(n) { signal input in[n]; signal output out[256];\n"
                      "  component h = Sha256(n); for (var i = 0; i < n; i++) h.in[i] <== in[i];\n"
                      "  for (var i = 0; i < 256; i++) out[i] <== h.out[i]; }\n"
                      f"component main = D({bits});\n")
            make_input = lambda rng, bits=bits: {"in": [rng.randint(0, 1) for _ in range(bits)]}
        else:
            name = f"poseidon_{size}"
            source = ('pragma circom 2.0.0;\ninclude "circomlib/circuits/poseidon.circom";\n'
                      "template C(n) { signal input x; signal output out; component h[n]; signal acc[n + 1];\n"
                      "  acc[0] <== x; for (var i = 0; i < n; i++) { h[i] = Poseidon(2);\n"
                      "    h[i].inputs[0] <== acc[i]; h[i].inputs[1] <== i; acc[i + 1] <== h[i].out; }\n"
                      "  out <== acc[n]; }\n"
                      f"component main = C({size});\n")
            make_input = lambda rng: {"x": str(rng.randrange(1 << 250))}
        circuit = os.path.join(work, name + ".circom")
        if not os.path.exists(os.path.join(work, name + ".r1cs")):
            with open(circuit, "w") as f:
                f.write(source)
            t0 = time.monotonic()
            # circom2 (WASI) reads includes only below its working directory.
            rel = os.path.relpath(circuit, a.src)
            run(["node", os.path.join(node, "circom2", "cli.js"), rel, "--r1cs", "--wasm", "--c", "-o", work, "-l",
                 "node_modules"], cwd=a.src)
            print(f"{name}: circom2 compiled it in {time.monotonic() - t0:.1f} s", flush=True)
        info = run(["node", os.path.join(node, "snarkjs", "build", "cli.cjs"), "r1cs", "info",
                    os.path.join(work, name + ".r1cs")]).stdout
        constraints = int(info.split("# of Constraints:")[1].split()[0].replace("\x1b[0m", ""))
        wasm = os.path.join(work, f"{name}_js", f"{name}.wasm")
        cdir = os.path.join(work, f"{name}_cpp")
        rng = random.Random(size)
        inputs = []
        for k in range(a.reps):
            p = os.path.join(work, f"{name}.{k}.json")
            with open(p, "w") as f:
                json.dump(make_input(rng), f)
            inputs.append(p)
        builds = {}
        for kind, gen in (("wasm", wasm), ("native", cdir)):  # one-off builds, timed apart
            shutil.rmtree(os.path.join(work, "cache"), ignore_errors=True)
            t0 = time.monotonic()
            run([os.path.join(a.bin, "zkfarm-prove"), "witness", gen, inputs[0], os.path.join(work, "warm.wtns")], env=env)
            builds[kind] = time.monotonic() - t0
            builds[kind + "_gen"] = gen
        # The builds again, kept for the timed runs.
        for kind in ("wasm", "native"):
            run([os.path.join(a.bin, "zkfarm-prove"), "witness", builds[kind + "_gen"], inputs[0],
                 os.path.join(work, "warm.wtns")], env=env)
        tools = {
            "snarkjs": lambda i, o: ["node", os.path.join(node, "snarkjs", "build", "cli.cjs"), "wtns", "calculate", wasm, i, o],
            "wasm": lambda i, o: [os.path.join(a.bin, "zkfarm-prove"), "witness", wasm, i, o],
            "native": lambda i, o: [os.path.join(a.bin, "zkfarm-prove"), "witness", cdir, i, o],
        }
        times = {}
        for tool, cmd in tools.items():
            t0 = time.monotonic()
            for k, i in enumerate(inputs):
                run(cmd(i, os.path.join(wout, f"{tool}.{k}.wtns")), env=env)
            times[tool] = (time.monotonic() - t0) / len(inputs)
        for k in range(len(inputs)):
            ref = open(os.path.join(wout, f"snarkjs.{k}.wtns"), "rb").read()
            for tool in ("wasm", "native"):
                if open(os.path.join(wout, f"{tool}.{k}.wtns"), "rb").read() != ref:
                    raise SystemExit(f"{name} input {k}: the {tool} witness differs from snarkjs's")
        for f in os.listdir(wout):  # the next circuit's witnesses start from an empty tmpfs folder
            os.unlink(os.path.join(wout, f))
        rows.append((name, constraints, times, builds))
        print(f"{name}: {constraints} constraints; witnesses identical to snarkjs's ({len(inputs)} inputs)", flush=True)
    print()
    print(f"{'circuit':<14} {'constraints':>11}  {'snarkjs w/s':>11}  {'wasm w/s':>9}  {'native w/s':>10}  "
          f"{'wasm/snarkjs':>12}  {'native/snarkjs':>14}  {'build wasm':>10}  {'build native':>12}")
    for name, constraints, t, b in rows:
        print(f"{name:<14} {constraints:>11}  {1 / t['snarkjs']:>11.2f}  {1 / t['wasm']:>9.2f}  {1 / t['native']:>10.2f}  "
              f"{t['snarkjs'] / t['wasm']:>11.2f}x  {t['snarkjs'] / t['native']:>13.2f}x  {b['wasm']:>9.1f}s  "
              f"{b['native']:>11.1f}s")


if __name__ == "__main__":
    main()
