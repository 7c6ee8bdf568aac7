"""End-to-end tests of zkfarmd's HTTP listener against the attacks any local
user could mount on it: idle connections beyond the descriptor limit,
slowloris, pipelining, a second listener on the port, reading /status,
flooding the log with bad requests. Each attack must now fail safe: zkfarmd
lives, /healthz answers, descriptors and log lines stay bounded.

Run by ctest (tests/CMakeLists.txt, farm_e2e) with ZKFARM_BIN,
ZKFARM_SOURCE_DIR and ZKFARM_SHARED_FIXTURES in the environment, like
test_farm.py, whose Farm helper starts and stops the instances.
"""
import errno
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from test_farm import BIN, FIX, Farm, ctl

CAP = 64  # http_max_connections' default (docs/configuration.md)


def free_port():
    """A port of 127.0.0.1 nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout=10):
    """(status, body) of GET http://127.0.0.1:port/path, 4xx and 5xx included."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def read_responses(sock, n, timeout=10):
    """Reads n HTTP responses (Content-Length framing) from sock: [(status, body)]."""
    sock.settimeout(timeout)
    data, out = b"", []
    while len(out) < n:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            head = data[:end].decode()
            length = int(re.search(r"Content-Length: (\d+)", head).group(1))
            if len(data) >= end + 4 + length:
                out.append((int(head.split(" ")[1]), data[end + 4:end + 4 + length].decode()))
                data = data[end + 4 + length:]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return out


