#!/usr/bin/env python3
"""Witnesses per second: circomlib's SHA-256 over enough blocks for about
2^16 and 2^20 constraints, compiled here by circom2, its witness computed from
the same random inputs by

  snarkjs     `snarkjs wtns calculate circuit.wasm input.json w.wtns` (Node, V8)
  wasm        `zkfarm-prove witness circuit.wasm …` (wasm2c + gcc, docs/witness.md)
  native      `zkfarm-prove witness --witness-engine native circuit_cpp …` (circom --c, g++ and nasm)
  graph       `zkfarm-prove witness --witness-engine graph circuit_cpp …` (the witness graph)

each as a user runs it (a process per witness, start-up included), one after
the other, in one run; every witness is checked byte for byte against
snarkjs's. Then the graph as a synthesis worker holds it (zkfarm-bench-witness:
loaded once, batches of 1 and 64 on 1 … all cores). Prints witnesses/s and
the ratio to snarkjs, the one-off build times of both generators and of the
graph, and the graph's size.

    witness_bench.py --bin DIR --src DIR [--blocks 2,35] [--poseidon 127,2028] [--reps 5] [--work DIR]

--blocks: SHA-256 blocks per circuit (2: 63k constraints, about 2^16; 35:
1.09M, about 2^20); --poseidon: a chain of that many Poseidon(2) hashes
(517 constraints each: 127 about 2^16, 2028 about 2^20; empty: none);
--iszero: a circuit of that many IsEqual comparisons of input bytes (each an
IsZero: one field inversion a witness, the shape of zk-email's regex
circuits; 5400 is about zk-email's count; empty: none); --reps: witnesses
per tool and circuit.
"""
import argparse
import glob
import json
import os
import random
import re
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
    ap.add_argument("--iszero", default="")
    ap.add_argument("--eddsa", default="", help="N: a chain of N EdDSA-Poseidon verifications (circomlib), inversion-heavy")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--work", default=None)
    ap.add_argument("--seconds", type=float, default=3, help="each (batch, threads) of the held graph")
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
    specs = ([("sha", int(b)) for b in a.blocks.split(",") if b] + [("poseidon", int(n)) for n in a.poseidon.split(",") if n]
             + [("iszero", int(n)) for n in a.iszero.split(",") if n] + [("eddsa", int(n)) for n in a.eddsa.split(",") if n])
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
        elif kind_of == "iszero":
            name = f"iszero_{size}"
            source = ('pragma circom 2.0.0;\ninclude "circomlib/circuits/comparators.circom";\n'
                      "template M(n) { signal input in[n]; signal output count; component eq[n]; signal acc[n + 1];\n"
                      "  acc[0] <== 0; for (var i = 0; i < n; i++) { eq[i] = IsEqual();\n"
                      "    eq[i].in[0] <== in[i]; eq[i].in[1] <== 97 + i % 26; acc[i + 1] <== acc[i] + eq[i].out; }\n"
                      "  count <== acc[n]; }\n"
                      f"component main = M({size});\n")
            make_input = lambda rng, size=size: {"in": [rng.randint(96, 123) for _ in range(size)]}
        elif kind_of == "eddsa":
            # circomlib's verifier with `enabled` 0: every point operation and
            # inversion is computed, and no assert needs a real signature
            # (each is multiplied by `enabled`); A and R8 are the base point.
            name = f"eddsa_{size}"
            source = ('pragma circom 2.0.0;\ninclude "circomlib/circuits/eddsaposeidon.circom";\n'
                      "template E(n) { signal input Ax; signal input Ay; signal input S[n]; signal input M[n];\n"
                      "  signal output ok; component v[n]; for (var i = 0; i < n; i++) { v[i] = EdDSAPoseidonVerifier();\n"
                      "    v[i].enabled <== 0; v[i].Ax <== Ax; v[i].Ay <== Ay; v[i].S <== S[i]; v[i].R8x <== Ax;\n"
                      "    v[i].R8y <== Ay; v[i].M <== M[i]; } ok <== 1; }\n"
                      f"component main = E({size});\n")
            base8 = ("5299619240641551281634865583518297030282874472190772894086521144482721001553",
                     "16950150798460657717958625567821834550301663161624707787222815936182638968203")
            make_input = lambda rng, size=size: {"Ax": base8[0], "Ay": base8[1],
                                                 "S": [str(rng.randrange(1 << 250)) for _ in range(size)],
                                                 "M": [str(rng.randrange(1 << 250)) for _ in range(size)]}
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
        # One-off builds, timed apart: each generator alone, then the native
        # one with its graph (the graph's build: the difference).
        for kind, gen, engine in (("wasm", wasm, "wasm"), ("native", cdir, "native"), ("graph", cdir, "auto")):
            shutil.rmtree(os.path.join(work, "cache"), ignore_errors=True)
            t0 = time.monotonic()
            run([os.path.join(a.bin, "zkfarm-prove"), "witness", "--witness-engine", engine, gen, inputs[0],
                 os.path.join(work, "warm.wtns")], env=env)
            builds[kind] = time.monotonic() - t0
        builds["graph"] -= builds["native"]
        # The builds again, kept for the timed runs (the native build holds the graph).
        run([os.path.join(a.bin, "zkfarm-prove"), "witness", wasm, inputs[0], os.path.join(work, "warm.wtns")], env=env)
        graph_file = glob.glob(os.path.join(work, "cache", "zkfarm", "generators", "*", "graph"))[0]
        tools = {
            "snarkjs": lambda i, o: ["node", os.path.join(node, "snarkjs", "build", "cli.cjs"), "wtns", "calculate", wasm, i, o],
            "wasm": lambda i, o: [os.path.join(a.bin, "zkfarm-prove"), "witness", wasm, i, o],
            "native": lambda i, o: [os.path.join(a.bin, "zkfarm-prove"), "witness", "--witness-engine", "native", cdir, i, o],
            "graph": lambda i, o: [os.path.join(a.bin, "zkfarm-prove"), "witness", "--witness-engine", "graph", cdir, i, o],
        }
        times = {}
        for tool, cmd in tools.items():
            t0 = time.monotonic()
            for k, i in enumerate(inputs):
                run(cmd(i, os.path.join(wout, f"{tool}.{k}.wtns")), env=env)
            times[tool] = (time.monotonic() - t0) / len(inputs)
        for k in range(len(inputs)):
            ref = open(os.path.join(wout, f"snarkjs.{k}.wtns"), "rb").read()
            for tool in ("wasm", "native", "graph"):
                if open(os.path.join(wout, f"{tool}.{k}.wtns"), "rb").read() != ref:
                    raise SystemExit(f"{name} input {k}: the {tool} witness differs from snarkjs's")
        for f in os.listdir(wout):  # the next circuit's witnesses start from an empty tmpfs folder
            os.unlink(os.path.join(wout, f))
        cores = os.cpu_count() or 1
        threads = ",".join(str(t) for t in sorted({1, 2, 4, 8, 16, cores}) if t <= cores)
        held = run([os.path.join(a.bin, "zkfarm-bench-witness"), graph_file, *inputs, "--batch", "1,64",
                    "--threads", threads, "--seconds", str(a.seconds)]).stdout
        print(held, end="", flush=True)
        for line in held.splitlines():
            m = re.match(r"batch\s+(\d+) threads\s+(\d+):\s+([0-9.]+) witnesses/s", line)
            if m:
                times[f"held_b{m.group(1)}_t{m.group(2)}"] = 1 / float(m.group(3))
        times["graph_bytes"] = os.path.getsize(graph_file)
        times["graph_line"] = held.splitlines()[0]
        rows.append((name, constraints, times, builds))
        print(f"{name}: {constraints} constraints; witnesses identical to snarkjs's ({len(inputs)} inputs)", flush=True)
    print()
    print(f"{'circuit':<14} {'constraints':>11}  {'snarkjs w/s':>11}  {'wasm w/s':>9}  {'native w/s':>10}  {'graph w/s':>9}  "
          f"{'wasm/snarkjs':>12}  {'native/snarkjs':>14}  {'graph/snarkjs':>13}  {'build wasm':>10}  {'build native':>12}  "
          f"{'build graph':>11}")
    for name, constraints, t, b in rows:
        print(f"{name:<14} {constraints:>11}  {1 / t['snarkjs']:>11.2f}  {1 / t['wasm']:>9.2f}  {1 / t['native']:>10.2f}  "
              f"{1 / t['graph']:>9.2f}  {t['snarkjs'] / t['wasm']:>11.2f}x  {t['snarkjs'] / t['native']:>13.2f}x  "
              f"{t['snarkjs'] / t['graph']:>12.2f}x  {b['wasm']:>9.1f}s  {b['native']:>11.1f}s  {b['graph']:>10.1f}s")
    print()
    print("The graph held in memory (zkfarm-bench-witness), against one witness of each tool above:")
    for name, constraints, t, b in rows:
        print(f"{name}: {t['graph_line']}; file {t['graph_bytes'] / 2**20:.1f} MiB")
        for key in sorted(k for k in t if k.startswith("held_")):
            batch, threads = key[6:].split("_")
            per_core = t[key] * int(threads[1:])
            print(f"  {batch} {threads}: {1 / t[key]:8.2f} w/s; per witness and core {per_core * 1000:7.2f} ms: "
                  f"{t['snarkjs'] / per_core:6.1f}x snarkjs, {t['native'] / per_core:5.1f}x native (a process each)")


if __name__ == "__main__":
    main()
