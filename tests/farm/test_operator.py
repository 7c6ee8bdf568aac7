"""The operator's view (issue 13) with real processes: the status table through
a walk-through of docs/operations.md (drain, an upgrade that fails, a GPU
worker's release wait), `ready`, `stop --wait`, `restart/upgrade --wait`,
`wait` when zkfarmd stops right after (or before) a job ends, `jobs --since`,
and a zkfarmd that runs as a service user: it writes nothing where only the
submitter may, the submitter's zkfarmctl writes the results.

Run by ctest like test_farm.py (ZKFARM_BIN, ZKFARM_SOURCE_DIR, ZKFARM_SHARED_FIXTURES).
"""
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import unittest

from attack_tools import EVE, Control, ctl_as, msgpack, wait_until, ensure_group_member, ensure_user, run_as, script, verify_dir, write_config
from test_farm import BIN, FIX, SRC, Farm, chain_wtns, ctl, pid_alive, snarkjs_verify
from test_journal import become_subreaper

SVC = "zkfarm-test-svc"  # the service user an unprivileged zkfarmd runs as


def table(state):
    """`zkfarmctl status` as people see it."""
    return ctl(state, "status")[1]


class OperatorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        become_subreaper()

    def setUp(self):
        self.farms = []
        self.tmp = tempfile.mkdtemp(prefix="zkfarm-op-")

    def tearDown(self):
        for f in self.farms:
            f.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def farm(self, *extra, env=None, state=None, wait=True):
        f = Farm(*extra, env=env, state=state, wait=wait)
        self.farms.append(f)
        return f

    def test_walkthrough_table_shows_drain_upgrade_error_and_release_wait(self):
        # The GPU worker's memory "is released" 2 s after its process is gone (test double).
        # Upgrades run only programs inside upgrade_dir (issue 31): a root folder beside the build.
        trusted = tempfile.mkdtemp(prefix="zkfarm-bin-", dir=os.path.dirname(BIN))
        self.addCleanup(shutil.rmtree, trusted, True)
        cfg = write_config(os.path.join(self.tmp, "zkfarmd.toml"), upgrade_dir=trusted)
        farm = self.farm("--synth-workers", "1", "--config", cfg, env={"ZKFARM_TEST_RELEASE_MS": "2000"})
        code, out, err = ctl(farm.state, "ready", "--wait", "--timeout", "30", check=False)
        self.assertEqual((code, out), (0, "ready\n"), err)
        t = table(farm.state)
        self.assertIn("Farm:        accepting", t)
        self.assertIn("Ready:       yes", t)
        self.assertRegex(t, r"zkfarmd \S+  pid \d+  up ")

        # Drain: jobs are still accepted and queued; the table and `ready` say so.
        ctl(farm.state, "drain")
        t = table(farm.state)
        self.assertIn("draining: submits accepted and queued; no new partition starts", t)
        code, _, err = ctl(farm.state, "ready", check=False)
        self.assertEqual(code, 1)
        self.assertIn("not ready: drained", err)
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(0), chain_wtns(1)])
        self.assertEqual(code, 0, err)
        self.assertIn("Partitions:  2 queued, 0 synthesizing", table(farm.state))
        ctl(farm.state, "resume")
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "120", check=False)[0], 0, farm.output())
        verify_dir(self, out, 2)

        # An upgrade whose new GPU binary dies before READY: --wait exits 1
        # with the reason; meanwhile the table shows the release waits; after
        # it, the rollback under Rolling.
        bad = script(os.path.join(trusted, "gpu-bad"), "exit 1")
        up = subprocess.Popen([os.path.join(BIN, "zkfarmctl"), "--state-dir", farm.state, "upgrade", "--gpu", bad,
                               "--wait", "--timeout", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Until the old process is reaped the wait names it ("waiting for pid
        # N's memory"); then the device probe (here the test double) speaks.
        seen = wait_until("the release wait in the table",
                          lambda: (lambda t: t if "release wait" in t and "fake:" in t else None)(table(farm.state)),
                          timeout=60)
        self.assertRegex(seen, r"gpu-0 +gpu +- +releasing .*rolling: waiting for its memory to be released; "
                               r"release wait \S+ (s|ms) of 2m 00s: fake: \d+ ms left")
        self.assertRegex(seen, r"Rolling: +upgrade 1: running, 0 of 1 worker replaced, now gpu-0")
        stdout, stderr = up.communicate(timeout=180)
        self.assertEqual(up.returncode, 1, stdout + stderr)
        self.assertIn("upgrade 1 failed: worker gpu-0: new binary " + bad, stderr)
        self.assertIn("before READY; upgrade stopped, old binary", stderr)
        def old_worker_back():
            st = farm.status()
            gpu = {w["id"]: w for w in st["workers"]}["gpu-0"]
            return st["rolling"]["result"] == "failed" and gpu["state"] == "idle" and gpu["binary"] != bad
        wait_until("the old GPU worker back", old_worker_back, timeout=60)
        self.assertRegex(table(farm.state), r"Rolling: +upgrade 1: FAILED at .*: worker gpu-0: new binary .*gpu-bad")

        # A clean stop with --wait: exit 0 once zkfarmd has exited, nothing left.
        pids = [w["pid"] for w in farm.status()["workers"] if w["pid"]]
        code, out, err = ctl(farm.state, "stop", "--wait", check=False, timeout=120)
        self.assertEqual(code, 0, err + farm.output())
        self.assertIn("stopped (pid", out)
        self.assertEqual(farm.proc.wait(timeout=10), 0)
        for pid in pids:
            self.assertFalse(pid_alive(pid))

    def test_restart_wait_returns_when_every_worker_is_back(self):
        farm = self.farm("--synth-workers", "2")
        before = {w["id"]: w["pid"] for w in farm.status()["workers"]}
        code, out, err = ctl(farm.state, "restart", "all", "--wait", "--timeout", "120", check=False, timeout=150)
        self.assertEqual(code, 0, err + farm.output())
        self.assertRegex(out, r"restart 1 done: 3 workers replaced")
        after = farm.status()
        self.assertEqual(after["rolling"]["result"], "done")
        for w in after["workers"]:
            self.assertIn(w["state"], ("idle", "busy"))
            self.assertNotEqual(w["pid"], before[w["id"]], "every worker is a new process")
        farm.stop_and_check(self)

    def test_stop_wait_fails_when_gpu_memory_is_not_released(self):
        cfg = write_config(os.path.join(self.tmp, "z.toml"), release_timeout_ms=1500)
        farm = self.farm("--synth-workers", "1", "--config", cfg, env={"ZKFARM_TEST_RELEASE_MS": "600000"})
        code, out, err = ctl(farm.state, "stop", "--wait", check=False, timeout=120)
        self.assertEqual(code, 1, out + err)
        self.assertIn("exit code 1", err)
        self.assertIn("not released within release_timeout", err)
        self.assertEqual(farm.proc.wait(timeout=10), 1)

    def test_stop_wait_returns_after_the_process_so_a_start_right_after_succeeds(self):
        # Issue 35 (1): `stop --wait` returned while zkfarmd was still closing
        # (1.4-1.7 s), and a start right after failed on the state lock.
        state = os.path.join(self.tmp, "state")
        for i in range(20):
            # Not waiting for the workers: a start, then a stop at once, as a script would.
            farm = self.farm("--synth-workers", "1", state=state, wait=False)
            code, out, err = ctl(state, "stop", "--wait", check=False, timeout=60)
            self.assertEqual(code, 0, f"round {i}: {out}{err}{farm.output()}")
            # The process has exited by now (a zombie until reaped here), not just answered.
            self.assertEqual(farm.proc.poll(), 0, f"round {i}: zkfarmd still running after stop --wait")

    def test_status_says_where_things_are_and_kill_restarts_one_worker(self):
        farm = self.farm("--synth-workers", "2")
        st = farm.status()
        self.assertEqual(st["log_file"], os.path.join(farm.state, "zkfarmd.log"))
        self.assertEqual(st["journal"]["path"], os.path.join(farm.state, "journal.sqlite"))
        self.assertEqual(st["journal"]["bytes"], os.stat(st["journal"]["path"]).st_size)
        self.assertIsNone(st["http_address"])
        t = table(farm.state)
        self.assertIn("Journal:     " + st["journal"]["path"] + " (", t)
        self.assertIn("Log:         " + st["log_file"], t)
        self.assertIn("HTTP:        off", t)
        self.assertRegex(t, r"synth-0 +synth +\d+ +idle .*" + os.path.join(BIN, "zkfarm-synth"))
        # One worker with its own log lines, as systemctl status shows a unit.
        code, out, err = ctl(farm.state, "status", "synth-1")
        self.assertTrue(out.startswith("synth-1 - synth worker, idle\n"), out)
        self.assertIn("worker synth-1: started pid", out)
        self.assertNotIn("worker synth-0:", out)
        # kill WORKER: that worker alone, restarted; the farm goes on.
        pids = {w["id"]: w["pid"] for w in st["workers"]}
        code, out, err = ctl(farm.state, "kill", "synth-1")
        self.assertIn(f"worker synth-1 (pid {pids['synth-1']}) killed", out)

        def back():
            ws = {w["id"]: w for w in farm.status()["workers"]}
            return ws["synth-1"]["state"] == "idle" and ws["synth-1"]["pid"] not in (0, pids["synth-1"])
        wait_until("synth-1 restarted", back)
        st = farm.status()
        self.assertEqual(st["intake"], "open")
        self.assertEqual({w["id"]: w["pid"] for w in st["workers"] if w["id"] != "synth-1"},
                         {k: v for k, v in pids.items() if k != "synth-1"})
        code, out, err = ctl(farm.state, "kill", "synth-9", check=False)
        self.assertEqual(code, 1)
        self.assertIn("no worker 'synth-9'", err)
        code, out, _ = ctl(farm.state, "logs", "-n", "3")
        self.assertEqual(len(out.splitlines()), 3, out)
        # Issue 35 (5): a state dir this user may not enter is said as it is
        # (exit 5), never as "no zkfarmd is running"; a missing one still is.
        ensure_user(EVE)
        code, out, err = ctl_as(EVE, farm.state, "status")
        self.assertEqual(code, 5, err)
        self.assertIn("Permission denied", err)
        self.assertNotIn("no zkfarmd is running", err)
        code, out, err = ctl_as(EVE, "/nonexistent-zkfarm-state", "status")
        self.assertEqual(code, 3, err)
        self.assertIn("no zkfarmd is running", err)
        farm.stop_and_check(self)

    def test_wait_hears_the_end_of_a_job_when_zkfarmd_stops_right_after(self):
        # One partition in flight when the stop begins: the drain lets it
        # finish, zkfarmd exits right after, and the waiter still hears "done".
        farm = self.farm("--synth-workers", "1", env={"ZKFARM_FAULT": "slow_ms:400"})
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(2)])
        self.assertEqual(code, 0, err)
        waiter = subprocess.Popen([os.path.join(BIN, "zkfarmctl"), "--state-dir", farm.state, "wait", job, "-q"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until("the partition in flight", lambda: farm.status()["in_flight"] > 0)
        ctl(farm.state, "stop")
        stdout, stderr = waiter.communicate(timeout=120)
        self.assertEqual(waiter.returncode, 0, stderr + farm.output())
        self.assertEqual(stdout, f"job {job} done: 1 proof in {out}\n")
        self.assertEqual(farm.proc.wait(timeout=60), 0)
        verify_dir(self, out, 1)

    def test_a_stop_timeout_past_any_clock_drains_instead_of_wrapping(self):
        # Issue 45 (4), reproduced: `stop --timeout 18446744073709551615`
        # overflowed the drain's deadline into the past: zkfarmd exited at
        # once and killed the partition in flight. Clamped, it drains.
        farm = self.farm("--synth-workers", "1", env={"ZKFARM_FAULT": "slow_ms:1500"})
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(2)])
        self.assertEqual(code, 0, err)
        wait_until("the partition in flight", lambda: farm.status()["in_flight"] > 0)
        # zkfarmctl bounds --timeout itself; a client of control.sock need not.
        c = Control(os.path.join(farm.state, "control.sock"))
        c.request(msgpack({"v": 1, "t": "stop", "timeout_s": 2**64 - 1}))
        c.recv()
        c.close()
        self.assertEqual(farm.proc.wait(timeout=120), 0, farm.output())
        self.assertIn(f"job {job}", farm.output())
        verify_dir(self, out, 1)  # proved during the drain, not killed

    def test_wait_says_the_job_is_kept_when_zkfarmd_stops_before_it_ends(self):
        # One partition at a time (no batch): the stop's drain leaves the job unfinished.
        farm = self.farm("--synth-workers", "1", "--synth-batch", "1", env={"ZKFARM_FAULT": "slow_ms:400"})
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(6)])
        self.assertEqual(code, 0, err)
        waiter = subprocess.Popen([os.path.join(BIN, "zkfarmctl"), "--state-dir", farm.state, "wait", job, "-q"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until("a partition in flight", lambda: farm.status()["in_flight"] > 0)
        ctl(farm.state, "stop")
        stdout, stderr = waiter.communicate(timeout=120)
        self.assertEqual(waiter.returncode, 3, stdout + stderr)
        # "stopped" when the waiter heard the stop, "went away" when zkfarmd
        # was gone before its next poll (a loaded machine): both keep the job.
        self.assertRegex(stderr, f"zkfarmd (stopped|went away) before job {job} ended")
        self.assertIn("kept in the journal", stderr)
        self.assertEqual(farm.proc.wait(timeout=60), 0)
        # Nothing was lost: the next instance finishes it.
        again = self.farm("--synth-workers", "1", state=farm.state)
        self.assertEqual(ctl(again.state, "wait", job, "--timeout", "120", check=False)[0], 0, again.output())
        verify_dir(self, out, 6)
        again.stop_and_check(self)

    def test_jobs_since_and_state_filter(self):
        farm = self.farm("--synth-workers", "1")
        code, job1, err, _ = farm.submit(os.path.join(FIX, "tiny.zkey"), [os.path.join(FIX, "tiny.0.wtns")])
        self.assertEqual(code, 0, err)
        self.assertEqual(ctl(farm.state, "wait", job1, "--timeout", "60", check=False)[0], 0)
        # A mark just after job1 was submitted (Unix ms): job2, submitted after
        # job1 is done, is later still.
        jobs = {str(j["id"]): j for j in json.loads(ctl(farm.state, "jobs", "--json")[1])}
        mark = jobs[job1]["submitted_ms"] + 1
        code, job2, err, _ = farm.submit(os.path.join(FIX, "tiny.zkey"), [os.path.join(FIX, "tiny.1.wtns")])
        self.assertEqual(ctl(farm.state, "wait", job2, "--timeout", "60", check=False)[0], 0)
        ids = lambda *a: [str(j["id"]) for j in json.loads(ctl(farm.state, "jobs", "--json", *a)[1])]
        self.assertEqual(ids("--since", str(mark)), [job2])
        self.assertEqual(ids("--since", "1h"), [job2, job1])
        self.assertEqual(ids("--since", "1h", "--state", "failed"), [])
        self.assertEqual(ids("--limit", "1"), [job2])
        farm.stop_and_check(self)


class ReadmeTest(unittest.TestCase):
    def test_readme_farm_snippet_runs_as_pasted(self):
        # The lines between the farm-snippet markers, run by bash from a folder
        # that looks like the repository root (build/bin is this build's).
        with open(os.path.join(SRC, "README.md")) as f:
            text = f.read()
        block = text.split("<!-- farm-snippet -->", 1)[1].split("<!-- /farm-snippet -->", 1)[0]
        lines = block.strip().splitlines()
        self.assertEqual((lines[0], lines[-1]), ("```sh", "```"))
        snippet = "\n".join(lines[1:-1])
        root = tempfile.mkdtemp(prefix="zkfarm-readme-")
        self.addCleanup(shutil.rmtree, root, True)
        os.makedirs(os.path.join(root, "build"))
        os.symlink(BIN, os.path.join(root, "build", "bin"))
        os.symlink(os.path.join(SRC, "tests"), os.path.join(root, "tests"))
        p = subprocess.run(["bash", "-euo", "pipefail", "-c", snippet], cwd=root, capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, TMPDIR=root))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("ready", p.stdout)
        self.assertIn("stopped (pid", p.stdout)
        out = os.path.join(root, "proofs")
        verify_dir(self, out, 2)
        leftover = subprocess.run(["pgrep", "-f", root], capture_output=True, text=True).stdout
        self.assertEqual(leftover, "", "nothing of the farm is left running")


class ServiceUserTest(unittest.TestCase):
    """zkfarmd as a service user beside the local user eve: it cannot take
    eve's rights, so it writes nothing of hers; her zkfarmctl writes her
    results, and only where she may write."""

    @classmethod
    def setUpClass(cls):
        become_subreaper()
        ensure_user(SVC)
        ensure_user(EVE)
        # control.sock's group is zkfarmd's own by default (control_group): eve joins it.
        ensure_group_member(SVC, EVE)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zkfarm-svc-")
        os.chmod(self.tmp, 0o755)
        svc = pwd.getpwnam(SVC)
        self.state = os.path.join(self.tmp, "state")
        os.mkdir(self.state, 0o750)
        os.chown(self.state, svc.pw_uid, svc.pw_gid)
        self.log = open(os.path.join(self.tmp, "zkfarmd.out"), "w")
        env = {"PATH": "/usr/bin:/bin", "HOME": "/"}
        self.proc = subprocess.Popen([os.path.join(BIN, "zkfarmd"), "--state-dir", self.state, "--synth-workers", "1",
                                      "--arena-mib", "64"],
                                     user=svc.pw_uid, group=svc.pw_gid,
                                     extra_groups=os.getgrouplist(SVC, svc.pw_gid), cwd="/", env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        wait_until("zkfarmd as " + SVC, lambda: ctl(self.state, "ready", check=False)[0] == 0, timeout=30)

    def tearDown(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def output(self):
        self.log.flush()
        with open(os.path.join(self.tmp, "zkfarmd.out")) as f:
            return f.read()

    def test_results_are_written_by_the_submitters_own_zkfarmctl(self):
        eve = pwd.getpwnam(EVE)
        home = os.path.join(self.tmp, "eve")
        os.mkdir(home, 0o755)
        os.chown(home, eve.pw_uid, eve.pw_gid)
        inputs = []
        for name in ("chain.zkey", "chain.3.wtns", "chain.4.wtns"):
            dst = os.path.join(home, name)
            shutil.copy(os.path.join(FIX, name), dst)
            os.chown(dst, eve.pw_uid, eve.pw_gid)
            os.chmod(dst, 0o644)
            inputs.append(dst)
        out = os.path.join(home, "proofs")  # made by her zkfarmctl, 0755; zkfarmd's user may not write there
        code, job, err = ctl_as(EVE, self.state, "submit", "--zkey", inputs[0], "--wtns", *inputs[1:], "--out", out)
        self.assertEqual(code, 0, err + self.output())
        job = job.strip()
        self.assertIn("does not write into", err)
        code, stdout, err = ctl_as(EVE, self.state, "wait", job, "--timeout", "120", "-q")
        self.assertEqual(code, 0, err + self.output())
        self.assertEqual(stdout, f"job {job} done: 2 proofs written to {out}\n")
        for k in range(2):
            for f in (f"{k}.proof.json", f"{k}.public.json"):
                st = os.lstat(os.path.join(out, f))
                self.assertEqual(st.st_uid, eve.pw_uid, f + " is eve's, written by her zkfarmctl")
        verify_dir(self, out, 2)
        # `result` elsewhere: written as whoever asks, so only where eve may write.
        code, _, err = ctl_as(EVE, self.state, "result", job, "--out", os.path.join(self.state, "stolen"))
        self.assertEqual(code, 1)
        self.assertIn("Permission denied", err)
        self.assertFalse(os.path.exists(os.path.join(self.state, "stolen")))
        # The service user never wrote into eve's folder.
        self.assertNotIn("cannot write the result", self.output())
        code, _, err = ctl(self.state, "stop", "--wait", check=False, timeout=120)
        self.assertEqual(code, 0, err + self.output())
        self.assertEqual(self.proc.wait(timeout=10), 0)


if __name__ == "__main__":
    unittest.main()
