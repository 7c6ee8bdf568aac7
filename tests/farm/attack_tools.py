"""Tools of the attack and fault tests (test_attacks.py, test_faults.py): the
unprivileged user "eve" and how to act as her, a witness that does not satisfy
its circuit, a hand-made ZeroMQ peer (ZMTP 3.0 and MessagePack, so that no
pyzmq is needed), and FarmCase, the base of those tests: farms of root whose
control_group eve is in, and folders eve can reach.
"""
import fcntl
import grp
import json
import os
import pwd
import socket
import struct
import subprocess
import tempfile
import time
import unittest

# wait_until: test_farm.py's, for the modules that take it from here.
from test_farm import BIN, FIX, Farm, chain_wtns, ctl, snarkjs_verify, wait_until  # noqa: F401
from test_journal import become_subreaper

EVE = "zkfarm-test-eve"           # the unprivileged attacker
CTL_GROUP = "zkfarm-test-ctl"     # control_group of the farms here; eve is a member
ADMIN_GROUP = "zkfarm-test-adm"   # admin_group of one farm; eve is a member
CRIT_GROUP = "zkfarm-test-crit"   # critical_group of one farm; eve is a member
CHAIN_ZKEY = os.path.join(FIX, "chain.zkey")
CHAIN_VKEY = os.path.join(FIX, "chain.vkey.json")
ARENA_MIB = "64"                  # the chain fixture needs far less; /dev/shm is shared with other tests

# --- users -------------------------------------------------------------------

class _UsersLock:
    """Serializes user and group changes between test processes that run at once
    (ctest -j runs the farm modules in parallel; useradd fails while another
    holds /etc/passwd's lock)."""

    def __enter__(self):
        self.f = open("/tmp/zkfarm-test-users.lock", "a")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def ensure_user(name):
    """The passwd entry of system user `name`, created (with its own group) if missing."""
    with _UsersLock():
        return _ensure_user(name)


def _ensure_user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        p = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell",
                            "/usr/sbin/nologin", name], capture_output=True, text=True)
        if p.returncode not in (0, 9):  # 9: made meanwhile by another test process
            raise AssertionError(f"useradd {name}: {p.stderr}")
        return pwd.getpwnam(name)


def ensure_group_member(group, user):
    """Creates `group` and `user` if missing and makes `user` a member (all
    idempotent): a test run alone has no earlier test to have made the user."""
    with _UsersLock():
        _ensure_user(user)
        subprocess.run(["groupadd", "--system", "-f", group], check=True, capture_output=True)
        if user not in grp.getgrnam(group).gr_mem:
            subprocess.run(["usermod", "-a", "-G", group, user], check=True, capture_output=True)


def run_as(user, cmd, timeout=120, **kw):
    """Runs `cmd` as `user` with exactly that user's groups (initgroups' list,
    not root's), in /, with a minimal environment."""
    pw = pwd.getpwnam(user)
    return subprocess.run(cmd, user=pw.pw_uid, group=pw.pw_gid, extra_groups=os.getgrouplist(user, pw.pw_gid),
                          cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": "/"}, capture_output=True, text=True,
                          timeout=timeout, **kw)


def ctl_as(user, state, *args, timeout=120):
    """zkfarmctl run as `user`; returns (exit code, stdout, stderr)."""
    p = run_as(user, [os.path.join(BIN, "zkfarmctl"), "--state-dir", state, *args], timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def write_config(path, **keys):
    with open(path, "w") as f:
        for k, v in keys.items():
            f.write(f"{k} = {json.dumps(v)}\n")
    return path


def script(path, body, mode=0o755):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, mode)
    return path


def verify_dir(test, out, n, vkey=CHAIN_VKEY):
    ok, text = snarkjs_verify([(vkey, f"{out}/{k}.public.json", f"{out}/{k}.proof.json") for k in range(n)])
    test.assertTrue(ok, text)


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


# --- a witness that does not satisfy its circuit ------------------------------

def sections(data, magic):
    """{type: (offset, size)} of a snarkjs binary file (zkey, wtns): magic, u32
    version, u32 count, then sections of u32 type, u64 size, bytes."""
    assert data[:4] == magic, f"not a {magic!r} file"
    n = struct.unpack_from("<I", data, 8)[0]
    out, pos = {}, 12
    for _ in range(n):
        typ, size = struct.unpack_from("<IQ", data, pos)
        out.setdefault(typ, (pos + 12, size))
        pos += 12 + size
    return out


