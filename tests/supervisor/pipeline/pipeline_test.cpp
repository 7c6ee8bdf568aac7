// The pipeline (supervisor/pipeline/pipeline.hpp) as a part on its own,
// driven through the loop's event bus and fakes: a ledger in memory
// (tests/supervisor/fake_ledger.hpp) and a worker link that is only the
// `send` hook (frames are decoded and checked here). No process runs; the
// workers' states are reached through the model's events.
#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>
#include <filesystem>

#include "protocol/worker_messages.hpp"
#include "shm/arena.hpp"
#include "supervisor/pipeline/pipeline.hpp"
#include "supervisor/fake_ledger.hpp"

#include "supervisor/part_fixture.hpp"

namespace zkfarm::supervisor {
namespace {

struct PipelineFixture : ::testing::Test, fakes::WorkerGround {
  shm::Arena arena = shm::Arena::create_memfd("zkfarm-pipeline-test", 1 << 20);
  shm::SlotAllocator slots{1 << 20};
  Lifecycle lifecycle{cfg, log, workers, jobs, metrics, bus, [](const Worker&) {}};
  fakes::FakeLedger ledger;
  LoopInbox inbox;
  JournalLane journal{cfg, log, ledger, inbox, metrics, bus};
  /// Every frame the pipeline sent, by worker id, decoded. A deque: a test
  /// keeps pointers into earlier frames while more are sent.
  std::deque<std::pair<std::string, protocol::FromSupervisor>> sent;
  Pipeline pipeline{cfg, log, jobs, slots, arena, workers, lifecycle, metrics, journal, inbox, bus,
                    Pipeline::Hooks{.send = [this](const Worker& w, const std::string& frame) {
                                      sent.emplace_back(w.id, protocol::decode_from_supervisor(frame));
                                    },
                                    .circuit_of = nullptr}};
  size_t jobs_ended = 0;

  PipelineFixture()
      : WorkerGround("zkfarm-pipeline", [](Config& c) {
          c.synth_workers = 1;
          c.synth_batch = 1;  // one SYNTH per dispatch: each step of a partition is seen alone
        }) {
    bus.on<JobEnded>([this](const JobEnded&) { ++jobs_ended; });
    all_ready();
  }
  ~PipelineFixture() override {
    journal.stop();
  }

