"""Lifecycle and faults (issue 5) with real processes: workers killed under
load, a worker that ignores stop requests, a binary that crashes at once
(backoff, then failed), rolling upgrades (good and bad binaries), stale records
of a dead instance whose pids were reused, drain/resume, and sd_notify.

Run by ctest like test_farm.py (ZKFARM_BIN, ZKFARM_SOURCE_DIR, ZKFARM_SHARED_FIXTURES).
"""
import json
import shutil
import os
import random
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import tempfile
import time
import unittest

from test_farm import BIN, FIX, Farm, chain_wtns, ctl, in_flight, pid_alive, snarkjs_verify, wait_until
from test_journal import become_subreaper, journaled_proofs, reap_until_gone


def write_config(farm_dir, **keys):
    path = os.path.join(farm_dir, "zkfarmd.toml")
    with open(path, "w") as f:
        for k, v in keys.items():
            f.write(f"{k} = {json.dumps(v)}\n")
    return path


def script(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


class LifecycleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        become_subreaper()

    def setUp(self):
        self.farms = []
        self.tmp = tempfile.mkdtemp(prefix="zkfarm-life-")

    def tearDown(self):
        for f in self.farms:
            f.close()
        subprocess.run(["rm", "-rf", self.tmp])

    def farm(self, *extra, env=None, state=None):
        f = Farm(*extra, env=env, state=state)
        self.farms.append(f)
        return f

    def verify_job(self, out, n):
        ok, text = snarkjs_verify([(os.path.join(FIX, "chain.vkey.json"), f"{out}/{k}.public.json", f"{out}/{k}.proof.json")
                                   for k in range(n)])
        self.assertTrue(ok, text)

    def test_random_worker_killed_again_once_replaced_each_partition_proved_once(self):
        # max_attempts high: a partition in flight at three of the random kills
        # would otherwise fail the job as a poison partition (max_attempts 3,
        # its own test elsewhere), which this test is not about. Seen once
        # under load (2026-12-07): partitions were in flight at two kills in
        # every run, and the third failed the job.
        cfg = write_config(self.tmp, flap_max_crashes=1000, restart_backoff_ms=100, restart_backoff_max_ms=400,
                           max_attempts=1000)
        farm = self.farm("--synth-workers", "1", "--config", cfg, env={"ZKFARM_FAULT": "slow_ms:150"})
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k % 10) for k in range(20)])
        self.assertEqual(code, 0, err)
        rng = random.Random(7)
        kills = 0

        def job_state():
            return {str(j["id"]): j for j in farm.status()["jobs"]}[job]

        # A random worker killed; the next kill once it is replaced (a new pid,
        # READY) and one more partition is proved, until the job is done.
        deadline = time.time() + 180
        while time.time() < deadline and job_state()["state"] != "done":
            workers = [w for w in farm.status()["workers"] if w["pid"]]
            if not workers:
                continue
            victim = rng.choice(workers)
            done_before = job_state()["done"]
            os.kill(victim["pid"], signal.SIGKILL)
            kills += 1
            wait_until(f"{victim['id']} replaced and one more partition proved", lambda: (
                job_state()["state"] in ("done", "failed") or
                (job_state()["done"] > done_before and any(
                    w["id"] == victim["id"] and w["pid"] not in (0, victim["pid"]) and w["state"] in ("idle", "busy")
                    for w in farm.status()["workers"]))), timeout=120)
            while True:  # reap nothing of ours by accident: only orphans could come here
                try:
                    if os.waitpid(-1, os.WNOHANG)[0] == 0:
                        break
                except ChildProcessError:
                    break
            self.assertNotEqual(job_state()["state"], "failed", job_state())
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "120", check=False)[0], 0, farm.output())
        self.assertGreater(kills, 2)
        per_partition = journaled_proofs(farm.state, job, 20)
        self.assertEqual(sorted(i for j, i, c in per_partition if str(j) == job), list(range(20)))
        self.assertTrue(all(c == 1 for _, _, c in per_partition))
        self.verify_job(out, 20)
        farm.stop_and_check(self)

    def test_device_error_ends_the_gpu_worker_and_its_partition_is_proved_again(self):
        # A CUDA error makes zkfarm-gpu exit (the context may be unusable); the
        # test double raises the same DeviceError after every 2 proofs, no GPU needed.
        cfg = write_config(self.tmp, flap_max_crashes=1000, restart_backoff_ms=100, restart_backoff_max_ms=400)
        farm = self.farm("--synth-workers", "1", "--config", cfg, env={"ZKFARM_TEST_DEVICE_ERROR_AFTER": "2"})
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(7)])
        self.assertEqual(code, 0, err)
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "120", check=False)[0], 0, farm.output())
        # Each proof is journaled just after it is published: seen under load,
        # partition 6's row was not there yet when `wait` said done.
        per_partition = journaled_proofs(farm.state, job, 7)
        self.assertEqual(sorted(i for j, i, c in per_partition if str(j) == job), list(range(7)),
                         farm.output()[-6000:])
        self.assertTrue(all(c == 1 for _, _, c in per_partition))
        self.verify_job(out, 7)
        log = farm.output()
        self.assertGreaterEqual(log.count("simulated device error"), 3, log)
        self.assertIn("exiting so that the partition is proved again", log)
        gpu = [w for w in farm.status()["workers"] if w["id"].startswith("gpu")][0]
        self.assertGreaterEqual(gpu["restarts"], 3)
        farm.stop_and_check(self)

    def test_worker_that_ignores_stop_is_killed_after_its_stop_timeout(self):
        cfg = write_config(self.tmp, stop_timeout_ms=1500)
        farm = self.farm("--synth-workers", "1", "--config", cfg, env={"ZKFARM_FAULT": "ignore_stop"})
        t0 = time.monotonic()
        farm.stop_and_check(self)
        took = time.monotonic() - t0
        self.assertLess(took, 10)
        log = farm.output()
        self.assertIn("SIGTERM", log)
        self.assertIn("did not exit within stop_timeout; sending SIGKILL", log)

    def test_binary_that_exits_at_once_backs_off_then_fails(self):
        bad = script(os.path.join(self.tmp, "bad-synth"), "exit 1")
        cfg = write_config(self.tmp, restart_backoff_ms=100, restart_backoff_max_ms=10000, flap_max_crashes=3,
                           synth_binary=bad)
        farm = Farm("--synth-workers", "1", "--config", cfg, wait=False)
        self.farms.append(farm)
        latencies, state = [], None
        deadline = time.time() + 30
        while time.time() < deadline:
            t0 = time.monotonic()
            code, out, err = ctl(farm.state, "status", "--json", check=False)
            latencies.append(time.monotonic() - t0)
            if code == 0:
                w = {x["id"]: x for x in json.loads(out)["workers"]}
                state = w["synth-0"]["state"]
                if state == "failed":
                    break
            time.sleep(0.03)
        self.assertEqual(state, "failed", farm.output())
        self.assertGreater(len(latencies), 0)  # status answered through the storm (how often depends on the load)
        # The bar is 100 ms: printed, not asserted (a wall-clock bound flakes on a loaded machine;
        # that status answers at all through the storm is what the samples show).
        print(f"\nstatus latency through a restart storm: {len(latencies)} samples, "
              f"max {1000 * max(latencies):.1f} ms", file=sys.stderr)
        delays = [int(x) for x in re.findall(r"worker synth-0: .*restarting in (\d+) ms", farm.output())]
        self.assertEqual(delays[:3], [100, 200, 400], "the backoff doubles")
        self.assertIn("failed (flapping)", farm.output())
        gpu = {x["id"]: x for x in farm.status()["workers"]}["gpu-0"]
        self.assertEqual(gpu["state"], "idle", "the other workers are untouched")
        farm.stop_and_check(self)

    def test_upgrade_mid_job_and_a_bad_upgrade_keeps_the_old_workers(self):
        # Upgrades take only binaries nobody but root could have written
        # (docs/security.md): a root folder beside the build.
        trusted = tempfile.mkdtemp(prefix="zkfarm-bin-", dir=os.path.dirname(BIN))
        self.addCleanup(shutil.rmtree, trusted, True)
        new_synth = script(os.path.join(trusted, "synth-v2"),
                           f'ZKFARM_TEST_VERSION=0.2.0-test exec {os.path.join(BIN, "zkfarm-synth")} "$@"')
        new_gpu = script(os.path.join(trusted, "gpu-v2"),
                         f'ZKFARM_TEST_VERSION=0.2.0-test exec {os.path.join(BIN, "zkfarm-gpu")} "$@"')
        # Upgrades run only programs inside upgrade_dir (issue 31).
        farm = self.farm("--synth-workers", "2", "--config", write_config(self.tmp, upgrade_dir=os.path.dirname(BIN)),
                         env={"ZKFARM_FAULT": "slow_ms:100"})
        untrusted = script(os.path.join(self.tmp, "synth-v2"), "exit 0")
        os.chmod(untrusted, 0o775)  # its group could have written it
        code, _, err = ctl(farm.state, "upgrade", "--synth", untrusted, check=False)
        self.assertEqual(code, 1)
        self.assertIn("writable by its group or by others", err)
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(10)])
        self.assertEqual(code, 0, err)
        wait_until("the job's partitions in flight", lambda: in_flight(farm))  # the upgrade comes mid-job
        ctl(farm.state, "upgrade", "--synth", new_synth, "--gpu", new_gpu)
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "120", check=False)[0], 0, farm.output())
        self.verify_job(out, 10)
        deadline = time.time() + 60
        while time.time() < deadline:
            st = farm.status()
            if st["rolling"] is None or (st["rolling"]["current"] is None and st["rolling"]["queued"] == 0):
                if all(w["version"] == "0.2.0-test" for w in st["workers"]):
                    break
            time.sleep(0.1)
        self.assertTrue(all(w["version"] == "0.2.0-test" and w["state"] in ("idle", "busy") for w in st["workers"]),
                        json.dumps(st["workers"]))
        # A binary that crashes at start: the upgrade stops, the old workers keep running.
        bad = script(os.path.join(trusted, "gpu-bad"), "exit 1")
        ctl(farm.state, "upgrade", "--gpu", bad)
        deadline = time.time() + 60
        while time.time() < deadline:
            st = farm.status()
            if st["rolling"] and st["rolling"]["error"] and all(w["state"] in ("idle", "busy") for w in st["workers"]):
                break
            time.sleep(0.1)
        self.assertIn("upgrade stopped", st["rolling"]["error"], json.dumps(st))
        self.assertEqual(len(st["workers"]), 3)
        self.assertTrue(all(w["state"] in ("idle", "busy") and w["version"] == "0.2.0-test" for w in st["workers"]),
                        json.dumps(st["workers"]))
        code, job2, err, out2 = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(3)])
        self.assertEqual(ctl(farm.state, "wait", job2, "--timeout", "60", check=False)[0], 0)
        self.verify_job(out2, 1)
        farm.stop_and_check(self)

    def test_stale_records_only_kill_the_same_processes(self):
        farm = self.farm("--synth-workers", "1")
        state = farm.state
        workers = [w["pid"] for w in farm.status()["workers"]]
        farm.proc.send_signal(signal.SIGKILL)
        farm.proc.wait()
        self.assertTrue(reap_until_gone(workers, 2.0))
        # One record's pid now belongs to an unrelated process (its start time differs);
        # another is really a leftover of the dead instance (pid and start time match).
        unrelated = subprocess.Popen(["sleep", "60"])
        leftover = subprocess.Popen(["sleep", "60"])
        with open(os.path.join(state, "children"), "w") as f:
            f.write(f"{unrelated.pid} {start_time(unrelated.pid) + 12345} synth-0\n")
            f.write(f"{leftover.pid} {start_time(leftover.pid)} gpu-0\n")
        farm2 = self.farm("--synth-workers", "1", state=state)
        try:
            self.assertIsNone(unrelated.poll(), "an unrelated process that reused a recorded pid was touched")
            self.assertEqual(leftover.wait(timeout=5), -signal.SIGKILL)
            self.assertIn("now belongs to another process: left alone", farm2.output())
        finally:
            unrelated.kill()
            unrelated.wait()
        farm2.stop_and_check(self)

    def test_drain_and_resume(self):
        # One partition at a time (no batch), so that the drain leaves some queued.
        farm = self.farm("--synth-workers", "1", "--synth-batch", "1", env={"ZKFARM_FAULT": "slow_ms:200"})
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(6)])
        self.assertEqual(code, 0, err)
        wait_until("the job's partitions in flight", lambda: in_flight(farm))  # the drain waits for them
        code, stdout, err = ctl(farm.state, "drain", "--wait", "--timeout", "30", check=False)
        self.assertEqual(code, 0, err)
        st = farm.status()
        self.assertEqual(st["intake"], "draining")
        self.assertEqual(st["in_flight"], 0)
        done_at_drain = {str(j["id"]): j for j in st["jobs"]}[job]["done"]
        self.assertLess(done_at_drain, 6, "the drain left partitions queued")
        # An absence, watched for a while: five partitions' worth of time
        # (200 ms each), and nothing may start in it.
        watched = time.monotonic()
        while time.monotonic() - watched < 1.0:
            st = farm.status()
            self.assertEqual((st["in_flight"], {str(j["id"]): j for j in st["jobs"]}[job]["done"]), (0, done_at_drain),
                             "nothing starts while drained")
            time.sleep(0.05)
        ctl(farm.state, "resume")
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "60", check=False)[0], 0)
        self.verify_job(out, 6)
        farm.stop_and_check(self)

    def test_gpu_worker_replacement_and_exit_wait_for_the_memory_release(self):
        # The test double reports a dead GPU worker's memory released 1.5 s after the first check.
        farm = self.farm("--synth-workers", "1", env={"ZKFARM_TEST_RELEASE_MS": "1500"})
        gpu = {w["id"]: w for w in farm.status()["workers"]}["gpu-0"]
        os.kill(gpu["pid"], signal.SIGKILL)
        seen_releasing, t0 = False, time.monotonic()
        while time.monotonic() - t0 < 20:
            w = {x["id"]: x for x in farm.status()["workers"]}["gpu-0"]
            if w["state"] == "releasing":
                seen_releasing = True
                self.assertTrue(w["release"], "status says what the release wait is waiting for")
            if seen_releasing and w["state"] == "idle":
                break
            time.sleep(0.05)
        self.assertTrue(seen_releasing, farm.output())
        self.assertGreaterEqual(time.monotonic() - t0, 1.4, "the replacement waited for the release")
        self.assertEqual(w["state"], "idle")
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(1)])
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "60", check=False)[0], 0)
        self.verify_job(out, 1)
        t0 = time.monotonic()
        farm.stop_and_check(self)
        self.assertGreaterEqual(time.monotonic() - t0, 1.4, "the exit waited for the release")
        self.assertIn("memory of pid", farm.output())

    def test_sd_notify_messages(self):
        path = os.path.join(self.tmp, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        sock.settimeout(0.2)
        # Read as a service manager does, while zkfarmd runs: a datagram
        # socket's queue holds about 10 messages, and libsystemd's sd_notify
        # then blocks its sender. Read only after the stop (as this test
        # did), a slow start (the sanitizer build on a busy machine: READY,
        # STATUS and a WATCHDOG every 200 ms) filled the queue and zkfarmd's
        # loop waited in sd_notify for a reader that never came (2026-12-08).
        msgs, stopped = [], threading.Event()

        def read():
            while True:
                try:
                    msgs.append(sock.recv(4096).decode())
                except socket.timeout:
                    if stopped.is_set():
                        return
        reader = threading.Thread(target=read)
        reader.start()
        try:
            farm = self.farm("--synth-workers", "1", env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"})
            farm.stop_and_check(self)
        finally:
            stopped.set()
            reader.join()
            sock.close()
        text = "\n".join(msgs)
        self.assertIn("READY=1", text)
        self.assertIn("STATUS=", text)
        self.assertIn("STOPPING=1", text)
        self.assertIn("WATCHDOG=1", text)
        self.assertLess(text.index("READY=1"), text.index("STOPPING=1"))


if __name__ == "__main__":
    unittest.main()
