"""Witness generation from circom inputs (issue 14), with real circomlib
circuits compiled here by circom2 (npm): Poseidon, a depth-8 Poseidon Merkle
inclusion proof, SHA-256 of a one-block message, and a circuit whose generator
can fail (an assertion, an endless loop). For both generator kinds (the
circuit's wasm through wasm2c, its circom --c folder):

- witnesses byte for byte those of `snarkjs wtns calculate`;
- `zkfarm-prove fullprove` proofs verified by snarkjs, public.json equal to
  `snarkjs groth16 fullprove`'s;
- every bad input of the issue: exit 2, a message naming the input file and
  the fault, no proof file;
- the farm: circuits added, jobs of inputs proved and verified, a bad input
  failing its job with that message, a job surviving a SIGKILL of zkfarmd
  after its input files are gone, each partition proved once.

Run by ctest (tests/witgen/CMakeLists.txt) with ZKFARM_BIN, ZKFARM_SOURCE_DIR
and ZKFARM_SHARED_FIXTURES in the environment.
"""
import fcntl
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.environ["ZKFARM_SOURCE_DIR"], "tests", "farm"))
from test_farm import BIN, SRC, Farm, ctl, snarkjs_verify  # noqa: E402
from test_journal import become_subreaper  # noqa: E402
from attack_tools import CTL_GROUP, EVE, ctl_as, ensure_group_member, run_as, write_config  # noqa: E402

CIRCUITS = os.path.join(SRC, "tests", "witgen", "circuits")
NODE = os.path.join(SRC, "node_modules")
P = 21888242871839275222246405745257275088548364400416034343698204186575808495617
WORK = None  # the module's folder: compiled circuits, keys, inputs
XDG = None   # zkfarm-prove's cache folder (XDG_CACHE_HOME)
# ZKFARM_WITGEN_TEST_CACHE (set by CMake): what this module's classes (each a
# process of its own under ctest) and both suites of scripts/test.sh share,
# each in a folder named by the hash of what it is made from, made once under
# a lock and only read afterwards:
#   circom-HASH/NAME  circom's outputs (circom2's and snarkjs's pinned
#                     versions, the test circuits);
#   work-HASH         the module's folder as setUpModule leaves it: those
#                     outputs, the test keys (zkfarm-testkey: testkey/ and
#                     groth16/), the inputs (this file);
#   xdg-HASH          zkfarm-prove's built generators (witgen/, groth16/'s
#                     field headers: what a generator is built from).
# A folder whose sources changed is made afresh and the old one removed.
SHARED = os.environ.get("ZKFARM_WITGEN_TEST_CACHE")


