"""The fault sweep, reproduced end to end: output folders that fill up or turn
read-only, restarts that rewrote finished outputs, wall-clock jumps, a full
journal and a damaged WAL, workers that must not be respawned, poison
partitions, and signals. Each test names the finding it reproduces and checks
that the farm now fails safe. The attacks of the sweep are in test_attacks.py,
the tools both use in attack_tools.py.

Run by ctest like test_farm.py (ZKFARM_BIN, ZKFARM_SOURCE_DIR, ZKFARM_SHARED_FIXTURES),
as root (it mounts tmpfs folders). The clock test needs libfaketime (Debian's
`faketime`, installed by scripts/setup.sh).
"""
import errno
import hashlib
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from attack_tools import CHAIN_VKEY, CHAIN_ZKEY, EVE, FarmCase, read, run_as, script, verify_dir
from test_farm import BIN, chain_wtns, ctl, snarkjs_verify
from test_journal import journaled_proofs, reap_until_gone

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def fill(path):
    """Writes zeros to `path` until its filesystem is full (ENOSPC); returns the bytes written."""
    n = 0
    with open(path, "wb", buffering=0) as f:
        chunk = bytes(1 << 16)
        while True:
            try:
                n += f.write(chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                return n


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_code(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def poll(fn, timeout, step=0.1):
    """fn()'s first truthy value within `timeout` seconds (a generous bound that only stops a hang), else None."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(step)
    return None


class FaultCase(FarmCase):
    """FarmCase with tmpfs mounts, unmounted after the farms stop."""

    def setUp(self):
        super().setUp()
        self.mounts = []

    def tearDown(self):
        for f in reversed(self.farms):
            f.close()
        self.farms = []
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", m])
        super().tearDown()

    def tmpfs(self, name, size, mode="0755"):
        path = os.path.join(self.tmp, name)
        os.mkdir(path)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode={mode}", "tmpfs", path], check=True)
        self.mounts.append(path)
        return path

    def worker(self, farm, wid):
        return {w["id"]: w for w in farm.status()["workers"]}[wid]


class OutputFaultTest(FaultCase):
    def unwritable_output(self, make_unwritable, fault):
        farm = self.farm("--synth-workers", "1", env={"ZKFARM_FAULT": "slow_ms:500"})
        out = self.tmpfs("out", "1m")
        code, job, err = ctl(farm.state, "submit", "--zkey", CHAIN_ZKEY, "--wtns", chain_wtns(0), chain_wtns(1),
                             "--out", out, check=False)
        self.assertEqual(code, 0, err)
        job = job.strip()
        make_unwritable(out)  # each partition takes >= 1 s: none is written yet
        code, _, err = self.wait_job(farm, job)
        self.assertEqual(code, 1, err + farm.output())
        j = self.job(farm, job)
        self.assertEqual(j["state"], "failed")
        self.assertIn(fault, j["error"])
        self.assertIn(f"zkfarmctl result {job}", j["error"])
        self.assertIn(fault, err)
        self.assertFalse([n for n in os.listdir(out) if n.endswith(".json")], "a proof file was written")
        other = os.path.join(self.tmp, "other")
        code, _, err = ctl(farm.state, "result", job, "--out", other, check=False)
        self.assertEqual(code, 0, err)
        verify_dir(self, other, 2)
        farm.stop_and_check(self)
        return out

    def test_a_full_output_folder_fails_the_job_visibly_and_result_writes_elsewhere(self):
        # Sweep: a write into a full folder failed silently: the job said "done"
        # and its proof files were empty or missing.
        out = self.unwritable_output(lambda out: fill(os.path.join(out, "filler")), "No space left on device")
        self.assertEqual(os.listdir(out), ["filler"], "temporary files were left in the full folder")

    def test_a_read_only_output_folder_fails_the_job_visibly_and_result_writes_elsewhere(self):
        # Sweep: the same with a folder remounted read-only while the job ran.
        self.unwritable_output(
            lambda out: subprocess.run(["mount", "-o", "remount,ro", out], check=True), "Read-only file system")

    def test_a_restart_writes_only_missing_outputs_as_their_owner(self):
        # Sweep: every start rewrote every finished job's outputs as root, over
        # files their users had since edited, and through symlinks planted there.
        farm = self.farm("--synth-workers", "1")
        out = os.path.join(self.eve_dir("mine"), "out")
        code, job, err = self.eve_submit(farm, CHAIN_ZKEY, [chain_wtns(0), chain_wtns(1)], out)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.wait_job(farm, job)[0], 0, farm.output())
        secret, content = self.root_secret()
        self.assertEqual(run_as(EVE, ["sh", "-c", f"echo ' ' >> {out}/0.proof.json && rm {out}/1.proof.json {out}/1.public.json"
                                      f" && ln -s {secret} {out}/1.public.json"]).returncode, 0)
        edited = read(f"{out}/0.proof.json")
        state = farm.state
        farm.stop_and_check(self)
        farm = self.farm("--synth-workers", "1", state=state)
        self.assertTrue(poll(lambda: os.path.exists(f"{out}/1.proof.json"), 30), farm.output())
        self.assertEqual(read(f"{out}/0.proof.json"), edited, "an existing output was rewritten")
        self.assertEqual(read(secret), content * 64, "the restart wrote through a symlink")
        for name in ("1.proof.json", "1.public.json"):
            st = os.lstat(f"{out}/{name}")
            self.assertTrue(stat.S_ISREG(st.st_mode), name)
            self.assertEqual(st.st_uid, self.eve.pw_uid, f"{name} was rewritten as root, not as its owner")
        ok, text = snarkjs_verify([(CHAIN_VKEY, f"{out}/1.public.json", f"{out}/1.proof.json")])
        self.assertTrue(ok, text)
        farm.stop_and_check(self)


class ClockTest(FaultCase):
    def test_wall_clock_jumps_restart_no_worker(self):
        # Sweep: heartbeats, backoffs and timeouts ran on the wall clock: a jump
        # of an hour forward killed every worker for "missed heartbeats", one
        # back froze them. Deadlines now run on the steady clock.
        self.assertTrue(os.path.exists(LIBFAKETIME), f"{LIBFAKETIME} missing: apt-get install faketime "
                                                     "(scripts/setup.sh installs it)")
        rc = os.path.join(self.tmp, "faketime.rc")
        with open(rc, "w") as f:
            f.write("+0\n")
        env = {"LD_PRELOAD": LIBFAKETIME, "FAKETIME_TIMESTAMP_FILE": rc, "FAKETIME_NO_CACHE": "1",
               "FAKETIME_DONT_FAKE_MONOTONIC": "1", "ZKFARM_FAULT": "slow_ms:100",
               # In the ASan build the preloaded libfaketime comes before ASan's runtime.
               "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
        # Heartbeats every 200 ms, a worker silent for 2 s killed: a deadline
        # still on the wall clock fires within 2 s of a jump, so each
        # jump is watched for three timeouts (not the defaults' 30 s).
        timeout_s = 2.0
        farm = self.farm("--synth-workers", "1", env=env,
                         config={"heartbeat_ms": 200, "heartbeat_timeout_ms": int(timeout_s * 1000)})
        code, job_a, err, out_a = farm.submit(CHAIN_ZKEY, [chain_wtns(k) for k in range(10)])
        self.assertEqual(code, 0, err)
        jobs = [(job_a, out_a, 10)]
        for jump, seconds in (("-1h", -3600), ("+1h", 3600)):
            with open(rc, "w") as f:
                f.write(jump + "\n")
            code, job, err, out = farm.submit(CHAIN_ZKEY, [chain_wtns(3)])
            self.assertEqual(code, 0, err)
            jobs.append((job, out, 1))
            skew = self.job(farm, job)["submitted_ms"] / 1000 - time.time()
            self.assertAlmostEqual(skew, seconds, delta=120, msg="zkfarmd's wall clock did not jump")
            watched = time.monotonic()
            while time.monotonic() - watched < 3 * timeout_s:
                st = farm.status()
                self.assertTrue(all(w["restarts"] == 0 and w["state"] in ("idle", "busy") for w in st["workers"]),
                                json.dumps(st["workers"]) + farm.output()[-3000:])
                time.sleep(0.1)
        for job, out, n in jobs:
            self.assertEqual(self.wait_job(farm, job)[0], 0, farm.output())
            verify_dir(self, out, n)
        self.assertNotIn("missed its heartbeats", farm.output())
        self.assertTrue(all(w["restarts"] == 0 for w in farm.status()["workers"]))
        farm.stop_and_check(self)


class JournalFaultTest(FaultCase):
    def test_a_full_journal_closes_intake_until_it_has_room_and_work_goes_on(self):
        # Sweep: a journal write on a full disk threw out of the event loop and
        # zkfarmd exited, losing the in-flight work; nothing told clients why.
        state = self.tmpfs("state", "16m", mode="0750")
        port = free_port()
        farm = self.farm("--synth-workers", "1", "--http", f"127.0.0.1:{port}", state=state,
                         env={"ZKFARM_FAULT": "slow_ms:300"})
        self.assertEqual(http_code(port, "/readyz"), 200)
        code, job_a, err, out_a = farm.submit(CHAIN_ZKEY, [chain_wtns(k) for k in range(6)])
        self.assertEqual(code, 0, err)
        filler = os.path.join(state, "filler")
        fill(filler)
        # the next journal write (a partition's proof) fails: intake closes
        st = poll(lambda: (lambda s: s if s["intake"] == "refusing" else None)(farm.status()), 60)
        self.assertIsNotNone(st, farm.output())
        self.assertIn("full", st["intake_fault"])
        code, _, err, _ = farm.submit(CHAIN_ZKEY, [chain_wtns(7)])
        self.assertEqual(code, 1, err)
        self.assertIn("not accepting jobs", err)
        self.assertIn("full", err)
        self.assertEqual(http_code(port, "/readyz"), 503)
        self.assertEqual(http_code(port, "/healthz"), 200)
        self.assertIsNone(farm.proc.poll())
        # in-flight work finishes meanwhile
        self.assertEqual(self.wait_job(farm, job_a)[0], 0, farm.output())
        verify_dir(self, out_a, 6)
        os.unlink(filler)
        self.assertTrue(poll(lambda: farm.status()["intake"] == "open", 60), farm.output())
        self.assertNotIn("intake_fault", farm.status())
        self.assertEqual(http_code(port, "/readyz"), 200)
        code, job_c, err, out_c = farm.submit(CHAIN_ZKEY, [chain_wtns(8)])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.wait_job(farm, job_c)[0], 0, farm.output())
        verify_dir(self, out_c, 1)
        per_partition = journaled_proofs(state, job_a, 6)
        self.assertEqual(sorted(i for j, i, c in per_partition if str(j) == job_a), list(range(6)),
                         "the proofs kept in memory during the fault were journaled afterwards")
        farm.stop_and_check(self)

    def test_a_full_state_dir_closes_intake_even_with_no_work_in_flight(self):
        # Sweep (the same full disk, on an idle farm): every submit failed for
        # want of room for its input copies, while status said "intake: open"
        # and /readyz 200 kept load balancers sending jobs to it.
        state = self.tmpfs("state", "16m", mode="0750")
        port = free_port()
        farm = self.farm("--synth-workers", "1", "--http", f"127.0.0.1:{port}", state=state)
        filler = os.path.join(state, "filler")
        fill(filler)
        code, _, err, _ = farm.submit(CHAIN_ZKEY, [chain_wtns(7)])
        self.assertEqual(code, 1, err)
        self.assertIn("No space left on device", err)
        st = poll(lambda: (lambda s: s if s["intake"] == "refusing" else None)(farm.status()), 10)
        self.assertIsNotNone(st, "intake stays open on a full state dir: " + json.dumps(farm.status())[:1500])
        self.assertIn("intake_fault", st)
        self.assertEqual(http_code(port, "/readyz"), 503)
        os.unlink(filler)
        self.assertTrue(poll(lambda: farm.status()["intake"] == "open", 60), farm.output())
        self.assertEqual(http_code(port, "/readyz"), 200)
        code, job, err, out = farm.submit(CHAIN_ZKEY, [chain_wtns(8)])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.wait_job(farm, job)[0], 0, farm.output())
        verify_dir(self, out, 1)
        farm.stop_and_check(self)

    def test_a_damaged_last_wal_frame_stops_the_start_naming_the_frame(self):
        # Sweep: SQLite's recovery silently dropped a damaged WAL frame (and the
        # acknowledged jobs in it) and zkfarmd started as if nothing happened.
        farm = self.farm("--synth-workers", "1")
        code, job, err, _ = farm.submit(CHAIN_ZKEY, [chain_wtns(0)])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.wait_job(farm, job)[0], 0, farm.output())
        workers = [w["pid"] for w in farm.status()["workers"]]
        farm.proc.send_signal(signal.SIGKILL)
        farm.proc.wait()
        self.assertTrue(reap_until_gone(workers, 5.0))
        wal = os.path.join(farm.state, "journal.sqlite-wal")
        data = bytearray(read(wal))
        page = struct.unpack_from(">I", data, 8)[0]  # WAL header: magic, version, page size, … (big-endian)
        frame = 24 + page
        frames = (len(data) - 32) // frame
        self.assertGreater(frames, 0, "the WAL holds no frame to damage")
        last = 32 + (frames - 1) * frame
        data[last + 24 + page // 2] ^= 0xff  # one byte of the last complete frame's page
        with open(wal, "wb") as f:
            f.write(data)
        before = hashlib.sha256(data).hexdigest()
        p = subprocess.run([os.path.join(BIN, "zkfarmd"), "--state-dir", farm.state, "--arena-mib", "64"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(wal, p.stderr)
        self.assertIn(f"frame {frames} (at byte {last})", p.stderr)
        self.assertEqual(hashlib.sha256(read(wal)).hexdigest(), before, "the damaged WAL was modified")
        # the way out the message gives: cut the WAL before the damaged frame
        os.truncate(wal, last)
        farm2 = self.farm("--synth-workers", "1", state=farm.state)
        farm2.stop_and_check(self)

    def test_a_wal_cut_after_an_acknowledged_submit_stops_the_start(self):
        # Sweep (second pass): after a SIGKILL right after an acknowledged
        # submit, a WAL truncated mid-frame, or without its last frame, or with
        # that frame's header zeroed, or its salt changed, let zkfarmd start
        # normally without the job.
        for damage in ("truncated mid-frame", "last frame dropped", "last frame's first 512 bytes zeroed",
                       "last frame's salt changed"):
            with self.subTest(damage=damage):
                farm = self.farm("--synth-workers", "1")
                ctl(farm.state, "drain")  # the submit's commit is then the WAL's last
                code, job, err, _ = farm.submit(CHAIN_ZKEY, [chain_wtns(0)])
                self.assertEqual(code, 0, err)
                workers = [w["pid"] for w in farm.status()["workers"]]
                farm.proc.send_signal(signal.SIGKILL)
                farm.proc.wait()
                self.assertTrue(reap_until_gone(workers, 5.0))
                wal = os.path.join(farm.state, "journal.sqlite-wal")
                data = bytearray(read(wal))
                page = struct.unpack_from(">I", data, 8)[0]
                frame = 24 + page
                frames = (len(data) - 32) // frame
                self.assertGreater(frames, 0, "the WAL holds no frame")
                last = 32 + (frames - 1) * frame
                if damage == "truncated mid-frame":
                    data = data[:last + frame // 2]
                elif damage == "last frame dropped":
                    data = data[:last]
                elif damage == "last frame's salt changed":
                    data[last + 8] ^= 0x5A  # frame header: page, size, salt-1 (bytes 8..11), salt-2, checksums
                else:
                    data[last:last + 512] = bytes(512)
                with open(wal, "wb") as f:
                    f.write(data)
                p = subprocess.run([os.path.join(BIN, "zkfarmd"), "--state-dir", farm.state, "--arena-mib", "64"],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertEqual(bytes(read(wal)), bytes(data), "the damaged WAL was modified")
                if damage == "last frame's salt changed":
                    # The frame check names it first; following its advice
                    # (cut the WAL before the frame) meets the mark.
                    self.assertIn(f"frame {frames} (at byte {last}) is damaged", p.stderr)
                    self.assertIn("salt bytes were damaged", p.stderr)
                    os.truncate(wal, last)
                    data = data[:last]
                    p = subprocess.run([os.path.join(BIN, "zkfarmd"), "--state-dir", farm.state, "--arena-mib", "64"],
                                       capture_output=True, text=True, timeout=60)
                    self.assertEqual(p.returncode, 1, p.stderr)
                mark = os.path.join(farm.state, "journal.sqlite-acked")
                self.assertIn("1 acknowledged transaction (submitted jobs, added circuits) missing", p.stderr)
                self.assertIn(f"mv {mark}", p.stderr)
                self.assertEqual(bytes(read(wal)), bytes(data), "the damaged WAL was modified")
                # The way out the message gives: the mark moved aside; the job is
                # then gone, as the operator was told.
                os.rename(mark, mark + ".lost")
                farm2 = self.farm("--synth-workers", "1", state=farm.state)
                self.assertEqual(farm2.status()["job_counts"], {}, farm2.output())
                farm2.stop_and_check(self)


class WorkerFaultTest(FaultCase):
    def test_a_worker_exiting_3_is_retired_not_respawned_and_its_words_are_logged(self):
        # Sweep: a worker that cannot run on this host (exit 3: environment)
        # was restarted forever; its stderr went nowhere.
        real = os.path.join(BIN, "zkfarm-synth")
        wrapper = script(os.path.join(self.tmp, "synth-wrapper"),
                         'case " $* " in *" --id synth-0 "*)\n'
                         '  echo "synth-0: this host cannot run me (test)" >&2; exit 3;;\nesac\n'
                         f'exec {real} "$@"')
        farm = self.farm("--synth-workers", "2", "--synth-binary", wrapper, config={"restart_backoff_ms": 100},
                         wait=False)
        w = poll(lambda: (lambda w: w if w["state"] == "failed" else None)(self.worker(farm, "synth-0")), 60)
        self.assertIsNotNone(w, farm.output())
        self.assertIn("exit code 3", w["failed_reason"])
        self.assertIn("do not respawn", w["failed_reason"])
        self.assertIn("this host cannot run me", w["failed_reason"])
        self.assertTrue(poll(lambda: all(x["state"] == "idle" for x in farm.status()["workers"] if x["id"] != "synth-0"),
                             60), farm.output())
        code, job, err, out = farm.submit(CHAIN_ZKEY, [chain_wtns(k) for k in range(4)])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.wait_job(farm, job)[0], 0, farm.output())
        verify_dir(self, out, 4)
        w = self.worker(farm, "synth-0")
        self.assertEqual((w["state"], w["restarts"]), ("failed", 0))
        log = read(os.path.join(farm.state, "zkfarmd.log"), "r")
        self.assertEqual(log.count("worker synth-0: started pid"), 1, "synth-0 was respawned")
        # the worker's stderr is in the log, under its id
        self.assertIn("[synth-0] synth-0: this host cannot run me (test)", log)
        farm.stop_and_check(self)

    def test_a_poison_partition_fails_its_job_after_max_attempts_and_the_farm_goes_on(self):
        # Sweep: a partition that crashed its worker was requeued forever: the
        # worker flapped into `failed` and every other job starved.
        # The workers have no fault that crashes on one given partition; this
        # wrapper crashes the synthesis worker (abort) on the first partition of
        # each of its first three processes, and the poison job's priority
        # (critical) makes that partition each one's first.
        real = os.path.join(BIN, "zkfarm-synth")
        starts = os.path.join(self.tmp, "starts")
        wrapper = script(os.path.join(self.tmp, "synth-poison"),
                         f'n=$(( $(cat {starts} 2>/dev/null || echo 0) + 1 )); echo $n > {starts}\n'
                         'if [ "$n" -le 3 ]; then export ZKFARM_FAULT=crash_after:0; fi\n'
                         f'exec {real} "$@"')
        farm = self.farm("--synth-workers", "1", "--synth-binary", wrapper, config={"restart_backoff_ms": 100})
        code, poison, err, poison_out = farm.submit(CHAIN_ZKEY, [chain_wtns(0)], "--priority", "critical")
        self.assertEqual(code, 0, err)
        code, other, err, other_out = farm.submit(CHAIN_ZKEY, [chain_wtns(k) for k in range(1, 4)])
        self.assertEqual(code, 0, err)
        code, _, err = self.wait_job(farm, poison)
        self.assertEqual(code, 1, err + farm.output())
        j = self.job(farm, poison)
        self.assertEqual(j["state"], "failed")
        self.assertIn("3 attempts ended in a fault (max_attempts 3); last: worker ", j["error"])
        self.assertIn("last: worker synth-0 died", j["error"])
        self.assertFalse(os.path.exists(f"{poison_out}/0.proof.json"))
        self.assertEqual(self.wait_job(farm, other)[0], 0, farm.output())
        verify_dir(self, other_out, 3)
        w = self.worker(farm, "synth-0")
        self.assertEqual((w["state"], w["restarts"]), ("idle", 3), farm.output())
        farm.stop_and_check(self)


class SignalTest(FaultCase):
    def test_hup_and_usr1_reopen_the_log_and_usr2_is_ignored(self):
        # Sweep: logrotate's SIGHUP killed zkfarmd (default action), and after a
        # rotation it kept writing into the renamed file; SIGUSR1/2 killed it too.
        farm = self.farm("--synth-workers", "1")
        log = os.path.join(farm.state, "zkfarmd.log")
        for n, sig in enumerate((signal.SIGHUP, signal.SIGUSR1), start=1):
            aside = f"{log}.{n}"
            os.rename(log, aside)
            farm.proc.send_signal(sig)
            name = signal.Signals(sig).name
            self.assertTrue(poll(lambda: os.path.exists(log) and f"{name}: reopened" in read(log, "r"), 30),
                            farm.output())
            code, job, err, out = farm.submit(CHAIN_ZKEY, [chain_wtns(n)])
            self.assertEqual(code, 0, err)
            self.assertEqual(self.wait_job(farm, job)[0], 0)
            self.assertIn(f"job {job}: accepted", read(log, "r"))
            self.assertNotIn(f"job {job}: accepted", read(aside, "r"))
            verify_dir(self, out, 1)
        farm.proc.send_signal(signal.SIGUSR2)
        self.assertTrue(poll(lambda: "SIGUSR2: ignored" in farm.output(), 30), farm.output())
        self.assertIsNone(farm.proc.poll())
        self.assertEqual(ctl(farm.state, "status", check=False)[0], 0)
        farm.stop_and_check(self)


if __name__ == "__main__":
    unittest.main()