class HttpTest(unittest.TestCase):
    def setUp(self):
        self.farms = []
        self.tmp = tempfile.mkdtemp(prefix="zkfarm-http-")
        self.nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.sockets = []

    def tearDown(self):
        for s in self.sockets:
            s.close()
        for f in self.farms:
            f.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, self.nofile)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def farm(self, port, config=""):
        """A farm with one synthesis worker serving HTTP on 127.0.0.1:port; `config`: extra TOML lines."""
        args = ["--synth-workers", "1", "--http", f"127.0.0.1:{port}"]
        if config:
            path = os.path.join(self.tmp, "zkfarmd-%d.toml" % len(self.farms))
            with open(path, "w") as f:
                f.write(config)
            args += ["--config", path]
        f = Farm(*args)
        self.farms.append(f)
        return f

    def connect(self, port):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sockets.append(s)
        return s

    def test_idle_connections_beyond_the_descriptor_limit_neither_exhaust_nor_crash(self):
        _, hard = self.nofile
        limit = 1024  # zkfarmd's limit for this test: the default of most init systems
        conns = 3000
        if hard != resource.RLIM_INFINITY and hard < conns + 200:
            self.skipTest(f"RLIMIT_NOFILE hard limit {hard} leaves no room for {conns} client sockets")
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard))
        port = free_port()
        farm = self.farm(port)
        pid = farm.proc.pid
        # zkfarmd raises its soft limit to the hard one at start: lower both
        # from outside (lowering needs no privilege), so that the attack below
        # is more connections than zkfarmd could ever hold.
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))
        with open(f"/proc/{pid}/limits") as f:
            self.assertRegex(f.read(), rf"Max open files\s+{limit}\s+{limit}\s")
        self.assertEqual(http_get(port, "/healthz")[0], 200)
        baseline = fd_count(pid)
        peak = baseline
        connected = failed = 0
        give_up = time.monotonic() + 120  # only stops a hung attack (a listener that stopped accepting)
        for i in range(conns):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                self.sockets.append(s)
                connected += 1
            except OSError:
                failed += 1  # the backlog was full for a moment: the attack goes on with the rest
            if i % 250 == 0:
                peak = max(peak, fd_count(pid))
            if failed > 20 or time.monotonic() > give_up or farm.proc.poll() is not None:
                break
        self.assertIsNone(farm.proc.poll(), "zkfarmd died: " + farm.output()[-2000:])
        self.assertGreater(connected, limit, "the attack must exceed zkfarmd's descriptor limit")
        for path in ("/healthz", "/readyz"):
            self.assertEqual(http_get(path=path, port=port), (200, "ok\n" if path == "/healthz" else "ready\n"))
        self.assertIsNone(farm.proc.poll(), "zkfarmd died: " + farm.output())
        # The control socket (ZeroMQ) still accepts: the descriptors it needs are there.
        self.assertEqual(ctl(farm.state, "status", "--json")[0], 0)
        peak = max(peak, fd_count(pid))
        # At most CAP client connections, plus the one being accepted and
        # zkfarmctl's connection: a few over the baseline.
        self.assertLessEqual(peak, baseline + CAP + 8, f"baseline {baseline}, peak {peak}")
        for s in self.sockets:
            s.close()
        self.sockets = []
        farm.stop_and_check(self)

    def test_slowloris_cannot_starve_the_health_probe(self):
        port = free_port()
        farm = self.farm(port)
        attackers = [None] * (2 * CAP)

        def trickle(i, line):
            # One more header line on attacker i; a dropped one comes back.
            for _ in range(2):
                try:
                    if attackers[i] is None:
                        attackers[i] = self.connect(port)
                        attackers[i].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                    attackers[i].sendall(line)
                    return
                except OSError:
                    attackers[i] = None

        for i in range(len(attackers)):
            trickle(i, b"X-A: 0\r\n")
        for r in range(8):
            for i in range(len(attackers)):
                trickle(i, b"X-B: %d\r\n" % r)
            self.assertEqual(http_get(port, "/healthz"), (200, "ok\n"), f"probe {r}")
            time.sleep(0.2)
        self.assertIsNone(farm.proc.poll())
        self.assertLessEqual(fd_count(farm.proc.pid), 200, "descriptors stay near the cap")
        farm.stop_and_check(self)

    def test_pipelined_requests_get_one_response_each_in_order(self):
        port = free_port()
        farm = self.farm(port)
        s = self.connect(port)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(read_responses(s, 3), [(200, "ok\n"), (200, "ready\n"),
                                                (404, "not found; try /status, /metrics, /healthz, /readyz\n")])
        # The connection stays open for more.
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(read_responses(s, 1), [(200, "ok\n")])
        farm.stop_and_check(self)

    def test_second_instance_on_the_same_address_exits_1_naming_it(self):
        port = free_port()
        farm = self.farm(port)
        address = f"127.0.0.1:{port}"
        other = os.path.join(self.tmp, "other-state")
        p = subprocess.run([os.path.join(BIN, "zkfarmd"), "--state-dir", other, "--synth-workers", "1", "--http", address],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"cannot listen on {address}: address already in use", p.stderr)
        # It stopped before making its sockets (or an arena, or workers).
        self.assertFalse(os.path.exists(os.path.join(other, "control.sock")))
        # Nobody can share the port, even asking for SO_REUSEPORT.
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            with self.assertRaises(OSError) as e:
                s.bind(("127.0.0.1", port))
            self.assertEqual(e.exception.errno, errno.EADDRINUSE)
        self.assertEqual(http_get(port, "/healthz"), (200, "ok\n"))
        farm.stop_and_check(self)

    def test_status_shows_counts_and_no_paths_or_pids_by_default(self):
        port = free_port()
        farm = self.farm(port)
        code, job, err, out = farm.submit(os.path.join(FIX, "tiny.zkey"), [os.path.join(FIX, "tiny.0.wtns")])
        self.assertEqual(code, 0, err)
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "60", check=False)[0], 0)
        full = farm.status()
        deadline = time.time() + 30
        while True:  # the snapshot is rendered at most every 200 ms
            code, body = http_get(port, "/status")
            st = json.loads(body) if code == 200 else {}
            if st.get("jobs") == {"done": 1} or time.time() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(code, 200, body)
        self.assertEqual(set(st), {"state", "intake", "in_flight", "queue", "workers", "arena", "jobs"})
        self.assertEqual(st["jobs"], {"done": 1})
        self.assertEqual(st["state"], "running")
        self.assertEqual(st["intake"], "open")
        by_kind = {}
        for w in full["workers"]:
            by_kind.setdefault(w["kind"], {}).setdefault(w["state"], 0)
            by_kind[w["kind"]][w["state"]] += 1
        self.assertEqual(st["workers"], by_kind)
        self.assertEqual(st["arena"]["bytes"], full["arena"]["bytes"])
        self.assertEqual(st["queue"], {"synth": 0, "prove": 0})
        self.assertNotIn("/", body, "no path of any kind")
        self.assertNotIn("pid", body)
        self.assertNotIn(str(farm.proc.pid), body)
        for w in full["workers"]:
            self.assertNotIn(str(w["pid"]), body)
        self.assertNotIn(full["arena"]["name"], body)
        farm.stop_and_check(self)

    def test_status_detail_serves_the_full_status(self):
        port = free_port()
        farm = self.farm(port, "http_status_detail = true\n")
        code, body = http_get(port, "/status")
        self.assertEqual(code, 200, body)
        st = json.loads(body)
        self.assertEqual(set(st), set(farm.status()))
        self.assertEqual(st["pid"], farm.proc.pid)
        self.assertEqual(st["state_dir"], farm.state)
        farm.stop_and_check(self)

    def test_a_flood_of_malformed_requests_is_logged_in_a_bounded_number_of_lines(self):
        port = free_port()
        farm = self.farm(port)
        n = 1000
        t0 = time.monotonic()
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"\x00\x01 not http\r\n\r\n")
            self.assertTrue(s.recv(64).startswith(b"HTTP/1.1 400 "))
            s.close()
        log_path = os.path.join(farm.state, "zkfarmd.log")
        single = summarized = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(log_path, errors="replace") as f:
                text = f.read()
            single = len(re.findall(r"http: bad request from 127\.0\.0\.1:\d+: malformed request", text))
            summarized = sum(int(m) for m in re.findall(r"http: (\d+) similar lines suppressed \(client faults\)", text))
            if single + summarized >= n:
                break
            time.sleep(0.1)  # the last summary comes when its one-second window closes
        elapsed = time.monotonic() - t0
        self.assertEqual(single + summarized, n, "each bad request logged once or counted once")
        self.assertLessEqual(single, 5 * (elapsed + 1), f"{single} lines in {elapsed:.1f} s: more than 5 a second")
        self.assertGreater(summarized, 0)
        with open(log_path, errors="replace") as f:
            self.assertNotIn("not http", f.read(), "the client's bytes are never logged")
        self.assertEqual(http_get(port, "/healthz")[0], 200)
        farm.stop_and_check(self)


if __name__ == "__main__":
    unittest.main()
