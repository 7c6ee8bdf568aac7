// The job table (supervisor/model/jobs.hpp) on its own: dispatch order, the
// live index, the transitions that carry a partition through the pipeline and
// back, a job's end, and pruning.
#include <gtest/gtest.h>

#include "supervisor/model/jobs.hpp"

namespace zkfarm::supervisor {
namespace {

Job make_job(Priority p, size_t parts) {
  Job j;
  j.priority = p;
  j.parts.resize(parts);
  return j;
}

TEST(JobTable, OrderIsPriorityThenOldestJobThenLowestPartition) {
  JobTable t;
  uint64_t a = t.add(make_job(Priority::kNormal, 3));
  uint64_t b = t.add(make_job(Priority::kNormal, 2));
  uint64_t c = t.add(make_job(Priority::kCritical, 2));
  uint64_t d = t.add(make_job(Priority::kLow, 1));
  std::vector<std::pair<uint64_t, uint32_t>> order;
  while (auto ref = t.next(PartState::kQueued)) {
    order.emplace_back(ref->job, ref->index);
    t.start_synthesis(*ref, shm::Slot{}, "synth-0", 0, 0);
  }
  std::vector<std::pair<uint64_t, uint32_t>> expect = {{c, 0}, {c, 1}, {a, 0}, {a, 1}, {a, 2}, {b, 0}, {b, 1}, {d, 0}};
  EXPECT_EQ(order, expect);
}

// Issue 31: every loop pass walked every retained job (1.8 % of a core idle
// at 5,400 jobs). next() and count() now walk the live ones only.
TEST(JobTable, AWalkMeetsOnlyLiveJobsHoweverManyEndedOnesAreRetained) {
  JobTable t;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 2000; ++i) ids.push_back(t.add(make_job(Priority::kNormal, 2)));
  for (size_t i = 0; i + 1 < ids.size(); ++i) t.cancel(ids[i], 5);
  Job ended = make_job(Priority::kCritical, 1);
  ended.id = 90000;
  ended.state = JobState::kDone;
  ended.parts[0].state = PartState::kDone;
  t.restore(ended);  // a retained finished job from the journal
  Job live = make_job(Priority::kLow, 1);
  live.id = 90001;
  t.restore(live);
  EXPECT_EQ(t.count(PartState::kQueued), 3u);  // the last added job's 2 and the restored live one
  EXPECT_EQ(t.live_index_size(), 2u) << "ended jobs left the walk when it met them";
  auto first = t.next(PartState::kQueued);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->job, ids.back()) << "normal before low";
  EXPECT_EQ(t.all().size(), 2002u) << "the ended jobs are still retained for status and result";
  t.cancel(ids.back(), 6);
  t.cancel(90001, 6);
  EXPECT_FALSE(t.next(PartState::kQueued).has_value());
  EXPECT_EQ(t.live_index_size(), 0u);
  EXPECT_EQ(t.count(PartState::kCancelled), 0u) << "count walks live jobs only, as documented";
}

TEST(JobTable, DoneWhenAllPartitionsAreProvedAndDeliveredAndCancelSkipsTheJob) {
  JobTable t;
  uint64_t a = t.add(make_job(Priority::kHigh, 2));
  uint64_t b = t.add(make_job(Priority::kNormal, 1));
  t.mark_done({a, 0}, 0);
  t.mark_done({a, 1}, 0);
  EXPECT_NE(t.find(a)->state, JobState::kDone) << "proved is not done: the files are not written yet";
  EXPECT_FALSE(t.mark_delivered({a, 1}, 0, 10));
  EXPECT_NE(t.find(a)->state, JobState::kDone);
  EXPECT_TRUE(t.mark_delivered({a, 0}, 0, 20));
  EXPECT_EQ(t.find(a)->state, JobState::kDone);
  EXPECT_EQ(t.find(a)->finished_ms, 20);
  t.mark_done({b, 0}, 0);
  t.cancel(b, 30);
  EXPECT_EQ(t.find(b)->state, JobState::kCancelled);
  EXPECT_FALSE(t.mark_delivered({b, 0}, 0, 40)) << "a delivery after the cancel must not make the job done";
  EXPECT_EQ(t.find(b)->state, JobState::kCancelled);
  EXPECT_FALSE(t.next(PartState::kQueued).has_value());
  EXPECT_EQ(t.find(b)->to_json()["state"], "cancelled");
}

