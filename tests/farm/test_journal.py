"""The journal (issue 6) with real processes: jobs survive a SIGKILLed
supervisor, a bad journal stops the start without being touched, cancel stops
work on a job, and /metrics counts what ran.

Run by ctest like test_farm.py (ZKFARM_BIN, ZKFARM_SOURCE_DIR, ZKFARM_SHARED_FIXTURES).
"""
import ctypes
import hashlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
import unittest
import urllib.request

from test_farm import BIN, FIX, Farm, chain_wtns, ctl, pid_alive, snarkjs_verify, wait_until

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    """Orphaned workers of a SIGKILLed zkfarmd become our children, so that the
    test can reap them (no zombie outlives the test, whatever init does)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def reap_until_gone(pids, timeout):
    """Reaps the orphaned `pids` as they exit; True if all exited in time."""
    deadline = time.time() + timeout
    left = set(pids)
    while left and time.time() < deadline:
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours (already reaped elsewhere) but gone from /proc?
                done = pid if not pid_alive(pid) else 0
            if done:
                left.discard(pid)
        time.sleep(0.02)
    return not left


def journal_counts(state):
    db = sqlite3.connect(f"file:{os.path.join(state, 'journal.sqlite')}?mode=ro", uri=True)
    try:
        per_partition = db.execute("SELECT job, idx, count(*) FROM proofs GROUP BY job, idx").fetchall()
        partitions = db.execute("SELECT count(*) FROM partitions").fetchone()[0]
        return per_partition, partitions
    finally:
        db.close()


def journaled_proofs(state, job, n, timeout=120):
    """journal_counts' per-partition rows, once job `job` has proofs of `n`
    partitions in the journal. A proof is verified, published and then
    journaled on the journal thread (supervisor/pipeline/pipeline.cpp), so
    `wait` may say done a moment before the last row commits: wait for it."""
    def complete():
        per_partition, _ = journal_counts(state)
        return per_partition if len({i for j, i, _ in per_partition if str(j) == str(job)}) >= n else None
    return wait_until(f"proofs of {n} partitions of job {job} in the journal", complete, timeout=timeout)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def parse_prometheus(text):
    """A strict reader of the text exposition format: {(name, labels): value}."""
    samples, types = {}, {}
    label = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:\\.|[^"\\])*"'
    sample_re = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>' + label + r'(?:,' + label +
                           r')*)?\})? (?P<value>\S+)$')
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped"), line
            types[name] = kind
            continue
        m = sample_re.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        name, labels, value = m.group("name"), m.group("labels") or "", m.group("value")
        base = re.sub(r"_(bucket|sum|count|total)$", "", name)
        assert name in types or base in types or name.rsplit("_", 1)[0] in types, f"sample without TYPE: {name}"
        samples[(name, labels)] = float(value)
    return samples


class JournalTest(unittest.TestCase):
    def setUp(self):
        self.farms = []

    def tearDown(self):
        for f in self.farms:
            f.close()

    def farm(self, *extra, env=None, state=None):
        f = Farm(*extra, env=env, state=state)
        self.farms.append(f)
        return f

    def test_jobs_survive_a_supervisor_killed_five_times(self):
        become_subreaper()
        rng = random.Random(2026)
        env = {"ZKFARM_FAULT": "slow_ms:40"}
        farm = self.farm("--synth-workers", "1", env=env)
        state = farm.state
        jobs = []
        for j in range(30):
            ks = [(3 * j + i) % 10 for i in range(3)]
            code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in ks])
            self.assertEqual(code, 0, err)
            jobs.append((job, out, ks))
        def proved(f):
            return sum(j["done"] for j in json.loads(ctl(f.state, "jobs", "--json", "--limit", "1000")[1]))

        for _ in range(5):
            # Killed after 3 to 8 more partitions are proved (or at once when
            # all 90 are): at a different point of the pipeline each time.
            target = min(90, proved(farm) + rng.randint(3, 8))
            wait_until(f"{target} partitions proved", lambda: proved(farm) >= target, timeout=300)
            st = farm.status()
            workers = [w["pid"] for w in st["workers"] if w["pid"]]
            farm.proc.send_signal(signal.SIGKILL)
            farm.proc.wait()
            # Workers die with their supervisor (death signal): all gone within 2 s.
            self.assertTrue(reap_until_gone(workers, 2.0), "a worker outlived its supervisor by 2 s")
            farm = self.farm("--synth-workers", "1", env=env, state=state)
        for job, _, _ in jobs:
            code, _, err = ctl(state, "wait", job, "--timeout", "300", check=False, timeout=330)
            self.assertEqual(code, 0, err + farm.output())
        per_partition, partitions = journal_counts(state)
        self.assertEqual(partitions, 90)
        self.assertEqual(len(per_partition), 90, "every partition has a journaled proof")
        self.assertTrue(all(c == 1 for _, _, c in per_partition), "no partition has two journaled proofs")
        triples = []
        for job, out, ks in jobs:
            for i, k in enumerate(ks):
                triples.append((os.path.join(FIX, "chain.vkey.json"), f"{out}/{i}.public.json", f"{out}/{i}.proof.json"))
        ok, text = snarkjs_verify(triples)
        self.assertTrue(ok, text)
        # result rewrites a job's proofs from the journal, after all those restarts
        dest = os.path.join(farm.dir, "again")
        ctl(state, "result", jobs[7][0], "--out", dest)
        ok, text = snarkjs_verify([(os.path.join(FIX, "chain.vkey.json"), f"{dest}/{i}.public.json", f"{dest}/{i}.proof.json")
                                   for i in range(3)])
        self.assertTrue(ok, text)
        farm.stop_and_check(self)

    def bad_journal_refused(self, make, fault):
        state_dir = tempfile.mkdtemp(prefix="zkfarm-badjournal-")
        self.addCleanup(shutil.rmtree, state_dir, True)
        path = os.path.join(state_dir, "journal.sqlite")
        make(path)
        before = sha256(path) if os.path.isfile(path) else None
        p = subprocess.run([os.path.join(BIN, "zkfarmd"), "--state-dir", state_dir], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("journal.sqlite", p.stderr)
        self.assertIn(fault, p.stderr)
        if before:
            self.assertEqual(before, sha256(path), "the journal was modified")
        left = set(os.listdir(state_dir))
        self.assertFalse(left & {"control.sock", "workers.sock"}, f"sockets left behind: {left}")

    def test_corrupt_journal_is_a_clear_error_and_untouched(self):
        def garbage(path):
            with open(path, "wb") as f:
                f.write(b"SQLite format 3\0" + os.urandom(4000))
        self.bad_journal_refused(garbage, "journal")

    def test_foreign_sqlite_database_is_refused_and_untouched(self):
        def foreign(path):
            db = sqlite3.connect(path)
            db.execute("CREATE TABLE accounts (id INTEGER)")
            db.commit()
            db.close()
        self.bad_journal_refused(foreign, "not a zkfarm journal")

    def test_unopenable_journal_is_a_clear_error(self):
        self.bad_journal_refused(lambda path: os.mkdir(path), "journal")

    def test_cancel_stops_queued_and_in_flight_work(self):
        farm = self.farm("--synth-workers", "1", env={"ZKFARM_FAULT": "slow_ms:400"})
        code, victim, err, _ = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(6)])
        self.assertEqual(code, 0, err)
        code, other, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(2)], "--priority", "low")
        self.assertEqual(code, 0, err)
        deadline = time.time() + 20
        while time.time() < deadline:  # wait until the victim has a partition in a worker's hands
            if any(w["partition"] and w["partition"].startswith(victim + "/") for w in farm.status()["workers"]):
                break
            time.sleep(0.02)
        ctl(farm.state, "cancel", victim)
        proved_at_cancel, _ = journal_counts(farm.state)
        proved_at_cancel = sum(1 for j, _, _ in proved_at_cancel if str(j) == victim)
        self.assertEqual(ctl(farm.state, "wait", other, "--timeout", "60", check=False)[0], 0, farm.output())
        per_partition, _ = journal_counts(farm.state)
        self.assertEqual(sum(1 for j, _, _ in per_partition if str(j) == victim), proved_at_cancel,
                         "no partition of the cancelled job was proved after the cancel")
        jobs = {str(j["id"]): j for j in json.loads(ctl(farm.state, "jobs", "--json")[1])}
        self.assertEqual(jobs[victim]["state"], "cancelled")
        self.assertEqual(jobs[other]["state"], "done")
        self.assertEqual(farm.status()["arena"]["slots"], 0, "every slot freed")
        ok, text = snarkjs_verify([(os.path.join(FIX, "chain.vkey.json"), f"{out}/{i}.public.json", f"{out}/{i}.proof.json")
                                   for i in range(2)])
        self.assertTrue(ok, text)
        farm.stop_and_check(self)

    def test_metrics_parse_and_count_the_jobs_run(self):
        port = 21000 + os.getpid() % 20000
        farm = self.farm("--synth-workers", "1", "--http", f"127.0.0.1:{port}")
        for ks in ([0, 1, 2], [3, 4]):
            code, job, err, _ = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in ks])
            self.assertEqual(code, 0, err)
            self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "60", check=False)[0], 0)
        def metrics():  # rendered at most every 200 ms: polled until it shows the 5 partitions
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                self.assertIn("text/plain", r.headers["Content-Type"])
                m = parse_prometheus(r.read().decode())
            return m if m.get(("zkfarm_partitions_proved_total", "")) == 5 else None
        m = wait_until("/metrics to count the 5 partitions", metrics, timeout=30)
        self.assertEqual(m[("zkfarm_partitions_proved_total", "")], 5)
        self.assertEqual(m[("zkfarm_jobs_accepted_total", "")], 2)
        self.assertEqual(m[("zkfarm_proving_seconds_count", "")], 5)
        self.assertEqual(m[("zkfarm_synthesis_seconds_bucket", 'le="+Inf"')], 5)
        self.assertEqual(m[("zkfarm_queue_depth", 'priority="normal",stage="synth"')], 0)
        self.assertEqual(m[("zkfarm_workers", 'kind="gpu",state="idle"')], 1)
        self.assertGreater(m[("zkfarm_arena_bytes", 'state="free"')], 0)
        for path, code in (("/healthz", 200), ("/readyz", 200)):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
                self.assertEqual(r.status, code)
        farm.stop_and_check(self)


if __name__ == "__main__":
    unittest.main()
