"""End-to-end tests of the farm with real processes: zkfarmd, its workers and
zkfarmctl, the shared fixtures, and snarkjs's verifier.

Run by ctest (tests/CMakeLists.txt) with ZKFARM_BIN (the build's bin folder),
ZKFARM_SOURCE_DIR and ZKFARM_SHARED_FIXTURES in the environment.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.request

BIN = os.environ["ZKFARM_BIN"]
SRC = os.environ["ZKFARM_SOURCE_DIR"]
FIX = os.environ["ZKFARM_SHARED_FIXTURES"]
EDGE = os.path.join(SRC, "tests", "fixtures")


def ctl(state, *args, check=True, timeout=60):
    """Runs zkfarmctl; returns (exit code, stdout, stderr)."""
    p = subprocess.run([os.path.join(BIN, "zkfarmctl"), "--state-dir", state, *args],
                       capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"zkfarmctl {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p.returncode, p.stdout, p.stderr


def snarkjs_verify(triples):
    """True if snarkjs's verifier accepts every (vkey, public, proof)."""
    args = [x for t in triples for x in t]
    p = subprocess.run(["node", os.path.join(SRC, "tests", "snarkjs_verify.cjs"), *args],
                       capture_output=True, text=True, timeout=300)
    return p.returncode == 0 and p.stdout.count("OK ") == len(triples), p.stdout + p.stderr


def wait_until(what, fn, timeout=60, step=0.05):
    """fn()'s first true value, polled every `step` s; AssertionError naming `what` after `timeout` s."""
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("timed out waiting for " + what)


def in_flight(farm):
    """True once a worker of `farm` holds a partition (its state is busy)."""
    return any(w["state"] == "busy" for w in farm.status()["workers"])


def pid_alive(pid):
    """True while /proc has the pid: running, or a zombie nobody reaped."""
    return os.path.exists(f"/proc/{pid}")


class Farm:
    """One zkfarmd instance in a temporary state dir; stopped and checked on close."""

    def __init__(self, *extra, env=None, state=None, wait=True):
        self.dir = tempfile.mkdtemp(prefix="zkfarm-e2e-")
        self.state = state or os.path.join(self.dir, "state")
        self.log = open(os.path.join(self.dir, "zkfarmd.out"), "w")
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([os.path.join(BIN, "zkfarmd"), "--state-dir", self.state, *extra],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=e)
        self.wait_ready(all_idle=wait)

    def wait_ready(self, timeout=30, all_idle=True):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise AssertionError("zkfarmd exited at start: " + self.output())
            code, out, _ = ctl(self.state, "status", "--json", check=False)
            if code == 0:
                st = json.loads(out)
                if not all_idle or (st["workers"] and all(w["state"] == "idle" for w in st["workers"])):
                    return st
            time.sleep(0.05)
        raise AssertionError("workers not READY in time: " + self.output())

    def status(self):
        return json.loads(ctl(self.state, "status", "--json")[1])

    def submit(self, zkey, wtns, *extra):
        out = os.path.join(self.dir, "out-%d" % time.monotonic_ns())
        code, stdout, stderr = ctl(self.state, "submit", "--zkey", zkey, "--wtns", *wtns, "--out", out, *extra,
                                   check=False)
        return code, stdout.strip(), stderr, out

    def output(self):
        self.log.flush()
        with open(os.path.join(self.dir, "zkfarmd.out")) as f:
            return f.read()

    def stop_and_check(self, test):
        """zkfarmctl stop; then nothing of the instance may remain."""
        st = self.status()
        pids = [w["pid"] for w in st["workers"] if w["pid"]]
        arena = st["arena"]["name"]
        ctl(self.state, "stop")
        code = self.proc.wait(timeout=60)
        test.assertEqual(code, 0, self.output())
        for pid in pids:
            test.assertFalse(pid_alive(pid), f"worker pid {pid} still exists (process or zombie)")
        test.assertFalse(os.path.exists("/dev/shm/" + arena), "arena segment left in /dev/shm")
        test.assertFalse(os.path.exists(os.path.join(self.state, "control.sock")))

    def close(self):
        # A test that failed half-way: a graceful stop first (SIGTERM), so that
        # the instance still reaps its workers and unlinks its arena.
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def chain_wtns(k):
    return os.path.join(FIX, f"chain.{k}.wtns")