TEST(JobTable, TransitionsCarryAPartitionThroughThePipelineAndBack) {
  JobTable t;
  const uint64_t a = t.add(make_job(Priority::kNormal, 2), /*now=*/100);
  EXPECT_EQ(t.find({a, 0})->queued_since_ms, 100);
  shm::Slot slot{};
  slot.id = 7;
  EXPECT_TRUE(t.start_synthesis({a, 0}, slot, "synth-0", 200, 5000)) << "the job's first start";
  EXPECT_FALSE(t.start_synthesis({a, 1}, slot, "synth-1", 210, 6000));
  EXPECT_EQ(t.find(a)->state, JobState::kRunning);
  EXPECT_EQ(t.find(a)->started_ms, 5000);
  t.worker_started({a, 0}, 250);
  EXPECT_EQ(t.find({a, 0})->queued_ms, 50);
  t.synthesized({a, 0}, 400);
  EXPECT_EQ(t.find({a, 0})->synth_ms, 150);
  EXPECT_EQ(t.find({a, 0})->state, PartState::kSynthesized);
  EXPECT_EQ(t.next(PartState::kSynthesized)->index, 0u);
  t.start_proving({a, 0}, "gpu-0", 500);
  EXPECT_EQ(t.find({a, 0})->worker, "gpu-0");
  // A dead GPU worker: back to the GPU queue in its slot, renewed.
  shm::Slot renewed = slot;
  renewed.generation = 2;
  t.reprove_in_slot({a, 0}, renewed, 600);
  EXPECT_EQ(t.find({a, 0})->state, PartState::kSynthesized);
  EXPECT_EQ(t.find({a, 0})->slot->generation, 2u);
  // A dead synthesis worker: back to the queue, its slot handed back to free.
  auto freed = t.back_to_queue({a, 1}, 700);
  ASSERT_TRUE(freed.has_value());
  EXPECT_EQ(freed->id, 7u);
  EXPECT_EQ(t.find({a, 1})->state, PartState::kQueued);
  EXPECT_EQ(t.find({a, 1})->queued_since_ms, 700);
  EXPECT_EQ(t.count_fault({a, 1}), 1u);
  EXPECT_EQ(t.count_fault({a, 1}), 2u);
  // Proved, verified, delivered: done.
  t.start_proving({a, 0}, "gpu-0", 800);
  t.proving_ended({a, 0}, 900);
  EXPECT_EQ(t.find({a, 0})->prove_ms, 100);
  t.mark_done({a, 0}, 0, std::string(256, 'p'));
  EXPECT_EQ(t.find({a, 0})->proof.size(), 256u);
  EXPECT_FALSE(t.find({a, 0})->slot.has_value());
  // The other partition's result cannot be written: the job ends failed with that error.
  t.start_synthesis({a, 1}, slot, "synth-0", 1000, 7000);
  t.synthesized({a, 1}, 1100);
  t.start_proving({a, 1}, "gpu-0", 1200);
  t.mark_done({a, 1}, 0);
  EXPECT_FALSE(t.mark_delivered({a, 1}, 0, 8000, "disk full"));
  EXPECT_TRUE(t.mark_delivered({a, 0}, 0, 9000));
  EXPECT_EQ(t.find(a)->state, JobState::kFailed);
  EXPECT_EQ(t.find(a)->error, "disk full");
  EXPECT_EQ(t.find(a)->finished_ms, 9000);
}