def unsatisfying_witness(zkey, wtns, dst):
    """Writes to `dst` a copy of `wtns` with one private value changed: one
    whose C-section point in `zkey` is not infinity, so the proof depends on it
    (as tests/groth16/verify_test.cpp picks it). Formats: snarkjs's zkey (section 2:
    n8q, q, n8r, r, nVars, nPublic, …; section 8: the C points of the private
    signals) and wtns (section 1: n8, q, nWitness; section 2: the values)."""
    z = read(zkey)
    zs = sections(z, b"zkey")
    h = zs[2][0]
    n8q = struct.unpack_from("<I", z, h)[0]
    n8r = struct.unpack_from("<I", z, h + 4 + n8q)[0]
    n_vars, n_public = struct.unpack_from("<II", z, h + 8 + n8q + n8r)
    c_off = zs[8][0]
    target = 0
    for j in range(n_public + 1, n_vars):
        p = c_off + (j - n_public - 1) * 2 * n8q
        if any(z[p:p + 2 * n8q]):
            target = j
            break
    assert target, "no private signal with a C point"
    w = bytearray(read(wtns))
    ws = sections(bytes(w), b"wtns")
    n8 = struct.unpack_from("<I", w, ws[1][0])[0]
    off = ws[2][0] + target * n8
    was_zero = not any(w[off:off + n8])
    w[off:off + n8] = bytes(n8)
    if was_zero:
        w[off] = 1
    with open(dst, "wb") as f:
        f.write(w)
    return dst


# --- ZeroMQ's wire protocol, ZMTP 3.0 (rfc.zeromq.org/spec/23), NULL mechanism ---

def msgpack(obj):
    """MessagePack (github.com/msgpack/msgpack/blob/master/spec.md) of None,
    bool, int >= 0, str, bytes, list and dict: what the farm's messages use."""
    if obj is None:
        return b"\xc0"
    if obj is True or obj is False:
        return b"\xc3" if obj else b"\xc2"
    if isinstance(obj, int):
        if obj < 0x80:
            return bytes([obj])
        for tag, fmt, top in ((0xcc, ">B", 1 << 8), (0xcd, ">H", 1 << 16), (0xce, ">I", 1 << 32), (0xcf, ">Q", 1 << 64)):
            if obj < top:
                return bytes([tag]) + struct.pack(fmt, obj)
    if isinstance(obj, str):
        b = obj.encode()
        if len(b) < 32:
            return bytes([0xa0 | len(b)]) + b
        return (b"\xd9" + struct.pack(">B", len(b)) if len(b) < 256 else b"\xda" + struct.pack(">H", len(b))) + b
    if isinstance(obj, bytes):
        return (b"\xc4" + struct.pack(">B", len(obj)) if len(obj) < 256 else b"\xc5" + struct.pack(">H", len(obj))) + obj
    if isinstance(obj, list):
        head = bytes([0x90 | len(obj)]) if len(obj) < 16 else b"\xdc" + struct.pack(">H", len(obj))
        return head + b"".join(msgpack(x) for x in obj)
    if isinstance(obj, dict):
        head = bytes([0x80 | len(obj)]) if len(obj) < 16 else b"\xde" + struct.pack(">H", len(obj))
        return head + b"".join(msgpack(k) + msgpack(v) for k, v in obj.items())
    raise TypeError(type(obj))


def recv_exact(sock, n):
    """Exactly `n` bytes from `sock`; ConnectionError when the peer closes first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("peer closed the connection")
        buf += chunk
    return bytes(buf)


class Zmtp:
    """A ZeroMQ peer speaking ZMTP 3.0 by hand over a Unix socket (pyzmq is
    not a dependency): greeting, READY with Socket-Type (and Identity), then
    frames of flags (1 MORE, 2 LONG, 4 COMMAND), a 1- or 8-byte size, the body."""

    def __init__(self, path, socket_type, identity=b"", timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.sock.sendall(b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + b"\x00" + bytes(31))
        greeting = self._exact(64)
        assert greeting[0] == 0xff and greeting[9] == 0x7f and greeting[10] == 3, greeting[:12]
        props = self._prop(b"Socket-Type", socket_type)
        if identity:
            props += self._prop(b"Identity", identity)
        self._frame(b"\x05READY" + props, command=True)
        flags, body = self._read_frame()
        assert flags & 4 and body[1:6] == b"READY", (flags, body[:16])

    @staticmethod
    def _prop(name, value):
        return bytes([len(name)]) + name + struct.pack(">I", len(value)) + value

    def _exact(self, n):
        return recv_exact(self.sock, n)

    def _frame(self, body, more=False, command=False):
        flags = (1 if more else 0) | (4 if command else 0)
        if len(body) > 255:
            self.sock.sendall(bytes([flags | 2]) + struct.pack(">Q", len(body)) + body)
        else:
            self.sock.sendall(bytes([flags, len(body)]) + body)

    def _read_frame(self):
        flags = self._exact(1)[0]
        size = struct.unpack(">Q", self._exact(8))[0] if flags & 2 else self._exact(1)[0]
        return flags, self._exact(size)

    def send(self, *frames):
        for i, f in enumerate(frames):
            self._frame(f, more=i + 1 < len(frames))

    def recv(self):
        """One message: its frames (commands, such as PING, are skipped)."""
        out = []
        while True:
            flags, body = self._read_frame()
            if flags & 4:
                continue
            out.append(body)
            if not flags & 1:
                return out

    def request(self, body):
        """A request as REQ frames it (an empty delimiter, then the body)."""
        self.send(b"", body)

    def close(self):
        self.sock.close()


class Control:
    """A client of control.sock speaking its framing by hand (docs/protocol.md):
    each frame is a 4-byte big-endian length, then that many bytes (one
    MessagePack map)."""

    def __init__(self, path, timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)

    def _exact(self, n):
        return recv_exact(self.sock, n)

    def request(self, body):
        """Sends one frame holding `body` (bytes)."""
        self.sock.sendall(struct.pack(">I", len(body)) + body)

    def recv(self):
        """One reply frame's body."""
        return self._exact(struct.unpack(">I", self._exact(4))[0])

    def close(self):
        self.sock.close()