def source_hash(*paths):
    """The first 16 hex digits of SHA-256 over the files (and the files of the folders) named, in order."""
    h = hashlib.sha256()
    for path in paths:
        names = sorted(os.listdir(path)) if os.path.isdir(path) else [""]
        for name in names:
            full = os.path.join(path, name) if name else path
            if os.path.isfile(full):
                with open(full, "rb") as f:
                    h.update(full[len(SRC):].encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


class SharedLock:
    """An exclusive flock on SHARED/.lock: one process makes a shared folder while the others wait."""

    def __enter__(self):
        os.makedirs(SHARED, exist_ok=True)
        self.f = open(os.path.join(SHARED, ".lock"), "a")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def shared_folder(kind, key, make=None):
    """SHARED/KIND-KEY, made by make(folder) if missing (into a temporary
    folder, renamed when whole); other KIND-* folders are removed. Call under SharedLock."""
    path = os.path.join(SHARED, f"{kind}-{key}")
    for old in os.listdir(SHARED):
        if old.startswith(kind + "-") and old != os.path.basename(path):
            shutil.rmtree(os.path.join(SHARED, old), ignore_errors=True)
    if not os.path.isdir(path):
        tmp = path + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        if make:
            make(tmp)
        os.rename(tmp, path)
    return path


def compile_circuit(name, flags, into, circom_cache):
    """circom2 NAME.circom FLAGS -o INTO, or its outputs from circom_cache/NAME."""
    keep = os.path.join(circom_cache, name) if circom_cache else None
    if keep and os.path.isdir(keep):
        copy_into(keep, into)
        return
    # circom2 (WASI) reads includes only below its working directory.
    run(["node", os.path.join(NODE, "circom2", "cli.js"), os.path.join("tests", "witgen", "circuits", name + ".circom"),
         *flags, "-o", into, "-l", "node_modules"], cwd=SRC)
    if keep:
        tmp = keep + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        for entry in (f"{name}.r1cs", f"{name}_js", f"{name}_cpp"):
            if os.path.exists(os.path.join(into, entry)):
                copy_into(os.path.join(into, entry), os.path.join(tmp, entry))
        os.rename(tmp, keep)


def copy_into(src, dst):
    """src (a file, or a folder's entries) copied to dst."""
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        shutil.copy(src, dst)


def run(cmd, check=True, timeout=600, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}: {p.stdout}{p.stderr}")
    return p


def snarkjs(*args, check=True):
    return run(["node", os.path.join(NODE, "snarkjs", "build", "cli.cjs"), *args], check=check, cwd=WORK)


def prove_tool(*args, env=None, timeout=600):
    e = dict(os.environ, XDG_CACHE_HOME=XDG)
    e.update(env or {})
    return run([os.path.join(BIN, "zkfarm-prove"), *args], check=False, env=e, timeout=timeout)


def circ(name, part=""):
    """A compiled circuit's files: r1cs, its wasm, its --c folder, key, vkey."""
    return {"r1cs": f"{WORK}/{name}.r1cs", "wasm": f"{WORK}/{name}_js/{name}.wasm", "c": f"{WORK}/{name}_cpp",
            "zkey": f"{WORK}/{name}.zkey", "vkey": f"{WORK}/{name}.vkey.json"}[part] if part else name


def write_json(name, obj):
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def setUpModule():
    global WORK, XDG
    become_subreaper()
    WORK = tempfile.mkdtemp(prefix="zkfarm-witgen-")
    os.chmod(WORK, 0o755)
    if not SHARED:
        XDG = os.path.join(WORK, "cache")
        make_work(WORK, None)
        return
    with SharedLock():
        circom_cache = shared_folder("circom", source_hash(os.path.join(SRC, "package-lock.json"), CIRCUITS))
        made = WORK

        def make(folder):
            global WORK
            WORK = folder  # the helpers (circ, write_json, snarkjs) work in WORK
            try:
                make_work(folder, circom_cache)
            finally:
                WORK = made

        template = shared_folder("work", source_hash(os.path.join(SRC, "package-lock.json"), CIRCUITS, __file__,
                                                     os.path.join(SRC, "testkey"), os.path.join(SRC, "groth16")), make)
        XDG = shared_folder("xdg", source_hash(*[os.path.join(SRC, "groth16", n) for n in
                                                 ("field.hpp", "mont_mul_x86.hpp", "bn254.hpp", "bls12_381.hpp")],
                                               os.path.join(SRC, "witgen")))
    copy_into(template, WORK)


def make_work(folder, circom_cache):
    """The module's circuits (circom2), test keys (zkfarm-testkey) and inputs, in `folder` (WORK)."""
    for name in ("poseidon3", "merkle8", "merkle8_root", "sha256_440", "checks"):
        compile_circuit(name, ["--r1cs", "--wasm", "--c"], folder, circom_cache)
        if name != "merkle8_root":
            run([os.path.join(BIN, "zkfarm-testkey"), "--r1cs", circ(name, "r1cs"), "--out", os.path.join(folder, name),
                 "--seed", "7"])
    for name in ("gadgets", "index"):  # witness-graph circuits (issue 32): no key needed
        compile_circuit(name, ["--wasm", "--c"], folder, circom_cache)
    # The statement check (issue 45): a circuit and its twin with swapped inputs, one key.
    compile_circuit("statement", ["--r1cs", "--wasm", "--c"], folder, circom_cache)
    run([os.path.join(BIN, "zkfarm-testkey"), "--r1cs", circ("statement", "r1cs"), "--out",
         os.path.join(folder, "statement"), "--seed", "7"])
    compile_circuit("statement_swapped", ["--c"], folder, circom_cache)
    write_json("statement.0.json", {"x": 2, "y": 3})
    for k, inp in enumerate(GADGET_INPUTS):
        write_json(f"gadgets.{k}.json", {n: str(v) for n, v in inp.items()})
    for sel in range(4):
        write_json(f"index.{sel}.json", {"sel": sel, "v": ["11", "12", "13", "14"]})
    rng = random.Random(14)
    write_json("poseidon3.0.json", {"in": ["1", "2", "3"]})
    # Every way snarkjs reads a value: a number, decimal, hex, negative.
    write_json("poseidon3.1.json", {"in": [42, "0x1f", "-5"]})
    write_json("sha256_440.0.json", {"in": [rng.randint(0, 1) for _ in range(440)]})
    for k in range(4):
        inp = {"leaf": str(rng.randrange(P)), "pathElements": [str(rng.randrange(P)) for _ in range(8)],
               "pathIndices": [rng.randint(0, 1) for _ in range(8)]}
        root_in = write_json(f"merkle8_root.{k}.json", inp)
        snarkjs("wtns", "calculate", circ("merkle8_root", "wasm"), root_in, f"{folder}/root.wtns")
        snarkjs("wtns", "export", "json", f"{folder}/root.wtns", f"{folder}/root.json")
        with open(f"{folder}/root.json") as f:
            inp["root"] = json.load(f)[1]  # the output: witness value 1
        write_json(f"merkle8.{k}.json", inp)
    write_json("checks.0.json", {"a": 3, "b": [1, 2], "loop": 0})


def tearDownModule():
    shutil.rmtree(WORK, ignore_errors=True)


# Inputs of tests/witgen/circuits/gadgets.circom taking both sides of its
# branches: a = 0 (IsZero's other side), y = 5 (the nested if), "negative"
# values (above (p-1)/2) for the signed comparisons and shifts, a shift past
# the field's bits, equal inputs.
GADGET_INPUTS = [dict(a=0, b=5, s=1000, k=3), dict(a=123456789, b=5, s=65535, k=2), dict(a=P - 1, b=17, s=3, k=250),
                 dict(a=42, b=42, s=7, k=0), dict(a=2**200 + 12345, b=P - 5, s=0, k=1)]

GOOD = [("poseidon3", 0), ("poseidon3", 1), ("merkle8", 0), ("merkle8", 1), ("sha256_440", 0), ("checks", 0)]


class OneShotTest(unittest.TestCase):
    def test_witnesses_are_byte_for_byte_snarkjs_for_both_generator_kinds(self):
        for name, k in GOOD:
            inp = f"{WORK}/{name}.{k}.json"
            snarkjs("wtns", "calculate", circ(name, "wasm"), inp, f"{WORK}/ref.wtns")
            with open(f"{WORK}/ref.wtns", "rb") as f:
                ref = f.read()
            for kind in ("wasm", "c"):
                out = f"{WORK}/{name}.{k}.{kind}.wtns"
                p = prove_tool("witness", circ(name, kind), inp, out)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(out, "rb") as f:
                    self.assertEqual(f.read(), ref, f"{name} input {k}: the {kind} witness differs from snarkjs's")

    def test_fullprove_proofs_verify_and_public_json_is_snarkjs_fullproves(self):
        for name, k in GOOD:
            inp = f"{WORK}/{name}.{k}.json"
            snarkjs("groth16", "fullprove", inp, circ(name, "wasm"), circ(name, "zkey"), f"{WORK}/sp.json",
                    f"{WORK}/spub.json")
            with open(f"{WORK}/spub.json") as f:
                ref_public = f.read()
            triples = []
            for kind in ("wasm", "c"):
                proof, pub = f"{WORK}/{name}.{k}.{kind}.proof.json", f"{WORK}/{name}.{k}.{kind}.public.json"
                p = prove_tool("fullprove", inp, circ(name, kind), circ(name, "zkey"), proof, pub)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(pub) as f:
                    self.assertEqual(f.read(), ref_public, f"{name} {kind}: public.json differs from snarkjs fullprove's")
                triples.append((circ(name, "vkey"), pub, proof))
            ok, text = snarkjs_verify(triples)
            self.assertTrue(ok, text)

    def test_bad_inputs_exit_2_naming_the_file_and_the_fault_and_write_nothing(self):
        cases = [
            ({"a": 3, "loop": 0}, "a signal is missing"),
            ({"a": 3, "b": [1, 2], "loop": 0, "z": 1}, "signal z is not an input of the circuit"),
            ({"a": str(P), "b": [1, 2], "loop": 0}, "not a field element"),
            ({"a": "-" + str(P), "b": [1, 2], "loop": 0}, "not a field element"),
            ({"a": 3, "b": [1, 2, 3], "loop": 0}, "signal b has 3 values, the circuit's has 2"),
            ({"a": 1.5, "b": [1, 2], "loop": 0}, "not an integer"),
            ({"a": True, "b": [1, 2], "loop": 0}, "not a field element (a boolean)"),
            ({"a": "12a", "b": [1, 2], "loop": 0}, "not a number"),
            ({"a": 2 ** 60, "b": [1, 2], "loop": 0}, "beyond 2^53"),
            ({"a": 7, "b": [1, 2], "loop": 0}, "Assert Failed"),
        ]
        for kind in ("wasm", "c"):
            for obj, want in cases:
                inp = write_json("bad.json", obj)
                proof, pub = f"{WORK}/bad.proof.json", f"{WORK}/bad.public.json"
                p = prove_tool("fullprove", inp, circ("checks", kind), circ("checks", "zkey"), proof, pub)
                self.assertEqual(p.returncode, 2, f"{kind} {obj}: {p.stderr}")
                self.assertIn(inp, p.stderr, f"{kind} {obj}: the message names the input file")
                # circom's C++ says it its own way: "Failed assert in template/function Checks line 8"
                alt = "Failed assert" if want == "Assert Failed" and kind == "c" else want
                self.assertIn(alt, p.stderr, f"{kind} {obj}")
                self.assertFalse(os.path.exists(proof) or os.path.exists(pub), "no output for a bad input")
        # Not JSON at all, and a file that is not there.
        with open(f"{WORK}/bad.json", "w") as f:
            f.write("{\"a\": [1,")
        p = prove_tool("fullprove", f"{WORK}/bad.json", circ("checks", "wasm"), circ("checks", "zkey"), "/tmp/x", "/tmp/y")
        self.assertEqual(p.returncode, 2)
        self.assertIn("not JSON", p.stderr)
        p = prove_tool("fullprove", f"{WORK}/none.json", circ("checks", "wasm"), circ("checks", "zkey"), "/tmp/x", "/tmp/y")
        self.assertEqual(p.returncode, 2)
        self.assertIn("none.json: cannot open", p.stderr)

    def test_a_hanging_generator_times_out_and_a_crashing_one_is_named(self):
        inp = write_json("loop.json", {"a": 3, "b": [1, 2], "loop": 1})
        for kind in ("wasm", "c"):
            t0 = time.monotonic()
            p = prove_tool("fullprove", "--timeout-ms", "1500", inp, circ("checks", kind), circ("checks", "zkey"),
                           f"{WORK}/l.proof.json", f"{WORK}/l.public.json")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(inp + ": witness generation timed out after 1500 ms", p.stderr)
            self.assertFalse(os.path.exists(f"{WORK}/l.proof.json"))
        # A generator that crashes (a built one is any executable with --info).
        info = json.dumps({"kind": "native", "prime": str(P), "n8": 32, "witness_size": 6, "input_count": 4})
        crash = os.path.join(WORK, "crashing-generator")
        with open(crash, "w") as f:
            f.write(f"#!/bin/sh\n[ \"$1\" = --info ] && {{ echo '{info}'; exit 0; }}\nkill -SEGV $$\n")
        os.chmod(crash, 0o755)
        p = prove_tool("fullprove", f"{WORK}/checks.0.json", crash, circ("checks", "zkey"), f"{WORK}/c.proof.json",
                       f"{WORK}/c.public.json")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("checks.0.json: the generator crashed (killed by signal 11", p.stderr)

    def test_a_generator_of_another_circuit_is_refused_by_the_key(self):
        p = prove_tool("fullprove", f"{WORK}/poseidon3.0.json", circ("poseidon3", "wasm"), circ("merkle8", "zkey"),
                       f"{WORK}/m.proof.json", f"{WORK}/m.public.json")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("values, key expects nVars", p.stderr)

    def test_the_engine_named_is_the_generators_kind_and_a_graph_build_is_announced(self):
        """Issue 46 (defects): `--witness-engine wasm` on a --c folder ran
        its native code; a graph build (seconds to a minute) said nothing."""
        inp = f"{WORK}/statement.0.json"
        for engine, source, give in (("wasm", circ("statement", "c"), "give its circuit.wasm"),
                                     ("native", circ("statement", "wasm"), "give its circom --c folder")):
            p = prove_tool("witness", "--witness-engine", engine, source, inp, f"{WORK}/engine.wtns")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"--witness-engine {engine}, but this is", p.stderr)
            self.assertIn(give, p.stderr)
            self.assertFalse(os.path.exists(f"{WORK}/engine.wtns"))
        # The generator (built once in the shared cache), copied without its
        # graph into a cache of this test's own: only the graph is built there.
        self.assertEqual(prove_tool("witness", circ("statement", "c"), inp, f"{WORK}/engine.wtns").returncode, 0)
        cache = os.path.join(XDG, "zkfarm", "generators")
        with open(os.path.join(circ("statement", "c"), "statement.dat"), "rb") as f:
            dat = f.read()
        (built,) = [d for d in os.listdir(cache) if os.path.isfile(os.path.join(cache, d, "generator.dat")) and
                    open(os.path.join(cache, d, "generator.dat"), "rb").read() == dat]
        fresh = tempfile.mkdtemp(prefix="zkfarm-witgen-xdg-")
        self.addCleanup(shutil.rmtree, fresh, True)
        mine = os.path.join(fresh, "zkfarm", "generators", built)
        shutil.copytree(os.path.join(cache, built), mine)
        for extra in ("graph", "graph.refused", "graph.slower"):
            if os.path.exists(os.path.join(mine, extra)):
                os.unlink(os.path.join(mine, extra))
        graph = ["witness", "--witness-engine", "graph", circ("statement", "c"), inp, f"{WORK}/engine.wtns"]
        p = prove_tool(*graph, env={"XDG_CACHE_HOME": fresh})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"building the witness graph of {circ('statement', 'c')}", p.stderr)
        self.assertNotIn("witness generator", p.stderr)
        p = prove_tool(*graph, env={"XDG_CACHE_HOME": fresh})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("building", p.stderr)