// Issue 49 item 4: the stage times `result --json` shows, from the
// transitions' monotonic times: each stage of the attempt that made the proof.
TEST(JobTable, TimingCountsEachStageOfTheAttemptThatMadeTheProof) {
  JobTable t;
  const uint64_t a = t.add(make_job(Priority::kNormal, 2), /*now=*/100);
  shm::Slot slot{};
  // A first attempt dies in synthesis; its waits do not count.
  t.start_synthesis({a, 0}, slot, "synth-0", 130, 0);
  t.back_to_queue({a, 0}, 170);
  t.start_synthesis({a, 0}, slot, "synth-0", 200, 0);  // 30 ms in the supervisor's queue
  t.worker_started({a, 0}, 250);                      // 50 ms in the worker's
  t.synthesized({a, 0}, 400);                         // witness: 150 ms
  t.start_proving({a, 0}, "gpu-0", 600);              // 200 ms waiting for a GPU worker
  // Its GPU worker dies (or the step faults) before an answer: no
  // proving_ended; the step's 1000 ms are not waiting.
  shm::Slot renewed = slot;
  renewed.generation = 1;
  t.reprove_in_slot({a, 0}, renewed, 1600);
  t.start_proving({a, 0}, "gpu-0", 1600);             // at once
  t.worker_started({a, 0}, 1650);                     // 50 ms in its queue
  t.proving_ended({a, 0}, 1900);                      // prove: 250 ms
  t.mark_done({a, 0}, 1960);                          // verify: 60 ms
  EXPECT_EQ(t.find({a, 0})->timing(), (PartitionTiming{150, 330, 250, 60, std::nullopt}))
      << "not delivered yet";
  t.mark_delivered({a, 0}, 2000, 5000);
  EXPECT_EQ(t.find({a, 0})->timing(), (PartitionTiming{150, 330, 250, 60, 40}));
  EXPECT_EQ(t.find({a, 0})->timing().to_json().dump(),
            R"({"delivery_ms":40,"prove_ms":250,"queue_ms":330,"verify_ms":60,"witness_ms":150})");
  // A failed write keeps no delivery time; nor does a job its client delivers.
  t.start_synthesis({a, 1}, slot, "synth-0", 2000, 0);
  t.synthesized({a, 1}, 2010);
  t.start_proving({a, 1}, "gpu-0", 2020);
  t.proving_ended({a, 1}, 2030);
  t.mark_done({a, 1}, 2040);
  t.mark_delivered({a, 1}, 2050, 5100, "disk full");
  EXPECT_FALSE(t.find({a, 1})->timing().delivery_ms.has_value());
  Job c = make_job(Priority::kNormal, 1);
  c.client_delivery = true;
  const uint64_t b = t.add(std::move(c), 0);
  t.start_synthesis({b, 0}, slot, "synth-0", 0, 0);
  t.synthesized({b, 0}, 10);
  t.start_proving({b, 0}, "gpu-0", 10);
  t.proving_ended({b, 0}, 20);
  t.mark_done({b, 0}, 30);
  EXPECT_TRUE(t.mark_delivered({b, 0}, 40, 6000));
  EXPECT_EQ(t.find({b, 0})->timing().to_json()["delivery_ms"], nullptr) << "the client writes the files";
}

TEST(JobTable, APartitionOfAnEndedJobTakesTheJobsEndInsteadOfTheQueue) {
  JobTable t;
  const uint64_t a = t.add(make_job(Priority::kNormal, 2));
  shm::Slot slot{};
  t.start_synthesis({a, 0}, slot, "synth-0", 0, 0);
  t.cancel(a, 10);
  EXPECT_EQ(t.find({a, 1})->state, PartState::kCancelled) << "queued partitions end with the job";
  EXPECT_EQ(t.find({a, 0})->state, PartState::kSynthesizing) << "in a worker's hands until it answers";
  EXPECT_TRUE(t.back_to_queue({a, 0}, 20).has_value());
  EXPECT_EQ(t.find({a, 0})->state, PartState::kCancelled);
  EXPECT_FALSE(t.next(PartState::kQueued).has_value());
}

TEST(JobTable, PruneForgetsOnlyOldFinishedJobs) {
  JobTable t;
  Job j;
  j.parts.resize(1);
  const uint64_t old_done = t.add(j), new_done = t.add(j), live = t.add(j);
  t.mark_done({old_done, 0}, 0);
  t.mark_done({new_done, 0}, 0);
  t.mark_delivered({old_done, 0}, 0, 1000);
  t.mark_delivered({new_done, 0}, 0, 5000);
  EXPECT_EQ(t.prune(2000), 1u);
  EXPECT_EQ(t.find(old_done), nullptr);
  EXPECT_NE(t.find(new_done), nullptr);
  EXPECT_NE(t.find(live), nullptr);
}


