"""Several zkfarmd hosts on one PostgreSQL queue (docs/cluster.md), with real
processes: a PostgreSQL server of the test's own (pg_cluster.py), three hosts
(three state dirs on this machine sharing one shared dir), 30 jobs of the
chain fixture submitted across them; one host is SIGKILLed while it holds
leases, PostgreSQL is restarted once mid-run; every proof is checked by
snarkjs and counted: one per partition. A second test freezes a host past its
lease (a host cut off) and checks that what it proves then is dropped. A
third adds a circuit on one host and runs its jobs of inputs on another, which
fetches the generator build from the shared dir by its hashes (and refuses a
tampered one).

Run by ctest (tests/cluster/CMakeLists.txt) with ZKFARM_BIN, ZKFARM_SOURCE_DIR
and ZKFARM_SHARED_FIXTURES in the environment.
"""
import glob
import hashlib
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

from pg_cluster import PgCluster

BIN = os.environ["ZKFARM_BIN"]
SRC = os.environ["ZKFARM_SOURCE_DIR"]
FIX = os.environ["ZKFARM_SHARED_FIXTURES"]
LEASE_S = 5


def ctl(state, *args, check=True, timeout=120):
    p = subprocess.run([os.path.join(BIN, "zkfarmctl"), "--state-dir", state, *args], capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"zkfarmctl {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def psql(url, query):
    p = subprocess.run(["psql", "-X", "-A", "-t", "-d", url, "-c", query], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"psql {query}: {p.stderr}")
    return p.stdout.strip()


def snarkjs_verify(triples):
    args = [x for t in triples for x in t]
    p = subprocess.run(["node", os.path.join(SRC, "tests", "snarkjs_verify.cjs"), *args], capture_output=True,
                       text=True, timeout=600)
    return p.returncode == 0 and p.stdout.count("OK ") == len(triples), p.stdout[-2000:] + p.stderr[-2000:]


class Host:
    """One zkfarmd of the cluster."""

    def __init__(self, root, name, url, shared, env=None):
        self.name = name
        self.state = os.path.join(root, name)
        os.makedirs(self.state, exist_ok=True)
        self.config = os.path.join(root, name + ".toml")
        with open(self.config, "w") as f:
            f.write(f'queue_url = "{url}"\nshared_dir = "{shared}"\nhost_id = "{name}"\nlease_seconds = {LEASE_S}\n'
                    'claim_poll_ms = 500\nsynth_workers = 1\nbackend = "cpu"\ngpu_devices = "none"\n'
                    'gpu_threads = 1\ndrain_timeout_ms = 60000\n')
        os.chmod(self.config, 0o600)  # it holds the queue's password
        self.out = open(os.path.join(root, name + ".out"), "a")
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([os.path.join(BIN, "zkfarmd"), "--state-dir", self.state, "--config", self.config],
                                     stdout=self.out, stderr=subprocess.STDOUT, env=e, start_new_session=True)
        ctl(self.state, "ready", "--wait", "--timeout", "60")

    def status(self):
        return json.loads(ctl(self.state, "status", "--json").stdout)

    def log(self):
        with open(os.path.join(self.state, "zkfarmd.log")) as f:
            return f.read()

    def kill(self):
        """SIGKILL to zkfarmd and its workers (its process group), as a host that dies would."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.out.close()

    def stop(self):
        if self.proc.poll() is None:
            ctl(self.state, "stop", "--wait", check=False, timeout=120)
            self.proc.wait(timeout=60)
        self.out.close()


def wait_for(what, pred, timeout=300, step=0.2):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


def stored_lines(hosts):
    """(job, partition) of every 'proof stored in the queue' line of every host's log."""
    out = []
    for h in hosts:
        out += [(int(a), int(b)) for a, b in re.findall(r"job (\d+) partition (\d+): proof stored in the queue",
                                                        h.log())]
    return out


class ClusterTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="zkfarm-cluster-")
        os.chmod(self.root, 0o755)
        self.pg = PgCluster(os.path.join(self.root, "pg")).start()
        self.url = self.pg.url
        self.shared = os.path.join(self.root, "shared")
        os.makedirs(self.shared, mode=0o700)
        self.hosts = []

    def tearDown(self):
        for h in self.hosts:
            try:
                if h.proc.poll() is None:
                    h.kill()
            except Exception:
                pass
        self.pg.stop()

    def check_results(self, host, ids, k_of, wtns_of):
        """Results written by `zkfarmctl result` on `host`, verified by snarkjs, public.json as snarkjs's."""
        triples = []
        for job in ids:
            out = os.path.join(self.root, f"out-{job}")
            ctl(host.state, "result", str(job), "--out", out)
            for k in range(k_of[job]):
                n = wtns_of[job][k]
                with open(os.path.join(out, f"{k}.public.json")) as f, \
                        open(os.path.join(FIX, f"chain.{n}.public.json")) as g:
                    self.assertEqual(json.load(f), json.load(g), f"job {job} partition {k}")
                triples.append((os.path.join(FIX, "chain.vkey.json"), os.path.join(out, f"{k}.public.json"),
                                os.path.join(out, f"{k}.proof.json")))
        ok, out = snarkjs_verify(triples)
        self.assertTrue(ok, out)
        return len(triples)

    def test_three_hosts_a_sigkill_and_a_database_restart_lose_nothing_and_prove_each_partition_once(self):
        # h1 proves slowly, so it surely holds leases when it is killed; h2
        # somewhat, so that the restart of PostgreSQL falls mid-run.
        self.hosts = [Host(self.root, "h0", self.url, self.shared),
                      Host(self.root, "h1", self.url, self.shared, env={"ZKFARM_FAULT": "slow_ms:1500"}),
                      Host(self.root, "h2", self.url, self.shared, env={"ZKFARM_FAULT": "slow_ms:150"})]
        ids, k_of, wtns_of = [], {}, {}
        for i in range(30):
            host = self.hosts[i % 3]
            k = 1 + i % 4
            ws = [(i + j) % 10 for j in range(k)]
            out = os.path.join(self.root, f"submit-out-{i}")
            args = ["submit", "--zkey", os.path.join(FIX, "chain.zkey"), "--out", out]
            for n in ws:
                args += ["--wtns", os.path.join(FIX, f"chain.{n}.wtns")]
            job = int(ctl(host.state, *args).stdout.split()[0])
            ids.append(job)
            k_of[job], wtns_of[job] = k, ws
        total = sum(k_of.values())
        self.assertEqual(len(set(ids)), 30, "job ids are the queue's, unique across hosts")

        # Every host shows every job.
        wait_for("every host to mirror the 30 jobs",
                 lambda: all(len(json.loads(ctl(h.state, "jobs", "--json", "--limit", "100").stdout)) == 30
                             for h in self.hosts), timeout=60)

        # SIGKILL h1 while it holds leases.
        h1 = self.hosts[1]
        wait_for("h1 to hold leases", lambda: h1.status()["cluster"]["held_here"] > 0, timeout=120)
        held = int(psql(self.url, "SELECT count(*) FROM zkfarm_partitions WHERE state = 'leased' AND lease_host = 'h1'"))
        self.assertGreater(held, 0)
        h1.kill()
        killed_at = time.time()

        # PostgreSQL restarted once while the others work; meanwhile status
        # says the queue is unreachable and submits are refused.
        wait_for("more proofs", lambda: len(stored_lines(self.hosts)) >= 8, timeout=300)
        self.pg._run(os.path.join(self.pg.bin, "pg_ctl"), "-D", self.pg.data, "-m", "fast", "-w", "stop")
        h0 = self.hosts[0]
        seen = wait_for("h0 to report the queue unreachable",
                        lambda: (lambda s: s if not s["cluster"]["reachable"] else None)(h0.status()), timeout=60)
        self.assertEqual(seen["intake"], "refusing")
        self.assertIn("unreachable", seen["intake_fault"])
        refused = ctl(h0.state, "submit", "--zkey", os.path.join(FIX, "chain.zkey"), "--out",
                      os.path.join(self.root, "refused"), "--wtns", os.path.join(FIX, "chain.0.wtns"), check=False)
        self.assertNotEqual(refused.returncode, 0)
        # The outage lasts until h2, still proving, has met it too.
        wait_for("h2 to report the queue unreachable", lambda: not self.hosts[2].status()["cluster"]["reachable"],
                 timeout=60)
        self.pg._start()
        wait_for("h0 to reach the queue again", lambda: h0.status()["cluster"]["reachable"], timeout=120)

        # Everything ends done; h1's partitions were proved by the others after its leases expired.
        for job in ids:
            ctl(self.hosts[2].state, "wait", str(job), "--timeout", "600", timeout=700)
        self.assertGreaterEqual(time.time() - killed_at, LEASE_S - 1)
        self.assertEqual(psql(self.url, "SELECT count(*) FROM zkfarm_jobs WHERE state = 'done'"), "30")
        self.assertEqual(int(psql(self.url, "SELECT count(*) FROM zkfarm_proofs")), total)
        self.assertEqual(psql(self.url, "SELECT count(*) FROM (SELECT job_id, idx FROM zkfarm_proofs "
                                        "GROUP BY 1, 2 HAVING count(*) > 1) d"), "0")
        retaken = int(psql(self.url, "SELECT count(*) FROM zkfarm_partitions WHERE attempts >= 2"))
        self.assertGreaterEqual(retaken, held, "h1's partitions were claimed again")
        self.assertEqual(psql(self.url, "SELECT count(*) FROM zkfarm_proofs WHERE host = 'h1' AND proved_ms > "
                                        f"{int(killed_at * 1000)}"), "0")
        # Exactly one host stored each partition's proof (the logs agree with the table).
        lines = stored_lines(self.hosts)
        self.assertEqual(len(lines), total, "one 'stored' line per partition over all hosts")
        self.assertEqual(len(set(lines)), total)
        # Any host writes any job's results; each verifies.
        self.assertEqual(self.check_results(self.hosts[2], ids, k_of, wtns_of), total)
        # A host's stop hands back what it holds; the survivors stop cleanly.
        for h in (self.hosts[0], self.hosts[2]):
            h.stop()
            self.assertEqual(h.proc.returncode, 0)
        self.assertEqual(psql(self.url, "SELECT string_agg(host_id || '=' || state, ',' ORDER BY host_id) "
                                        "FROM zkfarm_hosts"), "h0=stopped,h1=running,h2=stopped")

    def test_a_host_cut_off_past_its_lease_has_its_late_proofs_dropped(self):
        a = Host(self.root, "a", self.url, self.shared, env={"ZKFARM_FAULT": "slow_ms:3000"})
        self.hosts = [a]
        args = ["submit", "--zkey", os.path.join(FIX, "chain.zkey"), "--out", os.path.join(self.root, "o")]
        for n in range(2):
            args += ["--wtns", os.path.join(FIX, f"chain.{n}.wtns")]
        job = int(ctl(a.state, *args).stdout.split()[0])
        wait_for("a to start proving", lambda: a.status()["partitions"]["synthesizing"] +
                 a.status()["partitions"]["proving"] > 0, timeout=60)
        # Frozen (as if cut off): no renewals; its workers go on computing.
        os.kill(a.proc.pid, signal.SIGSTOP)
        try:
            # b takes a's partitions over once their leases (LEASE_S) expire unrenewed.
            b = Host(self.root, "b", self.url, self.shared)
            self.hosts.append(b)
            ctl(b.state, "wait", str(job), "--timeout", "300", timeout=400)
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        # a wakes up with answers for leases that are gone: dropped, logged.
        wait_for("a to drop its late work", lambda: re.search(r"lease \d+ dropped|proof dropped|not stored", a.log()),
                 timeout=60)
        self.assertEqual(psql(self.url, "SELECT count(*) FROM zkfarm_proofs"), "2")
        self.assertEqual(psql(self.url, "SELECT string_agg(DISTINCT host, ',') FROM zkfarm_proofs"), "b")
        self.assertNotIn("proof stored in the queue", a.log())
        self.check_results(b, [job], {job: 2}, {job: [0, 1]})
        for h in (a, b):
            h.stop()

    def test_a_shared_dir_that_is_not_the_queues_is_refused_before_anything_is_written(self):
        a = Host(self.root, "a", self.url, self.shared)
        self.hosts = [a]
        with open(os.path.join(self.shared, ".zkfarm-queue")) as f:
            queue_id = f.read().strip()
        # An empty mount point (the shared file system not mounted there), then another queue's folder.
        for name, marker in (("unmounted", None), ("other", "0123456789abcdef0123456789abcdef")):
            folder = os.path.join(self.root, name)
            os.makedirs(folder, mode=0o700)
            if marker:
                with open(os.path.join(folder, ".zkfarm-queue"), "w") as f:
                    f.write(marker + "\n")
            config = os.path.join(self.root, name + ".toml")
            with open(config, "w") as f:
                f.write(f'queue_url = "{self.url}"\nshared_dir = "{folder}"\nhost_id = "{name}"\nbackend = "cpu"\n'
                        'gpu_devices = "none"\nsynth_workers = 1\n')
            os.chmod(config, 0o600)
            state = os.path.join(self.root, name + "-state")
            os.makedirs(state)
            p = subprocess.run([os.path.join(BIN, "zkfarmd"), "--state-dir", state, "--config", config],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 1, p.stderr)
            if marker:
                self.assertIn(f"belongs to another queue", p.stderr)
                self.assertIn(queue_id, p.stderr)
            else:
                self.assertIn("has no .zkfarm-queue of this queue", p.stderr)
                self.assertEqual(os.listdir(folder), [], "nothing written into an empty mount point")
            self.assertEqual(psql(self.url, f"SELECT count(*) FROM zkfarm_hosts WHERE host_id = '{name}'"), "0",
                             "a refused start leaves no host row")
        # The same host_id as a live host, from another state dir: refused; a keeps its row.
        config = os.path.join(self.root, "twin.toml")
        with open(config, "w") as f:
            f.write(f'queue_url = "{self.url}"\nshared_dir = "{self.shared}"\nhost_id = "a"\nbackend = "cpu"\n'
                    'gpu_devices = "none"\nsynth_workers = 1\n')
        os.chmod(config, 0o600)
        os.makedirs(os.path.join(self.root, "twin-state"))
        p = subprocess.run([os.path.join(BIN, "zkfarmd"), "--state-dir", os.path.join(self.root, "twin-state"),
                            "--config", config], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("host_id 'a' is in use", p.stderr)
        self.assertEqual(psql(self.url, "SELECT pid FROM zkfarm_hosts WHERE host_id = 'a'"), str(a.proc.pid))
        a.stop()

    def test_a_circuit_added_on_one_host_runs_its_jobs_of_inputs_on_another(self):
        # poseidon3 compiled by circom2 (--c: a native generator, its .dat and
        # its witness graph all travel), its key by zkfarm-testkey.
        work = os.path.join(self.root, "circuit")
        os.makedirs(work)
        node = os.path.join(SRC, "node_modules")
        subprocess.run(["node", os.path.join(node, "circom2", "cli.js"),
                        os.path.join("tests", "witgen", "circuits", "poseidon3.circom"), "--r1cs", "--c", "-o", work,
                        "-l", "node_modules"], cwd=SRC, check=True, capture_output=True, timeout=600)
        subprocess.run([os.path.join(BIN, "zkfarm-testkey"), "--r1cs", os.path.join(work, "poseidon3.r1cs"), "--out",
                        os.path.join(work, "poseidon3"), "--seed", "7"], check=True, capture_output=True, timeout=600)
        inputs = []
        for k, values in enumerate((["1", "2", "3"], [42, "0x1f", "-5"])):
            inputs.append(os.path.join(work, f"in{k}.json"))
            with open(inputs[-1], "w") as f:
                json.dump({"in": values}, f)
        a = Host(self.root, "a", self.url, self.shared)
        self.hosts = [a]
        ctl(a.state, "circuit", "add", "hash", "--zkey", os.path.join(work, "poseidon3.zkey"), "--c",
            os.path.join(work, "poseidon3_cpp"), timeout=900)
        a_list = json.loads(ctl(a.state, "circuit", "list", "--json").stdout)
        a.stop()
        a_graphs = glob.glob(os.path.join(a.state, "circuits", "*", "graph"))
        self.assertEqual(len(a_graphs), 1, "the native build has a witness graph")
        # b never built it: it sees the circuit in the queue, and fetches the
        # build from the shared dir by its hashes when it claims a partition.
        b = Host(self.root, "b", self.url, self.shared)
        self.hosts.append(b)
        listed = wait_for("b to see the circuit", lambda: json.loads(ctl(b.state, "circuit", "list", "--json").stdout),
                          timeout=30)
        self.assertEqual([c["name"] for c in listed], ["hash"])
        out = os.path.join(self.root, "out-hash")
        job = ctl(b.state, "submit", "--circuit", "hash", "--input", *inputs, "--out", out).stdout.split()[0]
        ctl(b.state, "wait", job, "--timeout", "300", timeout=400)
        ok, text = snarkjs_verify([(os.path.join(work, "poseidon3.vkey.json"), f"{out}/{i}.public.json",
                                    f"{out}/{i}.proof.json") for i in range(2)])
        self.assertTrue(ok, text)
        built = os.path.join(b.state, "circuits")
        copies = [os.path.join(built, d, "generator") for d in os.listdir(built)]
        self.assertEqual(len(copies), 1)
        with open(copies[0], "rb") as f:
            self.assertIn(hashlib.sha256(f.read()).hexdigest(), os.listdir(os.path.join(self.shared, "generators")))
        self.assertEqual(psql(self.url, "SELECT count(*) FROM zkfarm_proofs WHERE host = 'b'"), "2")
        # The graph came with it, checked by its hash, and `auto` chooses as on a.
        b_graphs = glob.glob(os.path.join(built, "*", "graph"))
        self.assertEqual(len(b_graphs), 1, "the witness graph travels with the generator")
        with open(a_graphs[0], "rb") as fa, open(b_graphs[0], "rb") as fb:
            self.assertEqual(fa.read(), fb.read())
        self.assertEqual(json.loads(ctl(b.state, "circuit", "list", "--json").stdout)[0]["witness"],
                         a_list[0]["witness"])
        # A build on the shared dir that was changed: its hash no longer
        # matches, so a host refuses it (the job fails naming the file).
        gen = [f for f in os.listdir(os.path.join(self.shared, "generators")) if not f.startswith("incoming")]
        self.assertTrue(gen)
        b.stop()
        for f in gen:
            path = os.path.join(self.shared, "generators", f)
            os.chmod(path, 0o700)
            with open(path, "ab") as w:
                w.write(b"tampered")
        c = Host(self.root, "c", self.url, self.shared)
        self.hosts.append(c)
        wait_for("c to see the circuit", lambda: json.loads(ctl(c.state, "circuit", "list", "--json").stdout),
                 timeout=30)
        job = ctl(c.state, "submit", "--circuit", "hash", "--input", inputs[0], "--out",
                  os.path.join(self.root, "out-bad")).stdout.split()[0]
        p = ctl(c.state, "wait", job, "--timeout", "300", check=False, timeout=400)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("SHA-256", p.stderr)
        self.assertIn(os.path.join(self.shared, "generators") + "/", p.stderr, "the error names the tampered file")
        c.stop()


if __name__ == "__main__":
    unittest.main()