class GraphTest(unittest.TestCase):
    """The witness graph (issue 32): recorded once from the --c folder,
    byte for byte snarkjs's; circuits it cannot be stay on the generator."""

    def reference(self, circuit, inp):
        snarkjs("wtns", "calculate", circ(circuit, "wasm"), inp, f"{WORK}/ref.wtns")
        with open(f"{WORK}/ref.wtns", "rb") as f:
            return f.read()

    def witness(self, generator, inp, engine):
        out = f"{WORK}/graph.wtns"
        if os.path.exists(out):
            os.unlink(out)
        p = prove_tool("witness", "--witness-engine", engine, generator, inp, out)
        if p.returncode != 0:
            self.assertFalse(os.path.exists(out), "a failed witness left its file")
            return p, None
        with open(out, "rb") as f:
            return p, f.read()

    def test_graph_witnesses_are_snarkjs_byte_for_byte_on_both_sides_of_every_branch(self):
        cases = [(n, k) for n, k in GOOD if n != "checks"] + [("gadgets", k) for k in range(len(GADGET_INPUTS))]
        for name, k in cases:
            inp = f"{WORK}/{name}.{k}.json"
            p, got = self.witness(circ(name, "c"), inp, "graph")
            self.assertEqual(p.returncode, 0, f"{name} input {k}: {p.stderr}")
            self.assertEqual(got, self.reference(name, inp), f"{name} input {k}: the graph's witness differs from snarkjs's")

    def test_input_dependent_control_flow_stays_on_the_generator_and_is_right(self):
        for name, inputs, why in (("checks", [f"{WORK}/checks.0.json"], "input-dependent loop condition at template Checks line 13"),
                                  ("index", [f"{WORK}/index.{s}.json" for s in range(4)], "input-dependent array index")):
            p, _ = self.witness(circ(name, "c"), inputs[0], "graph")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("has no witness graph", p.stderr)
            self.assertIn(why, p.stderr)
            for inp in inputs:  # the default takes the generator, and is right
                p, got = self.witness(circ(name, "c"), inp, "auto")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(got, self.reference(name, inp), f"{name} {inp}")

    def test_a_failed_assert_fails_its_input_in_circoms_words(self):
        with open(f"{WORK}/merkle8.0.json") as f:
            inp = json.load(f)
        inp["root"] = str((int(inp["root"]) + 1) % P)
        bad = write_json("merkle8.badroot.json", inp)
        for engine in ("auto", "graph"):
            p, _ = self.witness(circ("merkle8", "c"), bad, engine)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("merkle8.badroot.json", p.stderr)
            self.assertIn("Failed assert in template/function", p.stderr)  # the generator's words, not the graph's

    def test_a_corrupted_graph_is_refused_and_the_generator_takes_over(self):
        inp = f"{WORK}/poseidon3.0.json"
        self.assertEqual(self.witness(circ("poseidon3", "c"), inp, "graph")[0].returncode, 0)
        with open(os.path.join(circ("poseidon3", "c"), "poseidon3.dat"), "rb") as f:
            dat = f.read()
        cache = os.path.join(XDG, "zkfarm", "generators")
        def same_dat(d):
            with open(os.path.join(cache, d, "generator.dat"), "rb") as f:
                return f.read() == dat
        (built,) = [d for d in os.listdir(cache) if os.path.isfile(os.path.join(cache, d, "graph")) and same_dat(d)]
        copy = os.path.join(WORK, "corrupt")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(os.path.join(cache, built), copy)
        # The graph's plan (graph.plan) is a checked file of its own, used in
        # the graph's place: first it alone serves, then both are damaged.
        self.assertTrue(os.path.isfile(os.path.join(copy, "graph.plan")))
        def flip(name):
            with open(os.path.join(copy, name), "r+b") as f:
                f.seek(100)
                b = f.read(1)
                f.seek(100)
                f.write(bytes([b[0] ^ 1]))
        flip("graph")
        p, got = self.witness(os.path.join(copy, "generator"), inp, "graph")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(got, self.reference("poseidon3", inp))
        flip("graph.plan")
        p, _ = self.witness(os.path.join(copy, "generator"), inp, "graph")
        self.assertIn("graph's plan is not used", p.stderr)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("SHA-256 does not match", p.stderr)
        p, got = self.witness(os.path.join(copy, "generator"), inp, "auto")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(got, self.reference("poseidon3", inp))


