"""The memfd arena (issue 20) with real processes: zkfarmd SIGKILLed with its
workers running gives the arena's memory back without any restart (Shmem in
/proc/meminfo, no process maps or holds the memfd, nothing in /dev/shm); a
killed GPU worker's replacement and a rolling restart attach the same memfd
and prove; an arena larger than the memory is refused at start.

Run by ctest like test_farm.py (ZKFARM_BIN, ZKFARM_SOURCE_DIR, ZKFARM_SHARED_FIXTURES).
"""
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

from test_farm import BIN, FIX, Farm, chain_wtns, ctl, pid_alive, snarkjs_verify
from test_journal import become_subreaper, reap_until_gone

ARENA_MIB = 256
MIB = 1 << 20


def memfd_fds(pid, label):
    """The /proc/PID/fd/N entries of `pid` that are the memfd `label` ([] when
    the process is gone or another user's)."""
    needle = "/memfd:" + label + " "
    found = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if (os.readlink(f"/proc/{pid}/fd/{fd}") + " ").startswith(needle):
                    found.append(f"/proc/{pid}/fd/{fd}")
            except OSError:
                pass
    except OSError:
        pass
    return found


def memfd_allocated_bytes(pid, label):
    """Bytes of tmpfs pages the memfd `label` held open by `pid` has (st_blocks of
    /proc/PID/fd/N, 512-byte units). The arena's own count, unlike Shmem of
    /proc/meminfo, which is the whole machine's and moves with the tests beside."""
    fds = memfd_fds(pid, label)
    if not fds:
        raise AssertionError(f"pid {pid} holds no memfd:{label}")
    return os.stat(fds[0]).st_blocks * 512


def state_hash(state):
    """The 16 hex digits shm::Arena derives from the state dir (FNV-1a, 64 bits)."""
    h = 0xCBF29CE484222325
    for b in os.path.realpath(state).rstrip("/").encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def memfd_users(label):
    """{pid: (maps it, holds a descriptor)} of every process we may read that
    maps the memfd `label` (/proc/PID/maps) or holds it open (/proc/PID/fd)."""
    needle = "/memfd:" + label + " "
    users = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        mapped = False
        try:
            with open(f"/proc/{pid}/maps") as f:
                mapped = any(needle in line + " " for line in f)
        except OSError:  # gone, or another user's
            pass
        held = bool(memfd_fds(pid, label))
        if mapped or held:
            users[pid] = (mapped, held)
    return users


def maps_dev_shm(pid):
    """The /dev/shm files `pid` maps."""
    with open(f"/proc/{pid}/maps") as f:
        return [line.split()[-1] for line in f if "/dev/shm/" in line]


def zkfarm_shm_entries():
    return {e for e in os.listdir("/dev/shm") if e.startswith("zkfarm-")}


