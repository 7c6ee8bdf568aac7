"""zkfarmd as a service (issue 35): what an init system and an operator see.
A worker that fails at start gives READY=1 with STATUS=degraded (systemd's
start does not hang) and `ready --wait` fails at once; GET /readyz says why;
under journald every line carries its priority; the log file is 0640 for the
admin group, and log_file = "" turns it off; configuration faults exit 78
(EX_CONFIG) naming the file, line and key, and --check-config says so without
starting; --version names the commit; zkfarm_worker_info has every worker.

Run by ctest like test_farm.py (ZKFARM_BIN, ZKFARM_SOURCE_DIR, ZKFARM_SHARED_FIXTURES).
"""
import grp
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import unittest

from attack_tools import EVE, ensure_group_member, ensure_user, script, wait_until, write_config
from test_farm import BIN, Farm, ctl
from test_http import free_port, http_get
from test_journal import become_subreaper

EX_CONFIG = 78


def zkfarmd(*args, timeout=60):
    """Runs zkfarmd to its exit (a configuration check or a refused start)."""
    return subprocess.run([os.path.join(BIN, "zkfarmd"), *args], capture_output=True, text=True, timeout=timeout)


class ServiceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        become_subreaper()

    def setUp(self):
        self.farms = []
        self.tmp = tempfile.mkdtemp(prefix="zkfarm-svc-")

    def tearDown(self):
        for f in self.farms:
            f.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def farm(self, *extra, env=None, wait=True):
        f = Farm(*extra, env=env, wait=wait)
        self.farms.append(f)
        return f

    def notify_socket(self):
        path = os.path.join(self.tmp, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        self.addCleanup(sock.close)
        return path, sock

    def test_a_worker_failing_at_start_gives_ready_degraded_and_ready_wait_fails_at_once(self):
        # The GPU worker's binary exits 2 (usage): a restart cannot help, it is failed for good.
        bad = script(os.path.join(self.tmp, "gpu-broken"), "echo 'no device here' >&2; exit 2")
        path, sock = self.notify_socket()
        port = free_port()
        farm = self.farm("--synth-workers", "1", "--gpu-binary", bad, "--http", f"127.0.0.1:{port}",
                         env={"NOTIFY_SOCKET": path}, wait=False)
        sock.settimeout(60)
        ready = None
        while ready is None:
            msg = sock.recv(4096).decode()  # socket.timeout fails the test: READY=1 never came
            if "READY=1" in msg:
                ready = msg
        self.assertIn("STATUS=degraded: 1 of 2 workers failed: gpu-0:", ready)
        self.assertIn("cannot start in this environment", ready)
        st = farm.status()
        workers = {w["id"]: w for w in st["workers"]}
        self.assertEqual(workers["gpu-0"]["state"], "failed")
        self.assertEqual(workers["synth-0"]["state"], "idle", "the healthy worker serves")
        # ready --wait: not a wait for the timeout (exit 4) but a failure now (exit 1) with the reason.
        code, out, err = ctl(farm.state, "ready", "--wait", "--timeout", "600", check=False)
        self.assertEqual(code, 1, err)
        self.assertIn("gpu-0 failed", err)
        self.assertIn("zkfarmctl restart gpu-0", err)
        # GET /readyz: 503 with the reason; the liveness check is unaffected.
        code, body = http_get(port, "/readyz")
        self.assertEqual(code, 503)
        self.assertEqual(body, "not ready: workers not READY: gpu-0 failed\n")  # no detail: http_status_detail is off
        self.assertEqual(http_get(port, "/healthz")[0], 200)
        # zkfarm_worker_info: one series per worker, with its pid ("" for none) and binary.
        # (The snapshot is rendered every 200 ms: poll until it has the failed worker.)
        gpu_line = f'zkfarm_worker_info{{worker="gpu-0",kind="gpu",pid="",version="",binary="{bad}"}} 1'
        metrics = wait_until("the failed gpu-0 in /metrics",
                             lambda: (lambda b: b if gpu_line in b else None)(http_get(port, "/metrics")[1]))
        synth = re.search(r'zkfarm_worker_info\{worker="synth-0",kind="synth",pid="(\d+)",version="([^"]*)",'
                          r'binary="([^"]+)"\} 1', metrics)
        self.assertIsNotNone(synth, metrics)
        self.assertEqual(int(synth.group(1)), workers["synth-0"]["pid"])
        self.assertEqual(synth.group(2), farm.status()["version"], "the version the worker said in READY")
        self.assertTrue(synth.group(3).endswith("zkfarm-synth"))
        self.assertRegex(metrics, r'zkfarm_build_info\{version="[^"]+",commit="[^"]+",cuda="(yes|no)"\} 1')
        farm.stop_and_check(self)

    def test_a_worker_that_never_says_ready_does_not_hold_the_start_past_its_ready_timeout(self):
        # It hangs before READY: killed every ready_timeout_ms and started
        # again, never "failed" (too slow to count as flapping).
        hang = script(os.path.join(self.tmp, "gpu-hangs"), "exec sleep 600")
        path, sock = self.notify_socket()
        cfg = write_config(os.path.join(self.tmp, "zkfarmd.toml"), ready_timeout_ms=1000, stop_timeout_ms=1000)
        farm = self.farm("--synth-workers", "1", "--gpu-binary", hang, "--config", cfg, env={"NOTIFY_SOCKET": path},
                         wait=False)
        sock.settimeout(60)
        ready = None
        while ready is None:
            msg = sock.recv(4096).decode()
            if "READY=1" in msg:
                ready = msg
        self.assertRegex(ready, r"STATUS=degraded: not READY after \d+ s: gpu-0 (starting|exited)")
        workers = {w["id"]: w for w in farm.status()["workers"]}
        self.assertEqual(workers["synth-0"]["state"], "idle")
        self.assertNotEqual(workers["gpu-0"]["state"], "failed")
        farm.stop_and_check(self)

    def test_journald_gets_priorities_and_log_file_off_writes_no_file(self):
        # systemd connects stderr to the journal and names the stream in
        # JOURNAL_STREAM (device:inode): here a plain file stands in for it.
        bad = script(os.path.join(self.tmp, "gpu-broken"), "exit 2")
        state = os.path.join(self.tmp, "state")
        err_path = os.path.join(self.tmp, "journal.txt")
        with open(err_path, "w") as err:
            st = os.fstat(err.fileno())
            env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
            p = subprocess.Popen([os.path.join(BIN, "zkfarmd"), "--state-dir", state, "--synth-workers", "1",
                                  "--gpu-binary", bad, "--log-file", ""], stdout=err, stderr=err, env=env)
            try:
                wait_until("gpu-0 failed", lambda: "failed" in ctl(state, "status", check=False)[1])
                self.assertEqual(ctl(state, "stop", "--wait", "--timeout", "60", check=False)[0], 0)
            finally:
                if p.poll() is None:
                    p.kill()
                p.wait(timeout=60)
        with open(err_path) as f:
            lines = [line for line in f.read().splitlines() if line]
        self.assertTrue(lines)
        for line in lines:
            self.assertRegex(line, r"^<[2-7]>", "every line of zkfarmd's carries its sd-daemon priority")
        self.assertTrue(any(re.match(r"^<3>worker gpu-0: .*cannot start in this environment", l) for l in lines), lines)
        self.assertTrue(any(re.match(r"^<6>zkfarmd .*commit", l) for l in lines), lines)
        self.assertFalse(any(re.match(r"^<\d>\[\d{4}-", l) for l in lines), "no timestamp: the journal has its own")
        self.assertFalse(os.path.exists(os.path.join(state, "zkfarmd.log")), "log_file = \"\" writes no file")
        # Without the journal (a terminal, a container log) the lines keep their usual form.
        farm = self.farm("--synth-workers", "1")
        self.assertNotRegex(farm.output(), r"(?m)^<\d>")
        farm.stop_and_check(self)

    def test_the_log_file_is_for_the_admin_group_and_never_written_through_a_link(self):
        ensure_user(EVE)
        group = "zkfarm-test-logadm"
        ensure_group_member(group, EVE)
        cfg = write_config(os.path.join(self.tmp, "zkfarmd.toml"), admin_group=group)
        farm = self.farm("--synth-workers", "1", "--config", cfg)
        log = os.path.join(farm.state, "zkfarmd.log")
        st = os.lstat(log)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o640)
        self.assertEqual(st.st_gid, grp.getgrnam(group).gr_gid)
        farm.stop_and_check(self)
        # Without an admin group the file is zkfarmd's alone: its own group
        # is the submitters' (control_group by default).
        cfg2 = write_config(os.path.join(self.tmp, "none.toml"), admin_group="")
        other = self.farm("--synth-workers", "1", "--config", cfg2)
        self.assertEqual(stat.S_IMODE(os.lstat(os.path.join(other.state, "zkfarmd.log")).st_mode), 0o600)
        other.stop_and_check(self)
        # A link planted at the log's name: zkfarmd refuses to start (exit 1) and the target is untouched.
        target = os.path.join(self.tmp, "victim")
        with open(target, "w") as f:
            f.write("precious\n")
        os.remove(log)
        os.symlink(target, log)
        p = zkfarmd("--state-dir", farm.state, "--synth-workers", "1")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("symbolic link", p.stderr)
        with open(target) as f:
            self.assertEqual(f.read(), "precious\n")

    def test_configuration_faults_exit_78_naming_file_line_and_key(self):
        state = os.path.join(self.tmp, "state")
        good = write_config(os.path.join(self.tmp, "good.toml"), synth_workers=2, arena_mib=64)
        p = zkfarmd("--check-config", "--state-dir", state, "--config", good)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"the configuration is valid ({good})", p.stdout)
        self.assertIn("arena_mib = 64", p.stdout)
        self.assertFalse(os.path.exists(state), "--check-config starts nothing")
        typo = os.path.join(self.tmp, "typo.toml")
        with open(typo, "w") as f:
            f.write("synth_workers = 2\n# the arena\narena_mb = 64\n")
        for args, fault in [
            (["--config", typo], f"{typo}:3: unknown key 'arena_mb'; did you mean 'arena_mib'?"),
            (["--config", os.path.join(self.tmp, "missing.toml")], "cannot read the configuration file: No such file"),
            (["--arena-mib", "-5"], "--arena-mib"),
            (["--backend", "gpu"], "--backend"),
            (["--config", write_config(os.path.join(self.tmp, "grp.toml"), control_group="zkfarm-no-such-group")],
             "control_group: no group named 'zkfarm-no-such-group'"),
            (["--gpu-binary", os.path.join(self.tmp, "nothing-here")], "gpu_binary: "),
        ]:
            for check in ([], ["--check-config"]):
                p = zkfarmd(*check, "--state-dir", state, *args)
                self.assertEqual(p.returncode, EX_CONFIG, (args, p.stderr))
                self.assertIn(fault, p.stderr, args)
        self.assertFalse(os.path.exists(os.path.join(state, "zkfarmd.lock")), "a bad configuration starts nothing")
        p = zkfarmd("--version")
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"^zkfarmd \d+\.\d+\.\d+ \(commit [0-9A-Za-z._-]+, CUDA backend (built|not built)\)")
        p = zkfarmd("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("78", p.stdout)
        self.assertRegex(p.stdout, r"--arena-mib[^\n]*\n?[^\n]*1024")  # defaults are shown


if __name__ == "__main__":
    unittest.main()