def journal_proofs(state):
    """{(job, partition): number of proofs} from the journal, read-only."""
    db = sqlite3.connect(f"file:{state}/journal.sqlite?mode=ro", uri=True)
    try:
        return {(j, i): n for j, i, n in db.execute("SELECT job, idx, count(*) FROM proofs GROUP BY job, idx")}
    finally:
        db.close()


class FarmTest(unittest.TestCase):
    def setUp(self):
        self.farms = []

    def tearDown(self):
        for f in self.farms:
            f.close()

    def farm(self, *extra, env=None, state=None):
        f = Farm("--synth-workers", "2", *extra, env=env, state=state)
        self.farms.append(f)
        return f

    def shared_farm(self):
        """A farm whose control.sock eve (an unprivileged user) may use."""
        ensure_group_member(CTL_GROUP, EVE)
        cfg_dir = tempfile.mkdtemp(prefix="zkfarm-witgen-cfg-")
        self.addCleanup(shutil.rmtree, cfg_dir, True)
        f = self.farm("--config", write_config(os.path.join(cfg_dir, "zkfarmd.toml"), control_group=CTL_GROUP))
        os.chmod(f.dir, 0o711)  # the state dir inside is 0750 root:CTL_GROUP
        return f

    def add(self, farm, name, circuit, kind):
        # A --c circuit's witness graph is checked on the circuit's first test input too (issue 32).
        test_input = ["--test-input", f"{WORK}/{circuit}.0.json"] if kind == "c" else []
        code, out, err = ctl(farm.state, "circuit", "add", name, "--zkey", circ(circuit, "zkey"),
                             "--wasm" if kind == "wasm" else "--c", circ(circuit, kind), *test_input, check=False,
                             timeout=900)
        self.assertEqual(code, 0, err + farm.output())
        return out

    def test_jobs_of_inputs_for_both_generator_kinds_verify_and_bad_inputs_fail_their_job(self):
        farm = self.shared_farm()
        self.assertIn("wasm generator", self.add(farm, "hash", "poseidon3", "wasm"))
        added = self.add(farm, "tree", "merkle8", "c")
        self.assertIn("native generator", added)
        self.assertIn("witness: graph", added)
        self.add(farm, "checks", "checks", "wasm")
        listed = {c["name"]: c for c in json.loads(ctl(farm.state, "circuit", "list", "--json")[1])}
        self.assertEqual(set(listed), {"hash", "tree", "checks"})
        self.assertEqual(listed["tree"]["kind"], "native")
        # Issue 32: a --c circuit gets a witness graph; a wasm one says why not.
        self.assertEqual(listed["tree"]["witness"], "graph")
        self.assertTrue(listed["hash"]["witness"].startswith("wasm ("), listed["hash"])
        self.assertEqual(listed["tree"]["zkey"], circ("merkle8", "zkey"), "the owner (root) sees where it came from")
        # Issue 31: another user saw every circuit's paths and owner uid. The
        # names stay (any user may prove with any circuit); the rest is the owner's.
        code, out, err = ctl_as(EVE, farm.state, "circuit", "list", "--json")
        self.assertEqual(code, 0, err)
        seen = {c["name"]: c for c in json.loads(out)}
        self.assertEqual(set(seen), {"hash", "tree", "checks"})
        for c in seen.values():
            self.assertFalse({"zkey", "source", "owner_uid"} & set(c), c)
        jobs = []
        for name, circuit, inputs in (("hash", "poseidon3", [0, 1]), ("tree", "merkle8", [0, 1, 2, 3])):
            out = os.path.join(farm.dir, "out-" + name)
            code, job, err = ctl(farm.state, "submit", "--circuit", name, "--input",
                                 *[f"{WORK}/{circuit}.{k}.json" for k in inputs], "--out", out, check=False)
            self.assertEqual(code, 0, err)
            jobs.append((job.strip(), circuit, inputs, out))
        # A bad input of a third job: that job fails, naming the file; the others are untouched.
        bad = write_json("farm-bad.json", {"a": 7, "b": [1, 2], "loop": 0})
        code, bad_job, err = ctl(farm.state, "submit", "--circuit", "checks", "--input", bad, "--out",
                                 os.path.join(farm.dir, "out-bad"), check=False)
        self.assertEqual(code, 0, err)
        code, _, err = ctl(farm.state, "wait", bad_job.strip(), "--timeout", "300", check=False)
        self.assertEqual(code, 1)
        self.assertIn(bad + ": the circuit failed: ", err)
        self.assertIn("Assert Failed. Error in template Checks_0 line: 11", err)  # circom's words, with the line
        for job, circuit, inputs, out in jobs:
            code, _, err = ctl(farm.state, "wait", job, "--timeout", "300", check=False)
            self.assertEqual(code, 0, err + farm.output())
            ok, text = snarkjs_verify([(circ(circuit, "vkey"), f"{out}/{i}.public.json", f"{out}/{i}.proof.json")
                                       for i in range(len(inputs))])
            self.assertTrue(ok, text)
            for i, k in enumerate(inputs):  # public.json from the generated witness: snarkjs fullprove's
                snarkjs("groth16", "fullprove", f"{WORK}/{circuit}.{k}.json", circ(circuit, "wasm"),
                        circ(circuit, "zkey"), f"{WORK}/fp.json", f"{WORK}/fpub.json")
                with open(f"{WORK}/fpub.json") as a, open(f"{out}/{i}.public.json") as b:
                    self.assertEqual(a.read(), b.read())
        # Issue 46: the tree job's 4 partitions on 2 synthesis workers went in
        # batches (each worker's share is 2 or more), one pass of the graph
        # each: each SYNTH says how many were sent with it (batch_of), and the
        # worker waits for the rest, also under the sanitizers' slow sends.
        self.assertRegex(farm.output(), rf"[2-4] partitions of job {jobs[1][0]} in one pass of the witness graph")
        # An input refused at submit: its value is not a field element.
        code, _, err = ctl(farm.state, "submit", "--circuit", "hash", "--input",
                           write_json("farm-nan.json", {"in": ["1", "x", "3"]}), "--out", farm.dir, check=False)
        self.assertEqual(code, 1)
        self.assertIn("farm-nan.json: signal in value 1", err)
        # Issue 32: an input of the wrong shape was accepted and failed its job
        # at synthesis; now refused at submit in the generators' words (both
        # kinds: checks is a wasm circuit, tree a native one), and no job made.
        jobs_before = {j["id"] for j in farm.status()["jobs"]}
        leaf = {"leaf": "1", "pathElements": ["2"] * 8, "pathIndices": [0] * 8, "root": "3"}
        for name, obj, want in (
                ("checks", {"a": 3, "loop": 0}, "the input sets 2 of the circuit's 4 input values: a signal is missing"),
                ("checks", {"a": 3, "b": [1, 2], "loop": 0, "z": 1}, "signal z is not an input of the circuit"),
                ("checks", {"a": 3, "b": [1, 2, 3], "loop": 0}, "signal b has 3 values, the circuit's has 2"),
                ("tree", dict(leaf, pathIndices=[0] * 7), "signal pathIndices has 7 values, the circuit's has 8"),
                ("tree", dict(leaf, z=1), "signal z is not an input of the circuit")):
            shaped = write_json("farm-shape.json", obj)
            # The bad one second: the whole job is refused, naming that file.
            code, out, err = ctl(farm.state, "submit", "--circuit", name, "--input", f"{WORK}/checks.0.json"
                                 if name == "checks" else f"{WORK}/merkle8.0.json", shaped, "--out", farm.dir,
                                 check=False)
            self.assertEqual(code, 1, f"{name} {obj}: {out}{err}")
            self.assertIn(shaped + ": " + want, err)
        self.assertEqual({j["id"] for j in farm.status()["jobs"]}, jobs_before, "no job of a refused submit")
        # Issue 31: 300,000 keys took seconds of zkfarmd's CPU per input (a
        # quadratic parse) and blocked other submits; now one pass, refused at
        # input_max_signals, naming the file, and the farm answers on.
        many = os.path.join(WORK, "farm-many-keys.json")
        with open(many, "w") as f:
            f.write("{" + ",".join(f'"k{i}": {i}' for i in range(300000)) + "}")
        code, _, err = ctl(farm.state, "submit", "--circuit", "hash", "--input", many, many, "--out", farm.dir,
                           check=False)
        self.assertEqual(code, 1, err)
        self.assertIn("farm-many-keys.json: more than 65536 input signals", err)
        self.assertEqual(ctl(farm.state, "status", "--json", check=False)[0], 0)
        # A key of another circuit: the circuit is refused at add.
        code, _, err = ctl(farm.state, "circuit", "add", "mixed", "--zkey", circ("merkle8", "zkey"), "--wasm",
                           circ("poseidon3", "wasm"), check=False, timeout=900)
        self.assertEqual(code, 1)
        self.assertIn("not of one circuit", err)
        self.assertEqual(ctl(farm.state, "circuit", "remove", "hash")[0], 0)
        code, _, err = ctl(farm.state, "submit", "--circuit", "hash", "--input", f"{WORK}/poseidon3.0.json",
                           check=False)
        self.assertEqual(code, 1)
        self.assertIn("no circuit 'hash'", err)
        farm.stop_and_check(self)

    def test_a_job_of_inputs_survives_sigkill_after_its_input_files_are_gone(self):
        farm = self.farm(env={"ZKFARM_FAULT": "slow_ms:300"})
        self.add(farm, "tree", "merkle8", "wasm")
        mine = tempfile.mkdtemp(prefix="zkfarm-inputs-", dir=WORK)
        inputs = []
        for k in range(6):
            shutil.copy(f"{WORK}/merkle8.{k % 4}.json", f"{mine}/{k}.json")
            inputs.append(f"{mine}/{k}.json")
        out = os.path.join(farm.dir, "out")
        code, job, err = ctl(farm.state, "submit", "--circuit", "tree", "--input", *inputs, "--out", out, check=False)
        self.assertEqual(code, 0, err)
        job = job.strip()
        shutil.rmtree(mine)  # accepted: the farm keeps its own copies
        deadline = time.time() + 120
        while time.time() < deadline:
            st = {str(j["id"]): j for j in farm.status()["jobs"]}[job]
            if st["done"] >= 1:
                break
            time.sleep(0.05)
        farm.proc.send_signal(signal.SIGKILL)
        farm.proc.wait()
        again = self.farm(state=farm.state)
        self.add(again, "tree", "merkle8", "wasm")  # idempotent: the same circuit again
        code, _, err = ctl(again.state, "wait", job, "--timeout", "300", check=False)
        self.assertEqual(code, 0, err + again.output())
        ok, text = snarkjs_verify([(circ("merkle8", "vkey"), f"{out}/{k}.public.json", f"{out}/{k}.proof.json")
                                   for k in range(6)])
        self.assertTrue(ok, text)
        proofs = journal_proofs(again.state)
        self.assertEqual({i: proofs.get((int(job), i)) for i in range(6)}, {i: 1 for i in range(6)},
                         "each partition proved exactly once")
        again.stop_and_check(self)

    def test_a_circuit_added_while_housekeeping_runs_keeps_its_key(self):
        # Found in the sanitizer suite (2026-12-07): the minutely housekeeping
        # ran after a `circuit add`'s build had ended but before its journal
        # write had put the circuit in the table; the key's private copy,
        # used by no job and no circuit yet, was removed, and every partition
        # of the next job of inputs failed with "…/inputs/keys/SHA.zkey: cannot
        # open". Here housekeeping runs at every pass of the loop, so that
        # window is always met.
        farm = self.farm(env={"ZKFARM_TEST_HOUSEKEEPING_MS": "0"})
        self.add(farm, "hash", "poseidon3", "wasm")
        keys = os.listdir(os.path.join(farm.state, "inputs", "keys"))
        self.assertEqual(len(keys), 1, keys)
        out = os.path.join(farm.dir, "out")
        code, job, err = ctl(farm.state, "submit", "--circuit", "hash", "--input",
                             *[f"{WORK}/poseidon3.{k}.json" for k in (0, 1)], "--out", out, check=False)
        self.assertEqual(code, 0, err)
        code, _, err = ctl(farm.state, "wait", job.strip(), "--timeout", "300", check=False)
        self.assertEqual(code, 0, err + farm.output())
        ok, text = snarkjs_verify([(circ("poseidon3", "vkey"), f"{out}/{k}.public.json", f"{out}/{k}.proof.json")
                                   for k in (0, 1)])
        self.assertTrue(ok, text)
        farm.stop_and_check(self)



