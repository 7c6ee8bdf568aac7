"""The GPU worker's queue (issue 12) with real processes on the CPU backend:
gpu_queue_depth partitions handed to the GPU worker at once; when it is
SIGKILLed holding them, each is proved from its slot by the replacement (no
second synthesis) exactly once; a cancel withdraws partitions queued at the
worker; proofs verify with snarkjs; proving goes on while output writes are slow.

Run by ctest like test_farm.py (ZKFARM_BIN, ZKFARM_SOURCE_DIR, ZKFARM_SHARED_FIXTURES).
"""
import os
import signal
import subprocess
import tempfile
import time
import unittest

from test_farm import FIX, Farm, chain_wtns, ctl, snarkjs_verify
from test_journal import become_subreaper, journal_counts, journaled_proofs
from test_lifecycle import write_config

CHAIN_ZKEY = os.path.join(FIX, "chain.zkey")


class GpuQueueTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        become_subreaper()

    def setUp(self):
        self.farms = []
        self.tmp = tempfile.mkdtemp(prefix="zkfarm-gpuq-")

    def tearDown(self):
        for f in self.farms:
            f.close()
        subprocess.run(["rm", "-rf", self.tmp])

    def farm(self, *extra, env=None):
        f = Farm(*extra, env=env)
        self.farms.append(f)
        return f

    def gpu(self, farm):
        return [w for w in farm.status()["workers"] if w["kind"] == "gpu"][0]

    def wait_for(self, what, cond, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = cond()
            if value:
                return value
            time.sleep(0.02)
        self.fail("timed out waiting for " + what)

    def job(self, farm, job):
        return {str(j["id"]): j for j in farm.status()["jobs"]}[job]

    def verify(self, out, n):
        ok, text = snarkjs_verify([(os.path.join(FIX, "chain.vkey.json"), f"{out}/{k}.public.json",
                                    f"{out}/{k}.proof.json") for k in range(n)])
        self.assertTrue(ok, text)

    def test_killed_gpu_worker_holding_a_queue_its_partitions_are_proved_once_from_their_slots(self):
        cfg = write_config(self.tmp, flap_max_crashes=100, restart_backoff_ms=100, gpu_queue_depth=3)
        # Every worker sleeps 300 ms a partition: the GPU worker's queue fills.
        farm = self.farm("--synth-workers", "2", "--config", cfg, env={"ZKFARM_FAULT": "slow_ms:300"})
        code, job, err, out = farm.submit(CHAIN_ZKEY, [chain_wtns(k) for k in range(10)])
        self.assertEqual(code, 0, err)
        kills = 0
        for _ in range(2):
            gpu = self.wait_for("the GPU worker to hold 3 partitions",
                                lambda: (lambda g: g if g["held"] >= 3 and g["pid"] else None)(self.gpu(farm)))
            os.kill(gpu["pid"], signal.SIGKILL)
            kills += 1
            self.wait_for("a new GPU worker", lambda: self.gpu(farm)["pid"] not in (0, gpu["pid"]))
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "120", check=False)[0], 0, farm.output())
        log = farm.output()
        # Each kill sent the 3 partitions it held back to the GPU queue, in their slots.
        self.assertGreaterEqual(log.count("back to the GPU queue, its witness kept in slot"), 3 * kills, log)
        self.assertNotIn("back to the queue (", log)
        # One synthesis a partition, one journaled proof a partition, all verify.
        self.assertEqual(self.job(farm, job)["syntheses"], 10)
        per_partition = journaled_proofs(farm.state, job, 10)
        self.assertEqual(sorted(i for j, i, c in per_partition if str(j) == job), list(range(10)))
        self.assertTrue(all(c == 1 for _, _, c in per_partition))
        self.verify(out, 10)
        farm.stop_and_check(self)

    def test_cancel_withdraws_partitions_queued_at_the_gpu_worker(self):
        cfg = write_config(self.tmp, gpu_queue_depth=4)
        farm = self.farm("--synth-workers", "2", "--config", cfg, env={"ZKFARM_FAULT": "slow_ms:400"})
        code, job, err, _ = farm.submit(CHAIN_ZKEY, [chain_wtns(k) for k in range(10)])
        self.assertEqual(code, 0, err)
        self.wait_for("the GPU worker to hold 3 partitions", lambda: self.gpu(farm)["held"] >= 3)
        self.assertEqual(ctl(farm.state, "cancel", job, check=False)[0], 0)
        # The waiting ones are answered at once, the computing one at its next
        # stage boundary; then the worker holds nothing and every slot is free.
        self.wait_for("the GPU worker to give everything back",
                      lambda: self.gpu(farm)["held"] == 0 and farm.status()["arena"]["slots"] == 0)
        self.assertEqual(self.job(farm, job)["state"], "cancelled")
        self.assertIn("before it started", farm.output())
        # The farm goes on: a new job is proved and verifies.
        code, job2, err, out2 = farm.submit(CHAIN_ZKEY, [chain_wtns(k) for k in range(3)])
        self.assertEqual(code, 0, err)
        self.assertEqual(ctl(farm.state, "wait", job2, "--timeout", "120", check=False)[0], 0, farm.output())
        self.verify(out2, 3)
        farm.stop_and_check(self)

    def test_lanes_compute_several_partitions_at_once_and_a_killed_worker_loses_none(self):
        # gpu_lanes (issue 36): the GPU worker computes up to 3 partitions at
        # once (slowed to 1.5 s each, so they overlap); then it is killed
        # while computing several: every partition is proved exactly once
        # (one journaled proof each) and all verify.
        cfg = write_config(self.tmp, gpu_lanes=3, gpu_queue_depth=4, restart_backoff_ms=100)
        farm = self.farm("--synth-workers", "2", "--config", cfg, env={"ZKFARM_FAULT": "slow_ms:1500"})
        code, job, err, out = farm.submit(CHAIN_ZKEY, [chain_wtns(k) for k in range(9)])
        self.assertEqual(code, 0, err)
        # Held by the worker, each lane in its 1.5 s slowed compute: killed now.
        self.wait_for("the GPU worker to hold 3 or more partitions", lambda: self.gpu(farm)["held"] >= 3)
        os.kill(self.gpu(farm)["pid"], signal.SIGKILL)
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "240", check=False)[0], 0, farm.output())
        per_partition = journaled_proofs(farm.state, job, 9)
        self.assertEqual(sorted(i for j, i, c in per_partition if str(j) == job), list(range(9)))
        self.assertTrue(all(c == 1 for _, _, c in per_partition))
        self.verify(out, 9)
        farm.stop_and_check(self)

    def test_a_device_fault_in_one_lane_fails_that_partition_alone_and_the_worker_goes_on(self):
        # Issue 49 item 3 (sp1 #2950: one failed device allocation killed every
        # proof in flight): the GPU worker proves 3 partitions at once (each
        # slowed to 1 s, so they overlap) and its third prove step's device
        # allocation is refused (the test double's StepFault, as a
        # cudaErrorMemoryAllocation of a device still usable). That partition
        # alone is answered with device_fault and proved again; the worker
        # keeps its process and its other lanes; every partition is proved
        # exactly once and verifies.
        cfg = write_config(self.tmp, gpu_lanes=3, gpu_queue_depth=4, restart_backoff_ms=100)
        farm = self.farm("--synth-workers", "2", "--config", cfg,
                         env={"ZKFARM_FAULT": "slow_ms:1000", "ZKFARM_TEST_STEP_FAULT_AFTER": "2"})
        pid = self.gpu(farm)["pid"]
        code, job, err, out = farm.submit(CHAIN_ZKEY, [chain_wtns(k) for k in range(9)])
        self.assertEqual(code, 0, err)
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "240", check=False)[0], 0, farm.output())
        per_partition = journaled_proofs(farm.state, job, 9)
        self.assertEqual(sorted(i for j, i, c in per_partition if str(j) == job), list(range(9)))
        self.assertTrue(all(c == 1 for _, _, c in per_partition))
        self.verify(out, 9)
        log = farm.output()
        self.assertEqual(log.count("the partition is proved again, the other steps go on"), 1, log[-6000:])  # the worker's
        self.assertRegex(log, rf"job {job} partition \d: proved again after a device fault on gpu-0 \(attempt 1 of "
                              r"max_attempts 3 ended in a fault\)")
        gpu = self.gpu(farm)
        self.assertEqual((gpu["pid"], gpu["restarts"]), (pid, 0), "the worker was not restarted")
        self.assertNotIn("exiting so that the partition is proved again", log)
        farm.stop_and_check(self)

    def test_proving_goes_on_while_output_writes_are_slow(self):
        # Measured on the H200 machine (2^22): the loop journaled each proof and
        # wrote its files itself, five fsyncs a proof; on a disk busy with
        # witness copies it stalled ~200 ms every few proofs and the GPU worker
        # ran dry. Now the writes are the journal and delivery threads': with
        # every output write taking 2.5 s, all 8 proofs are journaled while most
        # files are still to be written (proving them in the loop's way would
        # have written 7 by then), and the job is done only once they are.
        farm = self.farm("--synth-workers", "2", env={"ZKFARM_TEST_DELIVERY_DELAY_MS": "2500"})
        code, job, err, out = farm.submit(CHAIN_ZKEY, [chain_wtns(k) for k in range(8)])
        self.assertEqual(code, 0, err)
        self.wait_for("every proof journaled",
                      lambda: sum(1 for j, _, _ in journal_counts(farm.state)[0] if str(j) == job) == 8, 120)
        self.assertEqual(self.job(farm, job)["state"], "running", "done before its files are written")
        written = [f for f in os.listdir(out) if f.endswith(".proof.json")] if os.path.isdir(out) else []
        self.assertLessEqual(len(written), 4, f"{len(written)} of 8 files written before the last proof: proving waited")
        self.assertEqual(ctl(farm.state, "wait", job, "--timeout", "120", check=False)[0], 0, farm.output())
        self.verify(out, 8)
        farm.stop_and_check(self)


if __name__ == "__main__":
    unittest.main()
