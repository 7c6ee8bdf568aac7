#!/usr/bin/env python3
"""zkfarm-api under load: 50 concurrent clients × 10 small jobs (issue 16's bar).

    api_bench.py --bin build/bin --fixtures tests/fixtures/shared [--clients 50] [--jobs 10] [--synth-workers N]

Starts zkfarmd (CPU backend) and zkfarm-api with TLS (a throwaway CA made with
openssl), one tenant. Baseline first, in the same run: a status reader alone
against the idle farm (GET /v1/jobs/ID, keep-alive, every 20 ms). Then the
load: `--clients` processes, each a requests session that submits `--jobs`
one-partition jobs of the `tiny` circuit and long-polls each to its end, while
the same reader keeps reading. Prints the reader's p50/p99 in both phases,
their ratio, the load's wall time and throughput, and whether every job ended
done. Exit 1 if a job did not end done or the loaded p99 is over --bar-ms (100).
"""
import argparse
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import requests

CA = None


def session(token, ca):
    s = requests.Session()
    s.headers["Authorization"] = "Bearer " + token
    s.request = _with_verify(s.request, ca)
    return s


def _with_verify(request, ca):
    def call(method, url, **kw):
        kw.setdefault("verify", ca)  # REQUESTS_CA_BUNDLE would override Session.verify
        return request(method, url, **kw)
    return call


def client(args):
    url, token, ca, zkey, wtns, jobs, i = args
    s = session(token, ca)
    mine = []
    for k in range(jobs):
        r = s.post(url + "/v1/jobs", json={"zkey": zkey, "witnesses": [wtns[(i + k) % len(wtns)]]})
        r.raise_for_status()
        mine.append(r.json()["job"])
    states = []
    for j in mine:
        while j["state"] not in ("done", "failed", "cancelled"):
            j = s.get(f"{url}/v1/jobs/{j['id']}",
                      params={"wait_ms": 20000, "seen_state": j["state"], "seen_done": j["done"]}).json()["job"]
        states.append(j["state"])
    return states


def reader(url, token, ca, job, stop, out):
    s = session(token, ca)
    while not stop.is_set():
        t = time.perf_counter()
        r = s.get(f"{url}/v1/jobs/{job}")
        out.append(time.perf_counter() - t)
        assert r.status_code == 200, r.text
        time.sleep(0.02)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))] * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--synth-workers", type=int, default=1)
    ap.add_argument("--baseline-s", type=float, default=5)
    ap.add_argument("--bar-ms", type=float, default=100)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="zkfarm-api-bench-")
    procs = []
    try:
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        q = dict(capture_output=True, check=True)
        subprocess.run(["openssl", "req", "-x509", *ec, "-keyout", f"{work}/ca.key", "-out", f"{work}/ca.pem",
                        "-days", "1", "-subj", "/CN=bench CA"], **q)
        subprocess.run(["openssl", "req", *ec, "-keyout", f"{work}/s.key", "-out", f"{work}/s.csr", "-subj", "/CN=localhost"], **q)
        with open(f"{work}/ext", "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        subprocess.run(["openssl", "x509", "-req", "-in", f"{work}/s.csr", "-CA", f"{work}/ca.pem", "-CAkey",
                        f"{work}/ca.key", "-CAcreateserial", "-out", f"{work}/s.pem", "-days", "1", "-extfile", f"{work}/ext"], **q)
        ca = f"{work}/ca.pem"
        state = f"{work}/state"
        log = open(f"{work}/log", "w")
        procs.append(subprocess.Popen([f"{a.bin}/zkfarmd", "--state-dir", state, "--synth-workers", str(a.synth_workers),
                                       "--backend", "cpu"], stdout=log, stderr=log))
        for _ in range(600):
            if subprocess.run([f"{a.bin}/zkfarmctl", "--state-dir", state, "ready"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        api = subprocess.Popen([f"{a.bin}/zkfarm-api", "--state-dir", state, "--listen", "127.0.0.1:0",
                                "--tls-cert", f"{work}/s.pem", "--tls-key", f"{work}/s.key"],
                               stdout=subprocess.PIPE, stderr=log, text=True)
        procs.append(api)
        url = api.stdout.readline().split()[-1]
        token = subprocess.run([f"{a.bin}/zkfarmctl", "--state-dir", state, "token", "add", "bench", "--role", "submit"],
                               capture_output=True, text=True, check=True).stdout.strip()
        s = session(token, ca)
        up = lambda p: s.post(url + "/v1/uploads", data=open(p, "rb")).json()["upload"]["id"]  # noqa: E731
        zkey = up(os.path.join(a.fixtures, "tiny.zkey"))
        wtns = [up(os.path.join(a.fixtures, f"tiny.{k}.wtns")) for k in range(2)]
        first = s.post(url + "/v1/jobs", json={"zkey": zkey, "witnesses": wtns[:1]}).json()["job"]["id"]

        idle, loaded = [], []
        stop = threading.Event()
        t = threading.Thread(target=reader, args=(url, token, ca, first, stop, idle))
        t.start()
        time.sleep(a.baseline_s)
        stop.set()
        t.join()

        stop = threading.Event()
        t = threading.Thread(target=reader, args=(url, token, ca, first, stop, loaded))
        t.start()
        start = time.perf_counter()
        with mp.get_context("spawn").Pool(a.clients) as pool:
            states = [x for xs in pool.map(client, [(url, token, ca, zkey, wtns, a.jobs, i) for i in range(a.clients)])
                      for x in xs]
        wall = time.perf_counter() - start
        stop.set()
        t.join()
        n = a.clients * a.jobs
        ok = states.count("done") == n
        print(f"zkfarm-api: {a.clients} clients x {a.jobs} jobs (tiny, CPU backend, {a.synth_workers} synthesis "
              f"worker(s), {os.cpu_count()} CPUs)")
        print(f"  jobs done: {states.count('done')}/{n} in {wall:.1f} s ({n / wall:.1f} jobs/s)")
        print(f"  status reads, idle farm (baseline): n={len(idle)} p50 {pct(idle, .5):.1f} ms p99 {pct(idle, .99):.1f} ms")
        print(f"  status reads, under the load:       n={len(loaded)} p50 {pct(loaded, .5):.1f} ms "
              f"p99 {pct(loaded, .99):.1f} ms ({pct(loaded, .99) / pct(idle, .99):.1f}x baseline; bar {a.bar_ms:.0f} ms)")
        return 0 if ok and pct(loaded, .99) <= a.bar_ms else 1
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