def wait_for(what, cond, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class ArenaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        become_subreaper()

    def setUp(self):
        self.farms = []
        self.tmp = tempfile.mkdtemp(prefix="zkfarm-arena-")

    def tearDown(self):
        for f in self.farms:
            f.close()
        subprocess.run(["rm", "-rf", self.tmp])

    def farm(self, *extra, env=None, state=None):
        f = Farm("--arena-mib", str(ARENA_MIB), *extra, env=env, state=state)
        self.farms.append(f)
        return f

    def verify(self, out, n):
        ok, text = snarkjs_verify([(os.path.join(FIX, "chain.vkey.json"), f"{out}/{k}.public.json", f"{out}/{k}.proof.json")
                                   for k in range(n)])
        self.assertTrue(ok, text)

    def check_attached(self, farm, label):
        """Every live worker maps the memfd and holds no descriptor of it; only
        zkfarmd holds one; nobody of the farm maps anything in /dev/shm."""
        st = farm.status()
        users = memfd_users(label)
        self.assertEqual(users.get(farm.proc.pid), (True, True), f"zkfarmd maps and holds the arena: {users}")
        for w in st["workers"]:
            if w["pid"] and w["state"] in ("idle", "busy"):
                self.assertEqual(users.get(w["pid"]), (True, False),
                                 f"{w['id']} maps the arena and closed its descriptor: {users}")
        for pid in [farm.proc.pid] + [w["pid"] for w in st["workers"] if w["pid"]]:
            self.assertEqual(maps_dev_shm(pid), [], f"pid {pid} maps a named segment")
        return st

    def test_sigkill_of_zkfarmd_gives_the_arena_memory_back_without_a_restart(self):
        before_entries = zkfarm_shm_entries()
        farm = self.farm("--synth-workers", "1", env={"ZKFARM_FAULT": "slow_ms:300"})
        label = "zkfarm-arena-" + state_hash(farm.state)
        st = farm.status()
        arena = st["arena"]
        self.assertEqual(arena["kind"], "memfd")
        self.assertEqual(arena["name"], label)
        self.assertEqual(arena["bytes"], ARENA_MIB * MIB)
        self.assertEqual((arena["used"], arena["free"], arena["slots"]), (0, ARENA_MIB * MIB, 0))
        code, table, _ = ctl(farm.state, "status")
        self.assertIn(f"Arena:       memfd {label}: 0.0 MiB used of {ARENA_MIB}.0 MiB", table)
        # Reserved in full at start: the memfd's pages are allocated, not a sparse file.
        allocated = memfd_allocated_bytes(farm.proc.pid, label)
        self.assertGreaterEqual(allocated, ARENA_MIB * MIB, f"the arena memfd has {allocated} bytes allocated")
        self.assertIn(f"arena memfd:{label} ({ARENA_MIB} MiB)", farm.output())

        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(6)])
        self.assertEqual(code, 0, err)
        wait_for("a partition in flight", lambda: farm.status()["arena"]["slots"] > 0, 30)
        st = self.check_attached(farm, label)
        # Nothing else can open it by name: a worker started by hand with its label finds no segment.
        p = subprocess.run([os.path.join(BIN, "zkfarm-synth"), "--endpoint", "ipc://" + os.path.join(self.tmp, "x.sock"),
                            "--arena", label], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn(f"cannot attach shared memory /dev/shm/{label}", p.stderr)
        self.assertFalse(os.path.exists("/dev/shm/zkfarm-" + state_hash(farm.state)))

        # SIGKILL zkfarmd with its workers running (a partition in a slot).
        workers = [w["pid"] for w in st["workers"] if w["pid"]]
        self.assertGreaterEqual(len(workers), 2)
        farm.proc.send_signal(signal.SIGKILL)
        farm.proc.wait()
        # The workers die of their death signal; nobody restarts anything.
        self.assertTrue(reap_until_gone(workers, 5.0), "a worker outlived its supervisor by 5 s")
        for pid in workers:
            self.assertFalse(pid_alive(pid))
        # Nobody maps or holds the memfd: the kernel has freed its pages (a memfd has no name to keep it).
        self.assertEqual(memfd_users(label), {}, "a process still maps or holds the arena")
        self.assertFalse(os.path.exists("/dev/shm/zkfarm-" + state_hash(farm.state)))
        self.assertFalse(os.path.exists("/dev/shm/" + label))
        self.assertEqual(zkfarm_shm_entries() - before_entries, set(), "the farm left a /dev/shm/zkfarm-* entry")

        # The journal still has the job: the next instance proves it (its own, new arena).
        farm2 = self.farm("--synth-workers", "1", state=farm.state)
        self.assertNotIn("removed a stale arena", farm2.output(), "a memfd arena leaves nothing to remove")
        self.assertEqual(ctl(farm2.state, "wait", job, "--timeout", "120", check=False)[0], 0, farm2.output())
        self.verify(out, 6)
        farm2.stop_and_check(self)
        self.assertEqual(memfd_users(label), {}, "the stopped instance's arena is gone")
        self.assertIn(f"arena memfd:{label} is freed as zkfarmd exits", farm2.output())

    def test_stale_named_segment_of_an_older_version_is_removed_at_start(self):
        state = os.path.join(self.tmp, "state")
        os.makedirs(state, mode=0o700)
        stale = "/dev/shm/zkfarm-" + state_hash(state)
        with open(stale, "wb") as f:  # what a SIGKILLed zkfarmd of an older version left
            f.truncate(1 << 20)
        self.addCleanup(lambda: os.path.exists(stale) and os.unlink(stale))
        farm = self.farm("--synth-workers", "1", state=state)
        self.assertFalse(os.path.exists(stale))
        self.assertIn(f"removed a stale arena {stale} left by an earlier instance", farm.output())
        farm.stop_and_check(self)

    def test_killed_gpu_worker_and_rolling_restart_attach_the_same_arena_and_prove(self):
        farm = self.farm("--synth-workers", "1", env={"ZKFARM_FAULT": "slow_ms:150"})
        label = farm.status()["arena"]["name"]
        code, job, err, out = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(8)])
        self.assertEqual(code, 0, err)
        gpu = wait_for("the GPU worker busy", lambda: next(
            (w for w in farm.status()["workers"] if w["id"] == "gpu-0" and w["state"] == "busy"), None), 60)
        os.kill(gpu["pid"], signal.SIGKILL)
        new = wait_for("a replacement GPU worker", lambda: next(
            (w for w in farm.status()["workers"]
             if w["id"] == "gpu-0" and w["pid"] not in (0, gpu["pid"]) and w["state"] in ("idle", "busy")), None), 60)
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "120", check=False)[0], 0, farm.output())
        self.verify(out, 8)
        self.check_attached(farm, label)
        self.assertIn(new["pid"], memfd_users(label))

        # Rolling restart of every worker: each replacement gets the memfd as fd 3.
        old = {w["id"]: w["pid"] for w in farm.status()["workers"]}
        ctl(farm.state, "restart", "all")

        def restarted():
            st = farm.status()
            done = st["rolling"] is None or (st["rolling"]["current"] is None and st["rolling"]["queued"] == 0)
            fresh = all(w["pid"] and w["pid"] != old[w["id"]] and w["state"] == "idle" for w in st["workers"])
            return st if done and fresh else None
        st = wait_for("the rolling restart", restarted, 120)
        self.assertFalse(st["rolling"] and st["rolling"].get("error"), json.dumps(st["rolling"]))
        self.check_attached(farm, label)
        for pid in old.values():
            self.assertNotIn(pid, memfd_users(label), "a retired worker still maps the arena")
        code, job2, err, out2 = farm.submit(os.path.join(FIX, "chain.zkey"), [chain_wtns(k) for k in range(3)])
        self.assertEqual(code, 0, err)
        self.assertEqual(ctl(farm.state, "wait", job2, "--timeout", "120", check=False)[0], 0, farm.output())
        self.verify(out2, 3)
        farm.stop_and_check(self)
        self.assertEqual(memfd_users(label), {})

    def test_arena_larger_than_the_memory_is_refused_at_start(self):
        state = os.path.join(self.tmp, "big")
        p = subprocess.run([os.path.join(BIN, "zkfarmd"), "--state-dir", state, "--arena-mib", str(1 << 30)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        text = p.stdout + p.stderr
        self.assertIn(f"cannot reserve {(1 << 50) + 4096} bytes for the arena memfd:zkfarm-arena-", text)
        self.assertIn("lower arena_mib", text)
        # What the refused start could leave behind is a named segment (a memfd dies with the process).
        # Shmem of /proc/meminfo is not asked here: it is the whole machine's, and the tests running
        # beside this one (ctest -j) move it by hundreds of MiB.
        self.assertFalse(os.path.exists("/dev/shm/zkfarm-" + state_hash(state)))


if __name__ == "__main__":
    unittest.main()