  uint64_t add_job(size_t parts) {
    Job j;
    j.zkey = "/farm/inputs/keys/k.zkey";
    j.slot_bytes = 4096;
    for (size_t k = 0; k < parts; ++k) {
      Partition p;
      p.wtns = "/farm/inputs/jobs/t/" + std::to_string(k) + ".wtns";
      j.parts.push_back(p);
    }
    return jobs.add(std::move(j));
  }
  Worker& worker(const std::string& id) { return *workers.find(id); }
  /// The WorkRef of the last frame sent to `id` (a SYNTH or a PROVE).
  protocol::WorkRef last_ref(const std::string& id) const {
    for (auto it = sent.rbegin(); it != sent.rend(); ++it) {
      if (it->first != id) continue;
      if (const auto* s = std::get_if<protocol::Synth>(&it->second)) return s->ref;
      if (const auto* p = std::get_if<protocol::Prove>(&it->second)) return p->ref;
    }
    ADD_FAILURE() << "nothing sent to " << id;
    return {};
  }
  void answer(const std::string& id, const protocol::WorkRef& ref, bool synth, protocol::WorkResult result = {}) {
    bus.emit(WorkerStarted{worker(id), protocol::Started{ref}});
    bus.emit(WorkerAnswered{worker(id), ref, result, synth});
  }
};

TEST_F(PipelineFixture, APartitionGoesFromTheQueueToSynthesisToTheGpuByTheWorkersAnswers) {
  const uint64_t a = add_job(1);
  pipeline.dispatch();
  ASSERT_EQ(sent.size(), 1u);
  const auto* synth = std::get_if<protocol::Synth>(&sent[0].second);
  ASSERT_NE(synth, nullptr) << "a SYNTH to the idle synthesis worker";
  EXPECT_EQ(sent[0].first, "synth-0");
  EXPECT_EQ(synth->ref.job, a);
  EXPECT_EQ(std::get<protocol::WitnessFile>(synth->witness).path, "/farm/inputs/jobs/t/0.wtns");
  EXPECT_EQ(synth->zkey, "/farm/inputs/keys/k.zkey");
  EXPECT_EQ(jobs.find({a, 0})->state, PartState::kSynthesizing);
  EXPECT_EQ(worker("synth-0").state, WorkerState::kBusy);
  EXPECT_TRUE(ledger.wait_until([&](fakes::FakeLedger& l) { return l.started().size() == 1; }))
      << "the job's start is journaled";

  answer("synth-0", synth->ref, true);
  EXPECT_EQ(jobs.find({a, 0})->state, PartState::kSynthesized);
  EXPECT_EQ(worker("synth-0").state, WorkerState::kIdle) << "its last partition answered";
  pipeline.dispatch();
  ASSERT_EQ(sent.size(), 2u);
  const auto* prove = std::get_if<protocol::Prove>(&sent[1].second);
  ASSERT_NE(prove, nullptr);
  EXPECT_EQ(sent[1].first, "gpu-0");
  EXPECT_EQ(prove->ref, synth->ref) << "proved in the slot it was synthesized in";
  EXPECT_EQ(jobs.find({a, 0})->state, PartState::kProving);
  EXPECT_EQ(worker("gpu-0").state, WorkerState::kBusy);
}

TEST_F(PipelineFixture, AStaleAnswerIsIgnoredAndADeadGpuWorkersPartitionIsProvedAgainInItsSlot) {
  const uint64_t a = add_job(1);
  pipeline.dispatch();
  answer("synth-0", last_ref("synth-0"), true);
  pipeline.dispatch();
  const protocol::WorkRef proving = last_ref("gpu-0");
  protocol::WorkRef stale = proving;
  stale.generation += 1;
  answer("gpu-0", stale, false, protocol::WorkResult{.ok = false, .error = "late"});
  EXPECT_EQ(jobs.find({a, 0})->state, PartState::kProving) << "an answer about another generation changes nothing";
  EXPECT_EQ(jobs.find(a)->state, JobState::kRunning);

  pipeline.worker_gone(worker("gpu-0"), /*crashed=*/true, "crashed");
  const Partition* p = jobs.find({a, 0});
  EXPECT_EQ(p->state, PartState::kSynthesized) << "the witness in its slot is intact";
  ASSERT_TRUE(p->slot.has_value());
  EXPECT_EQ(p->slot->id, proving.slot);
  EXPECT_GT(p->slot->generation, proving.generation) << "renewed: the dead worker's answer would be stale";
  EXPECT_EQ(p->faults, 1u);
  EXPECT_EQ(metrics.partitions_requeued_intact, 1u);
  // The worker is back (READY): the partition is proved again from that slot, no new synthesis.
  Worker& gpu = worker("gpu-0");
  gpu.assigned.clear();
  ASSERT_TRUE(gpu.state.on(WorkerEvent::kProcessGone));
  ASSERT_TRUE(gpu.state.on(WorkerEvent::kSpawned));
  ASSERT_TRUE(gpu.state.on(WorkerEvent::kReady));
  const size_t before = sent.size();
  pipeline.dispatch();
  ASSERT_EQ(sent.size(), before + 1);
  const auto* again = std::get_if<protocol::Prove>(&sent.back().second);
  ASSERT_NE(again, nullptr) << "a PROVE, not a SYNTH";
  EXPECT_EQ(again->ref.slot, proving.slot);
  EXPECT_EQ(again->ref.generation, p->slot->generation);
}

// Issue 49 item 3: a prove step that faulted on a device still usable
// (PROVE_DONE ok:false with device_fault) is the device's fault, not the
// partition's: it is proved again from its slot, the worker keeps its other
// work, and each such answer is an attempt; at max_attempts the job fails,
// naming the count and the last fault. Without device_fault the same answer
// fails the job at once, as before.
TEST_F(PipelineFixture, ADeviceFaultOfOneStepProvesThatPartitionAgainUntilMaxAttempts) {
  ASSERT_EQ(cfg.max_attempts, 3u);
  const uint64_t a = add_job(1);
  pipeline.dispatch();
  answer("synth-0", last_ref("synth-0"), true);
  for (unsigned attempt = 1; attempt <= 3; ++attempt) {
    pipeline.dispatch();
    const protocol::WorkRef proving = last_ref("gpu-0");
    ASSERT_EQ(jobs.find({a, 0})->state, PartState::kProving) << "attempt " << attempt;
    answer("gpu-0", proving, false,
           protocol::WorkResult::device_failure("CUDA error cudaErrorMemoryAllocation in cudaMalloc (attempt " +
                                                std::to_string(attempt) + ")"));
    EXPECT_EQ(jobs.find({a, 0})->faults, attempt);
    EXPECT_EQ(metrics.device_faults, attempt);
    if (attempt < 3) {
      const Partition* p = jobs.find({a, 0});
      EXPECT_EQ(p->state, PartState::kSynthesized) << "back to the GPU queue, its witness kept";
      ASSERT_TRUE(p->slot.has_value());
      EXPECT_EQ(p->slot->id, proving.slot);
      EXPECT_GT(p->slot->generation, proving.generation);
      EXPECT_EQ(jobs.find(a)->state, JobState::kRunning);
      EXPECT_EQ(worker("gpu-0").state, WorkerState::kIdle) << "the worker goes on";
    }
  }
  EXPECT_EQ(jobs.find(a)->state, JobState::kFailed);
  EXPECT_NE(jobs.find(a)->error.find("partition 0: 3 attempts ended in a fault (max_attempts 3); last: the prove "
                                     "step faulted on the device: CUDA error cudaErrorMemoryAllocation in cudaMalloc "
                                     "(attempt 3)"),
            std::string::npos)
      << jobs.find(a)->error;
  EXPECT_EQ(jobs_ended, 1u);

  const uint64_t b = add_job(1);  // the same answer without device_fault: the partition's own fault
  pipeline.dispatch();
  answer("synth-0", last_ref("synth-0"), true);
  pipeline.dispatch();
  answer("gpu-0", last_ref("gpu-0"), false, protocol::WorkResult::failure("bad.zkey: truncated"));
  EXPECT_EQ(jobs.find(b)->state, JobState::kFailed);
  EXPECT_EQ(jobs.find({b, 0})->faults, 0u);
}

TEST_F(PipelineFixture, AFailedSynthesisFailsItsJobOnceAndTheEndIsJournaled) {
  const uint64_t a = add_job(2);
  pipeline.dispatch();
  answer("synth-0", last_ref("synth-0"), true, protocol::WorkResult{.ok = false, .error = "0.wtns: truncated"});
  EXPECT_EQ(jobs.find(a)->state, JobState::kFailed);
  EXPECT_NE(jobs.find(a)->error.find("0.wtns: truncated"), std::string::npos) << jobs.find(a)->error;
  EXPECT_EQ(jobs.find({a, 1})->state, PartState::kFailed) << "the queued partition ends with its job";
  EXPECT_EQ(jobs_ended, 1u) << "one JobEnded event";
  EXPECT_TRUE(ledger.wait_until([&](fakes::FakeLedger& l) { return l.finished(a).has_value(); }));
  EXPECT_TRUE(ledger.wait_until([&](fakes::FakeLedger& l) { return l.finished(a)->first == JobState::kFailed; }));
  pipeline.dispatch();
  EXPECT_EQ(sent.size(), 1u) << "nothing of a failed job is dispatched";
}

TEST_F(PipelineFixture, NothingStartsWhileTheFarmDrains) {
  add_job(1);
  lifecycle.drain();
  pipeline.dispatch();
  EXPECT_TRUE(sent.empty());
}

}  // namespace
}  // namespace zkfarm::supervisor