class FarmTest(unittest.TestCase):
    def setUp(self):
        self.farms = []

    def tearDown(self):
        for f in self.farms:
            f.close()

    def farm(self, *extra, env=None, wait=True, state=None):
        f = Farm(*extra, env=env, wait=wait, state=state)
        self.farms.append(f)
        return f

    def test_two_concurrent_jobs_all_proofs_verify(self):
        farm = self.farm("--synth-workers", "1")
        code, job1, err, out1 = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(10)])
        self.assertEqual(code, 0, err)
        code, job2, err, out2 = farm.submit(os.path.join(EDGE, "binary.zkey"),
                                            [os.path.join(EDGE, f"binary.{k}.wtns") for k in range(2)], "--priority", "high")
        self.assertEqual(code, 0, err)
        # status answers while the workers are busy (ctl's own timeout bounds it; no wall-clock bound here)
        farm.status()
        for job in (job1, job2):
            code, _, err = ctl(farm.state, "wait", job, "--timeout", "120", check=False)
            self.assertEqual(code, 0, err + farm.output())
        triples = [(os.path.join(FIX, "chain.vkey.json"), f"{out1}/{k}.public.json", f"{out1}/{k}.proof.json")
                   for k in range(10)]
        triples += [(os.path.join(EDGE, "binary.vkey.json"), f"{out2}/{k}.public.json", f"{out2}/{k}.proof.json")
                    for k in range(2)]
        ok, text = snarkjs_verify(triples)
        self.assertTrue(ok, text)
        for k in range(10):  # public.json is deterministic: snarkjs's, byte for byte
            with open(f"{out1}/{k}.public.json") as a, open(os.path.join(FIX, f"chain.{k}.public.json")) as b:
                self.assertEqual(a.read(), b.read())
        # Issue 49 item 4: each partition's stage times in `result --json`,
        # within the job's own end-to-end time, and the same after a restart
        # (read from the journal then).
        again = os.path.join(farm.dir, "again")
        listing = json.loads(ctl(farm.state, "result", job1, "--out", again, "--json")[1])
        self.assertEqual([r["partition"] for r in listing["results"]], list(range(10)))
        total = {str(j["id"]): j for j in farm.status()["jobs"]}[job1]["total_ms"]
        stages = ("witness_ms", "queue_ms", "prove_ms", "verify_ms", "delivery_ms")
        for r in listing["results"]:
            self.assertEqual(r["proof"], f"{again}/{r['partition']}.proof.json")
            t = r["timing"]
            self.assertEqual(set(t), set(stages), t)
            self.assertTrue(all(isinstance(t[s], int) and t[s] >= 0 for s in stages), t)
            self.assertLessEqual(sum(t.values()), total, t)
        self.assertGreater(sum(r["timing"]["prove_ms"] for r in listing["results"]), 0)
        farm.stop_and_check(self)
        restarted = self.farm(state=farm.state)
        self.assertEqual(json.loads(ctl(restarted.state, "result", job1, "--out", again, "--json")[1]), listing)
        restarted.stop_and_check(self)

    def test_critical_job_overtakes_queued_normal_ones(self):
        # Each partition takes at least 150 ms in each worker, so the queue stays full.
        farm = self.farm("--synth-workers", "1", env={"ZKFARM_FAULT": "slow_ms:150"})
        normal = []
        for _ in range(4):
            code, job, err, _ = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(5)])
            self.assertEqual(code, 0, err)
            normal.append(job)
        code, crit, err, out = farm.submit(os.path.join(FIX, "tiny.zkey"), [os.path.join(FIX, "tiny.0.wtns")],
                                           "--priority", "critical")
        self.assertEqual(code, 0, err)
        for job in normal + [crit]:
            self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "120", check=False)[0], 0, farm.output())
        jobs = {str(j["id"]): j for j in json.loads(ctl(farm.state, "jobs", "--json")[1])}
        # The first normal jobs may be done before the critical one is even
        # accepted (a submit copies and checks its files; slow under ASan):
        # the last two were surely still queued then.
        for job in normal[-2:]:
            self.assertLess(jobs[crit]["finished_ms"], jobs[job]["finished_ms"],
                            f"critical job {crit} finished after normal job {job}")
        ok, text = snarkjs_verify([(os.path.join(FIX, "tiny.vkey.json"), f"{out}/0.public.json", f"{out}/0.proof.json")])
        self.assertTrue(ok, text)
        farm.stop_and_check(self)

    def test_bad_witness_refuses_the_whole_job_and_loses_nothing(self):
        farm = self.farm("--synth-workers", "1")
        code, good, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(0), chain_wtns(1)])
        self.assertEqual(code, 0, err)
        bad = os.path.join(FIX, "tiny.0.wtns")
        code, _, err, _ = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(2), bad])
        self.assertEqual(code, 1)
        self.assertIn("tiny.0.wtns", err)
        self.assertIn("nVars", err)
        code, _, err, _ = farm.submit(os.path.join(FIX, "chain.zkey"), [os.path.join(FIX, "chain_bls12381.0.wtns")])
        self.assertEqual(code, 1)
        self.assertIn("prime", err)
        # A BLS12-381 key with a BN254 witness: refused, naming the curve.
        code, _, err, _ = farm.submit(os.path.join(FIX, "chain_bls12381.zkey"), [chain_wtns(0)])
        self.assertEqual(code, 1)
        self.assertIn("chain.0.wtns", err)
        self.assertIn("bls12381", err)
        self.assertEqual(ctl(farm.state, "wait", good, "--timeout", "60", check=False)[0], 0)
        self.assertEqual(len(farm.status()["jobs"]), 1, "refused jobs must not appear")
        ok, text = snarkjs_verify([(os.path.join(FIX, "chain.vkey.json"), f"{out}/{k}.public.json", f"{out}/{k}.proof.json")
                                   for k in range(2)])
        self.assertTrue(ok, text)
        farm.stop_and_check(self)

    def test_jobs_of_both_curves_side_by_side(self):
        # A BN254 job and a BLS12-381 job submitted together: both keys are
        # resident in the same workers at once, every proof verifies with
        # snarkjs, and public.json is snarkjs's own.
        farm = self.farm("--synth-workers", "1")
        bls = lambda k: os.path.join(FIX, f"chain_bls12381.{k}.wtns")
        code, bn_job, err, bn_out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(3)])
        self.assertEqual(code, 0, err)
        code, bls_job, err, bls_out = farm.submit(os.path.join(FIX, "chain_bls12381.zkey"), [bls(k) for k in range(3)])
        self.assertEqual(code, 0, err)
        for job in (bn_job, bls_job):
            self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "300", check=False)[0], 0)
        triples = [(os.path.join(FIX, "chain.vkey.json"), f"{bn_out}/{k}.public.json", f"{bn_out}/{k}.proof.json")
                   for k in range(3)]
        triples += [(os.path.join(FIX, "chain_bls12381.vkey.json"), f"{bls_out}/{k}.public.json",
                     f"{bls_out}/{k}.proof.json") for k in range(3)]
        ok, text = snarkjs_verify(triples)
        self.assertTrue(ok, text)
        for k in range(3):
            with open(f"{bls_out}/{k}.proof.json") as f:
                self.assertEqual(json.load(f)["curve"], "bls12381")
            with open(f"{bls_out}/{k}.public.json") as a, open(os.path.join(FIX, f"chain_bls12381.{k}.public.json")) as b:
                self.assertEqual(a.read(), b.read())
        farm.stop_and_check(self)

    def test_second_instance_on_the_same_state_dir_is_refused(self):
        farm = self.farm("--synth-workers", "1")
        p = subprocess.run([os.path.join(BIN, "zkfarmd"), "--state-dir", farm.state], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"another zkfarmd (pid {farm.proc.pid})", p.stderr)
        farm.stop_and_check(self)

    def test_fifo_key_or_witness_is_refused_at_once(self):
        # Attack: a FIFO named as key or witness used to wedge the thread that
        # opened it (and then `stop` never finished). Now it is refused without
        # blocking, naming the file, and the farm goes on.
        farm = self.farm("--synth-workers", "1")
        fifo = os.path.join(farm.dir, "slow.zkey")
        os.mkfifo(fifo)
        for zkey, wtns in ((fifo, chain_wtns(0)), (os.path.join(FIX, "chain.zkey"), fifo)):
            code, _, err, _ = farm.submit(zkey, [wtns])
            self.assertEqual(code, 1, err)
            self.assertIn("slow.zkey: is a FIFO, not a regular file", err)
        for dev in ("/dev/zero", "/dev/null"):
            code, _, err, _ = farm.submit(os.path.join(FIX, "chain.zkey"), [dev])
            self.assertEqual(code, 1, err)
            self.assertIn(f"{dev}: is a character device", err)
        farm.status()
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(0)])
        self.assertEqual(code, 0, err)
        ctl(farm.state, "wait", job)
        farm.stop_and_check(self)

    def test_no_supervisor_is_exit_3(self):
        d = tempfile.mkdtemp(prefix="zkfarm-e2e-")
        try:
            code, _, err = ctl(d, "status", check=False)
            self.assertEqual(code, 3)
            self.assertIn("no zkfarmd is running", err)
        finally:
            shutil.rmtree(d)

    def test_submit_while_stopping_is_refused_as_stopping(self):
        farm = self.farm("--synth-workers", "1", env={"ZKFARM_FAULT": "slow_ms:500"})
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(5)])
        self.assertEqual(code, 0, err)
        wait_until("the partition in flight", lambda: in_flight(farm))  # stop finishes it
        ctl(farm.state, "stop")
        code, _, err, _ = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(6)])
        self.assertEqual(code, 1)
        self.assertIn("zkfarmd is stopping: not accepting jobs", err)
        self.assertEqual(farm.proc.wait(timeout=60), 0)
        ok, text = snarkjs_verify([(os.path.join(FIX, "chain.vkey.json"), f"{out}/0.public.json", f"{out}/0.proof.json")])
        self.assertTrue(ok, text)

    def test_sigterm_stops_cleanly_after_in_flight_work(self):
        farm = self.farm("--synth-workers", "1", env={"ZKFARM_FAULT": "slow_ms:300"})
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(3)])
        self.assertEqual(code, 0, err)
        wait_until("synthesis in flight", lambda: in_flight(farm))
        st = farm.status()
        pids = [w["pid"] for w in st["workers"]]
        farm.proc.send_signal(signal.SIGTERM)
        self.assertEqual(farm.proc.wait(timeout=60), 0, farm.output())
        for pid in pids:
            self.assertFalse(pid_alive(pid))
        self.assertFalse(os.path.exists("/dev/shm/" + st["arena"]["name"]))
        # the in-flight partition was finished, not lost
        ok, text = snarkjs_verify([(os.path.join(FIX, "chain.vkey.json"), f"{out}/0.public.json", f"{out}/0.proof.json")])
        self.assertTrue(ok, text + farm.output())


if __name__ == "__main__":
    unittest.main()
