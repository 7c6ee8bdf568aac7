"""zkfarm-testkey's files against snarkjs itself: the R1CS reads, the witnesses
satisfy it, the key proves with both snarkjs and zkfarm-prove, the proofs verify
with the generated vkey, and the vkey is what `snarkjs zkey export
verificationkey` derives from the key. Both curves: bn128 (the default) and
bls12381 (--curve bls12381; small domains, 2^8..2^10, as snarkjs's and the CPU
prover's BLS12-381 are slower), synthetic keys and keys of circom .r1cs files.

Run by ctest with ZKFARM_BIN and ZKFARM_SOURCE_DIR in the environment; the
circom fixtures come from ZKFARM_SHARED_FIXTURES when set, else
tests/fixtures/shared (their tests skip when the folder is missing).
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

BIN = os.environ["ZKFARM_BIN"]
SRC = os.environ["ZKFARM_SOURCE_DIR"]
SNARKJS = ["node", os.path.join(SRC, "node_modules", "snarkjs", "build", "cli.cjs")]
FIXTURES = os.environ.get("ZKFARM_SHARED_FIXTURES") or os.path.join(SRC, "tests", "fixtures", "shared")


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    return p.returncode, p.stdout + p.stderr


class TestKeyTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="zkfarm-testkey-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def make(self, n, pub, witnesses=1, seed=None, curve=None):
        prefix = os.path.join(self.dir, f"k{n}_{pub}" + (f"_{curve}" if curve else ""))
        cmd = [os.path.join(BIN, "zkfarm-testkey"), "--constraints", str(n), "--public", str(pub), "--out", prefix,
               "--witnesses", str(witnesses)]
        if seed is not None:
            cmd += ["--seed", str(seed)]
        if curve is not None:
            cmd += ["--curve", curve]
        code, out = run(cmd)
        self.assertEqual(code, 0, out)
        return prefix

    def check_key(self, prefix, witnesses, r1cs=None):
        """snarkjs reads the r1cs (PREFIX.r1cs, or `r1cs`), the witnesses satisfy it,
        snarkjs and zkfarm-prove prove with the key, snarkjs verifies both, and the
        vkey is snarkjs's export of the key."""
        r1cs = r1cs or prefix + ".r1cs"
        code, out = run(SNARKJS + ["r1cs", "info", r1cs])
        self.assertEqual(code, 0, out)
        for w in witnesses:
            code, out = run(SNARKJS + ["wtns", "check", r1cs, w])
            self.assertIn("WITNESS IS CORRECT", out, w)
        for i, w in enumerate(witnesses):
            proof, pub = f"{prefix}.s{i}.proof.json", f"{prefix}.s{i}.public.json"
            code, out = run(SNARKJS + ["groth16", "prove", prefix + ".zkey", w, proof, pub])
            self.assertEqual(code, 0, out)
            code, out = run(SNARKJS + ["groth16", "verify", prefix + ".vkey.json", pub, proof])
            self.assertIn("OK!", out, "snarkjs's proof with the generated key")
            zproof, zpub = f"{prefix}.z{i}.proof.json", f"{prefix}.z{i}.public.json"
            code, out = run([os.path.join(BIN, "zkfarm-prove"), prefix + ".zkey", w, zproof, zpub])
            self.assertEqual(code, 0, out)
            code, out = run(SNARKJS + ["groth16", "verify", prefix + ".vkey.json", zpub, zproof])
            self.assertIn("OK!", out, "zkfarm's proof with the generated key")
            with open(pub) as a, open(zpub) as b:
                self.assertEqual(a.read(), b.read())
        # The vkey is snarkjs's export of the key, but for vk_alphabeta_12 (a pairing).
        exported = prefix + ".exported.json"
        code, out = run(SNARKJS + ["zkey", "export", "verificationkey", prefix + ".zkey", exported])
        self.assertEqual(code, 0, out)
        with open(exported) as a, open(prefix + ".vkey.json") as b:
            theirs, ours = json.load(a), json.load(b)
        theirs.pop("vk_alphabeta_12")
        self.assertEqual(theirs, ours)
        return ours

    def header(self, path):
        """A snarkjs binary file's first section's n8 and prime (r1cs, wtns: section 1 starts with them)."""
        with open(path, "rb") as f:
            data = f.read(4096)
        n_sections = int.from_bytes(data[8:12], "little")
        self.assertGreaterEqual(n_sections, 1)
        off = 12
        while True:
            typ, size = int.from_bytes(data[off:off + 4], "little"), int.from_bytes(data[off + 4:off + 12], "little")
            if typ == 1:
                n8 = int.from_bytes(data[off + 12:off + 16], "little")
                return n8, int.from_bytes(data[off + 16:off + 16 + n8], "little")
            off += 12 + size

    def test_small_key_with_witnesses(self):
        prefix = self.make(300, 3, witnesses=2, seed=11)
        self.check_key(prefix, [prefix + ".wtns", prefix + ".1.wtns", prefix + ".2.wtns"])

    def test_no_public_inputs_and_a_domain_exactly_full(self):
        # 1023 constraints + 0 public + 1 = 1024 rows: the domain is exactly 2^10.
        prefix = self.make(1023, 0, seed=12)
        self.check_key(prefix, [prefix + ".wtns"])

    def test_many_public_inputs(self):
        prefix = self.make(200, 40, seed=13)
        self.check_key(prefix, [prefix + ".wtns"])

    def test_same_seed_same_files(self):
        a = self.make(100, 1, seed=5)
        b_dir = os.path.join(self.dir, "again")
        os.mkdir(b_dir)
        code, out = run([os.path.join(BIN, "zkfarm-testkey"), "--constraints", "100", "--public", "1", "--seed", "5",
                         "--out", os.path.join(b_dir, "k100_1")])
        self.assertEqual(code, 0, out)
        for ext in (".zkey", ".r1cs", ".wtns", ".vkey.json"):
            with open(a + ext, "rb") as x, open(os.path.join(b_dir, "k100_1" + ext), "rb") as y:
                self.assertEqual(x.read(), y.read(), ext)

    def test_usage_errors(self):
        code, out = run([os.path.join(BIN, "zkfarm-testkey"), "--public", "1", "--out", os.path.join(self.dir, "x")])
        self.assertEqual(code, 2, out)
        for bad in ("bn254", "bls12-381", "BN128", ""):
            code, out = run([os.path.join(BIN, "zkfarm-testkey"), "--constraints", "10", "--curve", bad, "--out",
                             os.path.join(self.dir, "x")])
            self.assertEqual(code, 2, (bad, out))
            self.assertIn("bn128", out, bad)
            self.assertIn("bls12381", out, bad)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "x.zkey")))
        code, out = run([os.path.join(BIN, "zkfarm-testkey"), "--constraints", "10", "--out", "/no/such/dir/x"])
        self.assertEqual(code, 1, out)
        self.assertIn("/no/such/dir/x", out)


    # BLS12-381 (--curve bls12381): the same checks, on small domains.

    def test_bls12381_key_with_witnesses(self):
        # 250 constraints + 3 public + 1 = 254 rows: a domain of 2^8.
        prefix = self.make(250, 3, witnesses=1, seed=21, curve="bls12381")
        bls_r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
        self.assertEqual(self.header(prefix + ".r1cs"), (32, bls_r))
        self.assertEqual(self.header(prefix + ".wtns"), (32, bls_r))
        vk = self.check_key(prefix, [prefix + ".wtns", prefix + ".1.wtns"])
        self.assertEqual(vk["curve"], "bls12381")
        self.assertEqual(vk["nPublic"], 3)

    def test_bls12381_domain_exactly_full(self):
        # 1022 constraints + 1 public + 1 = 1024 rows: the domain is exactly 2^10.
        prefix = self.make(1022, 1, seed=22, curve="bls12381")
        self.check_key(prefix, [prefix + ".wtns"])

    def test_bls12381_same_seed_same_files_and_curves_differ(self):
        a = self.make(100, 1, seed=5, curve="bls12381")
        b_dir = os.path.join(self.dir, "again")
        os.mkdir(b_dir)
        code, out = run([os.path.join(BIN, "zkfarm-testkey"), "--curve", "bls12381", "--constraints", "100", "--public",
                         "1", "--seed", "5", "--out", os.path.join(b_dir, "k")])
        self.assertEqual(code, 0, out)
        for ext in (".zkey", ".r1cs", ".wtns", ".vkey.json"):
            with open(a + ext, "rb") as x, open(os.path.join(b_dir, "k" + ext), "rb") as y:
                self.assertEqual(x.read(), y.read(), ext)
        # --curve bn128 is the default: the same files with and without it.
        bn = self.make(100, 1, seed=5)
        code, out = run([os.path.join(BIN, "zkfarm-testkey"), "--curve", "bn128", "--constraints", "100", "--public",
                         "1", "--seed", "5", "--out", os.path.join(b_dir, "bn")])
        self.assertEqual(code, 0, out)
        for ext in (".zkey", ".r1cs", ".wtns", ".vkey.json"):
            with open(bn + ext, "rb") as x, open(os.path.join(b_dir, "bn" + ext), "rb") as y:
                self.assertEqual(x.read(), y.read(), ext)
        with open(a + ".vkey.json") as x, open(bn + ".vkey.json") as y:
            self.assertEqual((json.load(x)["curve"], json.load(y)["curve"]), ("bls12381", "bn128"))

    def fixture(self, name):
        path = os.path.join(FIXTURES, name)
        if not os.path.exists(path):
            self.skipTest(f"no {path}")
        return path

    def r1cs_key(self, r1cs, curve=None, name="r"):
        prefix = os.path.join(self.dir, name)
        cmd = [os.path.join(BIN, "zkfarm-testkey"), "--r1cs", r1cs, "--seed", "3", "--out", prefix]
        if curve is not None:
            cmd += ["--curve", curve]
        return prefix, run(cmd)

    def test_bls12381_circom_r1cs(self):
        # circom -p bls12381's chain fixture: with --curve bls12381, and without (the r1cs's prime picks it).
        r1cs = self.fixture("chain_bls12381.r1cs")
        witnesses = [self.fixture("chain_bls12381.0.wtns"), self.fixture("chain_bls12381.1.wtns")]
        prefix, (code, out) = self.r1cs_key(r1cs, "bls12381")
        self.assertEqual(code, 0, out)
        self.assertFalse(os.path.exists(prefix + ".r1cs"))
        vk = self.check_key(prefix, witnesses, r1cs=r1cs)
        self.assertEqual(vk["curve"], "bls12381")
        auto, (code, out) = self.r1cs_key(r1cs, None, "auto")
        self.assertEqual(code, 0, out)
        with open(prefix + ".zkey", "rb") as x, open(auto + ".zkey", "rb") as y:
            self.assertEqual(x.read(), y.read())

    def test_r1cs_of_the_other_curve(self):
        # An explicit --curve that is not the r1cs's: exit 1 naming the file, its curve and the flag to use.
        for r1cs_name, flag, theirs in (("chain_bls12381.r1cs", "bn128", "bls12381"),
                                        ("chain.r1cs", "bls12381", "bn128")):
            r1cs = self.fixture(r1cs_name)
            prefix, (code, out) = self.r1cs_key(r1cs, flag, "wrong")
            self.assertEqual(code, 1, out)
            self.assertIn(r1cs, out)
            self.assertIn(f"over {theirs}'s scalar field", out)
            self.assertIn(f"--curve {theirs}", out)
            self.assertFalse(os.path.exists(prefix + ".zkey"))
        # bn128's r1cs without --curve is a bn128 key, as before.
        prefix, (code, out) = self.r1cs_key(self.fixture("chain.r1cs"), None, "bn")
        self.assertEqual(code, 0, out)
        with open(prefix + ".vkey.json") as f:
            self.assertEqual(json.load(f)["curve"], "bn128")


if __name__ == "__main__":
    unittest.main()
