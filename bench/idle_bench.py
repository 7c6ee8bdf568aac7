#!/usr/bin/env python3
"""What an idle zkfarmd costs with many retained jobs, against an empty one, in one run.

    idle_bench.py --bin build/bin --zkey KEY --wtns W [--jobs 5400] [--seconds 30]

Issue 31 (item 6) measured 1.8 % of a core at 5,400 retained jobs against
0.2 % with none: each loop tick walked every job. This bench proves one real
job, copies its rows in the journal (the farm stopped) until JOBS jobs are
retained, then starts zkfarmd on that state and on an empty one, lets each sit
idle for SECONDS and reads the CPU time zkfarmd used (utime + stime of
/proc/PID/stat; its workers are other processes and not counted). Prints the
two figures in % of one core and their ratio.
"""
import argparse
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


class Farm:
    def __init__(self, bin_dir, state):
        self.ctl = [os.path.join(bin_dir, "zkfarmctl"), "--state-dir", state]
        self.log = open(state + ".log", "a")
        self.proc = subprocess.Popen([os.path.join(bin_dir, "zkfarmd"), "--state-dir", state, "--synth-workers", "1",
                                      "--backend", "cpu", "--arena-mib", "64"],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        for _ in range(600):
            if subprocess.run(self.ctl + ["status"], capture_output=True).returncode == 0:
                return
            time.sleep(0.1)
        raise SystemExit(f"zkfarmd on {state} did not answer; see {state}.log")

    def stop(self):
        subprocess.run(self.ctl + ["stop", "--wait"], capture_output=True, timeout=120)
        self.proc.wait(timeout=120)


def retain(state, jobs):
    """Copies the one job in STATE's journal until JOBS done jobs are retained."""
    db = sqlite3.connect(os.path.join(state, "journal.sqlite"))
    try:
        cols = "priority, zkey, out, slot_bytes, n_public, state, error, submitted_ms, started_ms, finished_ms"
        job, *row = db.execute(f"SELECT id, {cols} FROM jobs").fetchone()
        part = db.execute("SELECT wtns, public_json FROM partitions WHERE job = ?", (job,)).fetchone()
        proof = db.execute("SELECT proof, proved_ms, synth_ms, prove_ms FROM proofs WHERE job = ?", (job,)).fetchone()
        meta = db.execute("SELECT owner_uid, owner_gid, zkey_source, zkey_sha256 FROM job_meta WHERE job = ?",
                          (job,)).fetchone()
        now = int(time.time() * 1000)
        with db:
            for i in range(jobs - 1):
                r = list(row)
                r[7], r[8], r[9] = now - 60000 + i, now - 60000 + i, now - 30000 + i
                new = db.execute(f"INSERT INTO jobs ({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", r).lastrowid
                db.execute("INSERT INTO partitions (job, idx, wtns, public_json) VALUES (?, 0, ?, ?)", (new, *part))
                db.execute("INSERT INTO proofs (job, idx, proof, proved_ms, synth_ms, prove_ms) VALUES (?, 0, ?, ?, ?, ?)",
                           (new, *proof))
                db.execute("INSERT INTO job_meta (job, owner_uid, owner_gid, zkey_source, zkey_sha256) "
                           "VALUES (?, ?, ?, ?, ?)", (new, *meta))
    finally:
        db.close()


def idle_share(bin_dir, state, seconds):
    farm = Farm(bin_dir, state)
    try:
        time.sleep(3)  # start-up work (journal replay, workers' hello) is not idling
        c0, t0 = cpu_seconds(farm.proc.pid), time.monotonic()
        time.sleep(seconds)
        c1, t1 = cpu_seconds(farm.proc.pid), time.monotonic()
        return 100.0 * (c1 - c0) / (t1 - t0)
    finally:
        farm.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--zkey", required=True)
    ap.add_argument("--wtns", required=True)
    ap.add_argument("--jobs", type=int, default=5400)
    ap.add_argument("--seconds", type=float, default=30)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="zkfarm-idle-")
    try:
        full, empty = os.path.join(work, "full"), os.path.join(work, "empty")
        farm = Farm(a.bin, full)
        job = subprocess.run(farm.ctl + ["submit", "--zkey", os.path.abspath(a.zkey), "--wtns",
                                         os.path.abspath(a.wtns), "--out", os.path.join(work, "out")],
                             check=True, capture_output=True, text=True).stdout.strip()
        subprocess.run(farm.ctl + ["wait", job], check=True, capture_output=True, timeout=300)
        farm.stop()
        retain(full, a.jobs)
        base = idle_share(a.bin, empty, a.seconds)
        many = idle_share(a.bin, full, a.seconds)
        print(f"idle zkfarmd, {a.seconds:.0f} s each: empty {base:.2f} % of a core, "
              f"{a.jobs} retained jobs {many:.2f} %, ratio {many / base if base > 0 else float('inf'):.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