class StatementTest(unittest.TestCase):
    """Issue 45 (finding 6), reproduced: a circuit's witness graph rewritten
    with its SHA-256 recomputed (as zkfarmd's user) was loaded and used, and
    the farm published a proof that verifies for another statement than the
    input submitted. The graph's digest is now the journal's, checked at each
    load (a mismatch: the generator, and the log says so), and each witness's
    public inputs are held to the input before it is proved."""

    setUp, tearDown, farm = FarmTest.setUp, FarmTest.tearDown, FarmTest.farm

    def graph_of(self, farm, name):
        listed = {c["name"]: c for c in json.loads(ctl(farm.state, "circuit", "list", "--json")[1])}
        return os.path.join(farm.state, "circuits", listed[name]["generator"], "graph")

    def test_a_graph_swapped_in_is_not_used_and_a_proof_of_another_statement_never_leaves(self):
        farm = self.farm()
        zkey, c = circ("statement", "zkey"), circ("statement", "c")
        for name, folder in (("pair", c), ("twin", circ("statement_swapped", "c"))):
            code, _, err = ctl(farm.state, "circuit", "add", name, "--zkey", zkey, "--c", folder, "--test-input",
                               f"{WORK}/statement.0.json", check=False, timeout=900)
            self.assertEqual(code, 0, err + farm.output())
        mine, theirs = self.graph_of(farm, "pair"), self.graph_of(farm, "twin")
        self.assertTrue(os.path.exists(mine) and os.path.exists(theirs), farm.output()[-2000:])
        ctl(farm.state, "stop")
        farm.proc.wait(timeout=120)
        shutil.copy(theirs, mine)  # a valid graph file, digest and all: another circuit's
        # and its plan (graph.plan, bound to that graph's digest): left alone,
        # the plan of the recorded graph would serve and the swap go unread.
        shutil.copy(theirs + ".plan", mine + ".plan")

        def submit(farm, tag):
            out = os.path.join(farm.dir, "out-" + tag)
            code, job, err = ctl(farm.state, "submit", "--circuit", "pair", "--input", f"{WORK}/statement.0.json",
                                 "--out", out, check=False)
            self.assertEqual(code, 0, err)
            code, _, err = ctl(farm.state, "wait", job.strip(), "--timeout", "300", check=False, timeout=400)
            return code, err, out

        # (1) The journal's digest is not the file's: the generator makes the witness, and says so.
        again = self.farm(state=farm.state)
        code, err, out = submit(again, "1")
        self.assertEqual(code, 0, err + again.output()[-3000:])
        self.assertIn("not using the circuit's witness graph", again.output())
        with open(f"{out}/0.public.json") as f:
            self.assertEqual(json.load(f), ["6", "2", "3"])
        ok, text = snarkjs_verify([(circ("statement", "vkey"), f"{out}/0.public.json", f"{out}/0.proof.json")])
        self.assertTrue(ok, text)
        ctl(again.state, "stop")
        again.proc.wait(timeout=120)
        # (2) The journal rewritten too (zkfarmd's user can): the swapped graph
        # is used, and its witness states x = 3, y = 2. It would verify; it is
        # refused before it is proved.
        with open(mine, "rb") as f:
            digest = f.read()[-64:].decode()
        db = sqlite3.connect(os.path.join(farm.state, "journal.sqlite"))
        db.execute("UPDATE generator_graphs SET sha256 = ?", (digest,))
        db.commit()
        db.close()
        third = self.farm(state=farm.state)
        code, err, out = submit(third, "2")
        self.assertEqual(code, 1, err + third.output()[-3000:])
        self.assertIn("the witness does not prove the input: public signal 2 (x) is 3 in the witness, the input says 2",
                      err + third.output())
        self.assertFalse(os.path.exists(f"{out}/0.proof.json"), "a proof of another statement left the farm")
        third.stop_and_check(self)