// A shared queue's transitions and their refusals (docs/cluster.md): a
// partition is held only when it is elsewhere in a live job; a lost lease
// leaves a partition in a worker's hands alone (the answer is then dropped)
// and sends one not in its hands elsewhere with its slot returned.
Job shared_row(uint64_t id, size_t parts, JobState state = JobState::kQueued) {
  Job row = make_job(Priority::kNormal, parts);
  row.id = id;
  row.shared = true;
  row.state = state;
  return row;
}

TEST(JobTable, HoldRefusesAnUnknownJobAnEndedJobAndAPartitionNotElsewhere) {
  JobTable t;
  t.mirror(shared_row(5, 2));
  ASSERT_EQ(t.find({5, 0})->state, PartState::kElsewhere);
  EXPECT_FALSE(t.hold({9, 0}, 11, 1000, "/w", "", "", "[]", {}, 0)) << "unknown job";
  EXPECT_FALSE(t.hold({5, 7}, 11, 1000, "/w", "", "", "[]", {}, 0)) << "no such partition";
  EXPECT_TRUE(t.hold({5, 0}, 11, 1000, "/w", "", "", "[]", {}, 0));
  EXPECT_EQ(t.find({5, 0})->state, PartState::kQueued);
  EXPECT_EQ(t.find({5, 0})->lease, 11u);
  EXPECT_FALSE(t.hold({5, 0}, 12, 1000, "/w", "", "", "[]", {}, 0)) << "held already: not elsewhere";
  EXPECT_EQ(t.find({5, 0})->lease, 11u) << "a refusal changes nothing";
  // The queue cancels the job: nothing of it can be held any more.
  t.mirror(shared_row(5, 2, JobState::kCancelled));
  EXPECT_TRUE(t.find(5)->terminal());
  EXPECT_FALSE(t.hold({5, 1}, 13, 1000, "/w", "", "", "[]", {}, 0)) << "ended job";
}

TEST(JobTable, ALostLeaseLeavesWorkInAWorkersHandsAndSendsTheRestElsewhere) {
  JobTable t;
  t.mirror(shared_row(5, 2));
  ASSERT_TRUE(t.hold({5, 0}, 11, 1000, "/w0", "", "", "[]", {}, 0));
  ASSERT_TRUE(t.hold({5, 1}, 12, 1000, "/w1", "", "", "[]", {}, 0));
  shm::Slot slot{};
  slot.id = 3;
  t.start_synthesis({5, 0}, slot, "synth-0", 10, 10);
  t.start_synthesis({5, 1}, slot, "synth-1", 10, 10);
  t.synthesized({5, 1}, 20);
  // In a worker's hands: keeps its slot and state, loses its lease (the answer is dropped).
  EXPECT_FALSE(t.lose_lease({5, 0}).has_value());
  EXPECT_EQ(t.find({5, 0})->state, PartState::kSynthesizing);
  EXPECT_EQ(t.find({5, 0})->lease, 0u);
  // Synthesized, waiting for a GPU: elsewhere again, its slot returned to free.
  const auto freed = t.lose_lease({5, 1});
  ASSERT_TRUE(freed.has_value());
  EXPECT_EQ(freed->id, 3u);
  EXPECT_EQ(t.find({5, 1})->state, PartState::kElsewhere);
  EXPECT_FALSE(t.find({5, 1})->slot.has_value());
  EXPECT_TRUE(t.leases().empty());
  EXPECT_FALSE(t.lose_lease({8, 0}).has_value()) << "an unknown partition: nothing to free";
}

TEST(JobTable, DeliveryNeverEndsAJobThatEndedMeanwhile) {
  JobTable t;
  const uint64_t a = t.add(make_job(Priority::kNormal, 1));
  t.start_synthesis({a, 0}, shm::Slot{}, "synth-0", 0, 0);
  t.synthesized({a, 0}, 1);
  t.start_proving({a, 0}, "gpu-0", 2);
  t.mark_done({a, 0}, 0, std::string(256, 'p'));
  t.cancel(a, 5);
  EXPECT_FALSE(t.mark_delivered({a, 0}, 0, 9)) << "cancelled before its files were written";
  EXPECT_EQ(t.find(a)->state, JobState::kCancelled);
  EXPECT_EQ(t.find(a)->finished_ms, 5);
}
}  // namespace
}  // namespace zkfarm::supervisor
