"""zkfarm-testkey's files against snarkjs itself: the R1CS reads, the witnesses
satisfy it, the key proves with both snarkjs and zkfarm-prove, the proofs verify
with the generated vkey, and the vkey is what `snarkjs zkey export
verificationkey` derives from the key.

Run by ctest with ZKFARM_BIN and ZKFARM_SOURCE_DIR in the environment.
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


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    return p.returncode, p.stdout + p.stderr


class TestKeyTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="zkfarm-testkey-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def make(self, n, pub, witnesses=1, seed=None):
        prefix = os.path.join(self.dir, f"k{n}_{pub}")
        cmd = [os.path.join(BIN, "zkfarm-testkey"), "--constraints", str(n), "--public", str(pub), "--out", prefix,
               "--witnesses", str(witnesses)]
        if seed is not None:
            cmd += ["--seed", str(seed)]
        code, out = run(cmd)
        self.assertEqual(code, 0, out)
        return prefix

    def check_key(self, prefix, witnesses):
        code, out = run(SNARKJS + ["r1cs", "info", prefix + ".r1cs"])
        self.assertEqual(code, 0, out)
        for w in witnesses:
            code, out = run(SNARKJS + ["wtns", "check", prefix + ".r1cs", w])
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
        code, out = run([os.path.join(BIN, "zkfarm-testkey"), "--constraints", "10", "--out", "/no/such/dir/x"])
        self.assertEqual(code, 1, out)
        self.assertIn("/no/such/dir/x", out)


if __name__ == "__main__":
    unittest.main()