def vm_rss_kib(pid):
    """The resident memory of process `pid` (VmRSS of /proc/PID/status), KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


# --- the test base -------------------------------------------------------------

class FarmCase(unittest.TestCase):
    """Farms of root with eve in control_group; a temporary folder eve can enter."""

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root: creates a user and runs zkfarmd as root")
        become_subreaper()
        cls.eve = ensure_user(EVE)
        ensure_group_member(CTL_GROUP, EVE)

    def setUp(self):
        self.farms = []
        self.tmp = tempfile.mkdtemp(prefix="zkfarm-attack-")
        os.chmod(self.tmp, 0o711)  # eve may enter (not list) it; her own folders are inside

    def tearDown(self):
        for f in reversed(self.farms):  # a later farm may run on an earlier one's state dir
            f.close()
        subprocess.run(["rm", "-rf", self.tmp])

    def farm(self, *extra, config=None, env=None, state=None, wait=True):
        cfg = write_config(os.path.join(tempfile.mkdtemp(dir=self.tmp), "zkfarmd.toml"), control_group=CTL_GROUP,
                           **(config or {}))
        f = Farm("--config", cfg, "--arena-mib", ARENA_MIB, *extra, env=env, state=state, wait=wait)
        self.farms.append(f)
        os.chmod(f.dir, 0o711)  # the state dir inside is 0750 root:CTL_GROUP
        return f

    def eve_dir(self, name):
        """A folder of eve's (0700) in the test's temporary folder."""
        d = os.path.join(self.tmp, name)
        os.mkdir(d, 0o700)
        os.chown(d, self.eve.pw_uid, self.eve.pw_gid)
        return d

    def root_secret(self, name="secret"):
        """A root-only file (0600 in a 0700 folder of root's) and its bytes."""
        d = tempfile.mkdtemp(dir=self.tmp)
        path = os.path.join(d, name)
        content = b"ZKFARM-ROOT-SECRET-" + os.urandom(8).hex().encode() + b"\n"
        with open(path, "wb") as f:
            f.write(content * 64)
        os.chmod(path, 0o600)
        return path, content

    def eve_submit(self, farm, zkey, wtns, out, *extra):
        code, stdout, err = ctl_as(EVE, farm.state, "submit", "--zkey", zkey, "--wtns", *wtns, "--out", out, *extra)
        return code, stdout.strip(), err

    def wait_job(self, farm, job, who=None, timeout=180):
        args = ("wait", job, "-q", "--timeout", str(timeout))
        if who:
            return ctl_as(who, farm.state, *args, timeout=timeout + 60)
        return ctl(farm.state, *args, check=False, timeout=timeout + 60)

    def assert_still_proves(self, farm, k):
        """After an attack: a job of chain.K.wtns from root proves and snarkjs verifies it."""
        code, job, err, out = farm.submit(CHAIN_ZKEY, [chain_wtns(k)])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.wait_job(farm, job)[0], 0, farm.output())
        verify_dir(self, out, 1)

    def job(self, farm, job):
        for j in json.loads(ctl(farm.state, "jobs", "--json", "--limit", "1000")[1]):
            if str(j["id"]) == str(job):
                return j
        raise AssertionError(f"no job {job}")

    def wait_log(self, farm, text, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text in farm.output():
                return True
            time.sleep(0.05)
        return False