# A wasm with circom's interface (what witgen/wasm_host.cpp calls) whose
# init() is hostile: the generator's --info run at `circuit add` calls it.
HOSTILE_WAT = """(module
  (import "runtime" "exceptionHandler" (func $eh (param i32)))
  (import "runtime" "printErrorMessage" (func $pem))
  (import "runtime" "writeBufferMessage" (func $wbm))
  (import "runtime" "showSharedRWMemory" (func $ssm))
  (memory (export "memory") 1)
  (func (export "getVersion") (result i32) (i32.const 2))
  (func (export "getMinorVersion") (result i32) (i32.const 1))
  (func (export "getPatchVersion") (result i32) (i32.const 6))
  (func (export "getSharedRWMemoryStart") (result i32) (i32.const 0))
  (func (export "readSharedRWMemory") (param i32) (result i32) (i32.const 0))
  (func (export "writeSharedRWMemory") (param i32 i32))
  (func (export "getFieldNumLen32") (result i32) (i32.const 8))
  (func (export "getRawPrime"))
  (func (export "getWitnessSize") (result i32) (i32.const 1))
  (func (export "getInputSize") (result i32) (i32.const 1))
  (func (export "getInputSignalSize") (param i32 i32) (result i32) (i32.const 1))
  (func (export "setInputSignal") (param i32 i32 i32))
  (func (export "getWitness") (param i32))
  (func (export "getMessageChar") (result i32) (i32.const 0))
  (func (export "init") (param i32) INIT))
"""
HOSTILE_INIT = {
    # an endless loop
    "loop": "(loop $l (br $l))",
    # a memory bomb: 1 MiB pages (16 wasm pages) until refused, then a trap
    "bomb": "(block $done (loop $l (br_if $done (i32.eq (memory.grow (i32.const 16)) (i32.const -1))) (br $l))) "
            "unreachable",
}


def glob_builds():
    """The generator build folders in the temporary folder (generator_cache.cpp)."""
    base = tempfile.gettempdir()
    return [os.path.join(base, n) for n in os.listdir(base) if n.startswith("zkfarm-build-")]


def leftover(needle):
    """Pids of live (not zombie) processes whose command line contains `needle`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmd and state != "Z":
            found.append(int(pid))
    return found


    def test_test_inputs_are_checked_on_every_add_cached_build_or_not(self):
        """Issue 46 (defects): `--test-input` was ignored when the circuit's
        files had been built before (under any name), and test inputs that
        are not JSON or not of the circuit's shape were accepted without a
        word. Now each is held to the circuit at every add and refused by name."""
        farm = self.farm()
        zkey = circ("statement", "zkey")
        good = f"{WORK}/statement.0.json"
        code, _, err = ctl(farm.state, "circuit", "add", "first", "--zkey", zkey, "--c", circ("statement", "c"),
                           "--test-input", good, check=False, timeout=900)
        self.assertEqual(code, 0, err + farm.output())
        not_json = os.path.join(WORK, "statement.notjson.json")
        with open(not_json, "w") as f:
            f.write('{"x": 2, "y": ')
        wrong_shape = write_json("statement.wrongshape.json", {"x": 2, "z": 3})
        # The same --c folder again (its build is cached now), and the wasm (built now).
        for source in (["--c", circ("statement", "c")], ["--wasm", circ("statement", "wasm")]):
            for path, fault in ((not_json, "not an input file"), (wrong_shape, "not of the circuit's shape")):
                code, _, err = ctl(farm.state, "circuit", "add", "again", "--zkey", zkey, *source, "--test-input", good,
                                   "--test-input", path, check=False, timeout=900)
                self.assertEqual(code, 1, err)
                self.assertIn(f"{path}: {fault}", err)
        listed = [c["name"] for c in json.loads(ctl(farm.state, "circuit", "list", "--json")[1])]
        self.assertEqual(listed, ["first"], "a refused add registered nothing")
        code, _, err = ctl(farm.state, "circuit", "add", "again", "--zkey", zkey, "--c", circ("statement", "c"),
                           "--test-input", good, check=False, timeout=900)
        self.assertEqual(code, 0, err)
        farm.stop_and_check(self)


class SandboxTest(unittest.TestCase):
    """Issue 31: circuit code ran as root without limits, one build slot for
    everyone. A tenant's hostile wasm now fails its own `circuit add` within
    its limits while another user's add and jobs carry on."""

    setUp, tearDown, farm = FarmTest.setUp, FarmTest.tearDown, FarmTest.farm

    def hostile(self, folder, kind):
        wat = os.path.join(folder, kind + ".wat")
        with open(wat, "w") as f:
            f.write(HOSTILE_WAT.replace("INIT", HOSTILE_INIT[kind]))
        run(["wat2wasm", wat, "-o", os.path.join(folder, kind + ".wasm")])
        return os.path.join(folder, kind + ".wasm")

    def test_a_trap_in_any_export_fails_the_witness_at_once(self):
        """Issue 45 (3b), reproduced: a trap in getWitness (a load from -16)
        jumped back into a returned stack frame and spun at 100 % CPU until the
        CPU limit. Every export the host calls now traps into a failure of the
        circuit (exit 3), at once, whichever it is."""
        mine = tempfile.mkdtemp(prefix="zkfarm-trap-", dir=WORK)
        inp = os.path.join(mine, "in.json")
        with open(inp, "w") as f:
            f.write('{"a": 1}')
        trapping = {
            "getWitness": ('(func (export "getWitness") (param i32))',
                           '(func (export "getWitness") (param i32) (drop (i32.load (i32.const -16))))'),
            "readSharedRWMemory": ('(func (export "readSharedRWMemory") (param i32) (result i32) (i32.const 0))',
                                   '(func (export "readSharedRWMemory") (param i32) (result i32) '
                                   '(i32.load (i32.const -16)))'),
            "getInputSignalSize": ('(func (export "getInputSignalSize") (param i32 i32) (result i32) (i32.const 1))',
                                   '(func (export "getInputSignalSize") (param i32 i32) (result i32) '
                                   '(i32.load (i32.const -16)))'),
            "writeSharedRWMemory": ('(func (export "writeSharedRWMemory") (param i32 i32))',
                                    '(func (export "writeSharedRWMemory") (param i32 i32) unreachable)'),
        }
        # A module that answers like a circuit over BN254's r (its prime read
        # from the shared memory, here a data segment), so that each run gets
        # as far as the trapping export.
        r = 21888242871839275222246405745257275088548364400416034343698204186575808495617
        prime = "".join(f"\\{b:02x}" for b in r.to_bytes(32, "little"))
        base = HOSTILE_WAT.replace("INIT", "").replace(
            '(func (export "readSharedRWMemory") (param i32) (result i32) (i32.const 0))',
            '(func (export "readSharedRWMemory") (param i32) (result i32) '
            '(i32.load (i32.mul (local.get 0) (i32.const 4))))').replace(
            '(memory (export "memory") 1)', f'(memory (export "memory") 1) (data (i32.const 0) "{prime}")')
        trapping["readSharedRWMemory"] = (
            '(func (export "readSharedRWMemory") (param i32) (result i32) (i32.load (i32.mul (local.get 0) '
            '(i32.const 4))))', trapping["readSharedRWMemory"][1])
        for export, (good, bad) in trapping.items():
            with self.subTest(export=export):
                self.assertIn(good, base)
                wat = os.path.join(mine, export + ".wat")
                with open(wat, "w") as f:
                    f.write(base.replace(good, bad))
                wasm = os.path.join(mine, export + ".wasm")
                run(["wat2wasm", wat, "-o", wasm])
                t0 = time.monotonic()
                p = prove_tool("witness", wasm, inp, os.path.join(mine, export + ".wtns"), timeout=900)
                self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertIn("trapped", p.stdout + p.stderr)
                # Compiling the generator aside, it ends at once, not at a CPU limit.
                self.assertNotIn("CPU time limit", p.stdout + p.stderr)
                self.assertLess(time.monotonic() - t0, 600)

    def test_each_build_has_a_uid_and_folder_of_its_own_and_leaves_nothing_running(self):
        """Issue 45, reproduced: two tenants' builds at once ran as one uid and
        could read and write each other's folders; another local user could
        read a circuit while it built; a process a build started (setsid) outlived it.
        The compilers are the operator's (zkfarmd's PATH): a wasm2c first on
        it stands in for a build that leaves a process behind, and holds the
        build a moment so both are seen at once."""
        ensure_group_member(CTL_GROUP, EVE)
        mine = tempfile.mkdtemp(prefix="zkfarm-sandbox-")
        self.addCleanup(shutil.rmtree, mine, True)
        os.chmod(mine, 0o755)
        tag = f"{700 + os.getpid() % 200}.5"
        tools = os.path.join(mine, "tools")
        os.mkdir(tools)
        os.chmod(tools, 0o755)
        fake = os.path.join(tools, "wasm2c")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\n"
                    f"setsid sh -c 'exec sleep {tag}' >/dev/null 2>&1 </dev/null &\n"
                    "sleep 3\n"
                    f"exec {shutil.which('wasm2c')} \"$@\"\n")
        os.chmod(fake, 0o755)
        wasms = {}
        for name, init in (("a", ""), ("b", "(nop)")):  # two modules: two builds
            wat = os.path.join(mine, name + ".wat")
            with open(wat, "w") as f:
                f.write(HOSTILE_WAT.replace("INIT", init))
            wasms[name] = os.path.join(mine, name + ".wasm")
            run(["wat2wasm", wat, "-o", wasms[name]])
            os.chmod(wasms[name], 0o644)
        zkey = os.path.join(mine, "k.zkey")
        shutil.copy(circ("poseidon3", "zkey"), zkey)
        os.chmod(zkey, 0o644)
        cfg = write_config(os.path.join(mine, "zkfarmd.toml"), control_group=CTL_GROUP)
        farm = self.farm("--config", cfg, env={"PATH": tools + ":" + os.environ["PATH"]})
        os.chmod(farm.dir, 0o711)
        before = set(glob_builds())
        root_add = subprocess.Popen([os.path.join(BIN, "zkfarmctl"), "--state-dir", farm.state, "circuit", "add", "a",
                                     "--zkey", zkey, "--wasm", wasms["a"]],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        eve_add = subprocess.Popen(["runuser", "-u", EVE, "--", os.path.join(BIN, "zkfarmctl"), "--state-dir",
                                    farm.state, "circuit", "add", "b", "--zkey", zkey, "--wasm", wasms["b"]],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        mine_bytes = [open(w, "rb").read() for w in wasms.values()]
        others = []
        seen = {}  # build folder -> (mode, owner)
        refused = {}
        deadline = time.time() + 600
        while time.time() < deadline and (root_add.poll() is None or eve_add.poll() is None):
            for d in set(glob_builds()) - before - set(others):
                try:  # ours only: other tests may build beside this one
                    st = os.stat(d)
                    with open(os.path.join(d, "src", "circuit.wasm"), "rb") as f:
                        ours = f.read() in mine_bytes
                except OSError:
                    continue
                if not ours:
                    others.append(d)
                    continue
                seen.setdefault(d, (stat.S_IMODE(st.st_mode), st.st_uid))
                if d not in refused:  # another local user (eve) reads a building circuit
                    p = run_as(EVE, ["cat", os.path.join(d, "src", "circuit.wasm")])
                    if p.returncode != 0 or p.stdout:
                        refused[d] = p.returncode != 0
            time.sleep(0.05)
        for p in (root_add, eve_add):
            p.communicate(timeout=600)
        # What circuit add said does not matter here (the stand-in circuits
        # are not the key's); that it has returned does.
        self.assertEqual(leftover(f"sleep {tag}"), [], "a process a build started outlived it")
        self.assertEqual(len(seen), 2, f"two builds at once, seen {seen}")
        (mode_a, uid_a), (mode_b, uid_b) = seen.values()
        self.assertEqual((mode_a, mode_b), (0o700, 0o700))
        self.assertNotEqual(uid_a, uid_b, "two tenants' builds under one uid")
        for uid in (uid_a, uid_b):
            self.assertTrue(0x70000000 <= uid < 0x70000000 + 1024, uid)
        self.assertEqual(refused, {d: True for d in seen}, "another local user read a building circuit")
        self.assertEqual([d for d in seen if os.path.exists(d)], [], "a build's folder outlived it")

    def test_hostile_wasm_fails_its_own_add_within_its_limits_and_another_users_carry_on(self):
        ensure_group_member(CTL_GROUP, EVE)
        mine = tempfile.mkdtemp(prefix="zkfarm-sandbox-")
        self.addCleanup(shutil.rmtree, mine, True)
        os.chmod(mine, 0o755)
        loop, bomb = self.hostile(mine, "loop"), self.hostile(mine, "bomb")
        huge = os.path.join(mine, "huge.wasm")
        with open(huge, "wb") as f:
            f.write(b"\0asm" + bytes(3 << 20))
        # eve's good circuit, in a folder she can read
        for part, name in (("wasm", "hash.wasm"), ("zkey", "hash.zkey")):
            shutil.copy(circ("poseidon3", part), os.path.join(mine, name))
            os.chmod(os.path.join(mine, name), 0o644)
        cfg = write_config(os.path.join(mine, "zkfarmd.toml"), control_group=CTL_GROUP, witness_cpu_s=2,
                           witness_memory_mib=256, circuit_wasm_max_mib=2)
        farm = self.farm("--config", cfg)
        os.chmod(farm.dir, 0o711)
        zkey = circ("poseidon3", "zkey")
        add = lambda name, wasm: subprocess.Popen(  # noqa: E731
            [os.path.join(BIN, "zkfarmctl"), "--state-dir", farm.state, "circuit", "add", name, "--zkey", zkey,
             "--wasm", wasm], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        looping = add("loop", loop)
        # The generator's --info run (the endless loop) runs as the sandbox
        # user: found by its command line while it spins.
        sandbox_uid = __import__("pwd").getpwnam("zkfarm-sandbox").pw_uid

        def info_run_uids():
            uids = set()
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().split(b"\0")
                    if len(argv) > 1 and argv[1] == b"--info" and farm.state.encode() in argv[0]:
                        with open(f"/proc/{pid}/status") as f:
                            uids |= {int(l.split()[1]) for l in f if l.startswith("Uid:")}
                except OSError:
                    pass
            return uids

        deadline = time.time() + 300
        seen = set()
        while time.time() < deadline and not seen and looping.poll() is None:
            seen = info_run_uids()
            time.sleep(0.05)
        # A uid of the pool (sandbox_uid_base, 1024 of them) of its own, not
        # the shared sandbox user's and never root's.
        self.assertEqual(len(seen), 1, "the hostile generator's --info run: " + farm.output()[-2000:])
        self.assertTrue(0x70000000 <= next(iter(seen)) < 0x70000000 + 1024, seen)
        self.assertNotIn(sandbox_uid, seen)
        # The same submitter's second add is refused at once (one slot each) ...
        code, _, err = ctl(farm.state, "circuit", "add", "bomb", "--zkey", zkey, "--wasm", bomb, check=False)
        self.assertEqual(code, 1)
        self.assertIn("uid 0 is adding circuit loop already", err)
        # ... while eve's add goes on beside it.
        code, out, err = ctl_as(EVE, farm.state, "circuit", "add", "hash", "--zkey", os.path.join(mine, "hash.zkey"),
                                "--wasm", os.path.join(mine, "hash.wasm"), timeout=900)
        self.assertEqual(code, 0, err + farm.output()[-2000:])
        _, err = looping.communicate(timeout=600)
        self.assertEqual(looping.returncode, 1)
        self.assertIn("circuit loop: the built generator does not answer", err)
        self.assertIn("killed by signal 24 (CPU time limit exceeded)", err)
        # The memory bomb grows until witness_memory_mib refuses it, then traps.
        code, _, err = ctl(farm.state, "circuit", "add", "bomb", "--zkey", zkey, "--wasm", bomb, check=False,
                           timeout=900)
        self.assertEqual(code, 1, err)
        self.assertIn("circuit bomb: the built generator does not answer", err)
        # A huge module is refused before anything is built.
        code, _, err = ctl(farm.state, "circuit", "add", "huge", "--zkey", zkey, "--wasm", huge, check=False)
        self.assertEqual(code, 1)
        self.assertIn(f"{huge}: {(3 << 20) + 4} bytes, more than circuit_wasm_max_mib (2 MiB) allows", err)
        self.assertEqual({c["name"] for c in json.loads(ctl(farm.state, "circuit", "list", "--json")[1])}, {"hash"})
        # eve's jobs of inputs run (their generator as the sandbox user) and verify.
        inp = os.path.join(mine, "in.json")
        shutil.copy(f"{WORK}/poseidon3.0.json", inp)
        os.chmod(inp, 0o644)
        out = os.path.join(mine, "out")
        os.mkdir(out)
        os.chown(out, __import__("pwd").getpwnam(EVE).pw_uid, -1)
        code, job, err = ctl_as(EVE, farm.state, "submit", "--circuit", "hash", "--input", inp, "--out", out)
        self.assertEqual(code, 0, err)
        code, _, err = ctl_as(EVE, farm.state, "wait", job.strip(), "--timeout", "300", timeout=400)
        self.assertEqual(code, 0, err + farm.output()[-2000:])
        ok, text = snarkjs_verify([(circ("poseidon3", "vkey"), f"{out}/0.public.json", f"{out}/0.proof.json")])
        self.assertTrue(ok, text)


    def test_a_build_past_its_memory_limit_fails_its_add_at_the_limit(self):
        # The sweep: a 3.8 MB wasm made gcc take 1.1 GB. gcc needs some
        # 240 MB for poseidon3's wasm2c output (wasm2c itself more than 64
        # MiB); at 64 MiB the tool (as the sandbox user) is refused memory
        # and the add fails, naming the step.
        cfg_dir = tempfile.mkdtemp(prefix="zkfarm-sandbox-")
        self.addCleanup(shutil.rmtree, cfg_dir, True)
        farm = self.farm("--config", write_config(os.path.join(cfg_dir, "zkfarmd.toml"), circuit_build_memory_mib=64))
        code, _, err = ctl(farm.state, "circuit", "add", "hash", "--zkey", circ("poseidon3", "zkey"), "--wasm",
                           circ("poseidon3", "wasm"), check=False, timeout=900)
        self.assertEqual(code, 1, err)
        self.assertIn("circuit hash: the witness generator cannot be built: ", err)
        self.assertRegex(err, r"(wasm2c|compiling the circuit's C \(wasm2c output\)) failed .*(out of memory|bad_alloc)")
        self.assertEqual(ctl(farm.state, "status", "--json", check=False)[0], 0)


if __name__ == "__main__":
    unittest.main()
