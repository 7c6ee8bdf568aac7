// Delivery (supervisor/pipeline/delivery.hpp) as a part on its own, driven by
// the PartitionProved event over a ledger in memory: a job its client
// delivers ends once every partition is proved (one JobEnded, its end
// journaled); a result that cannot be written fails the job with the reason
// and where the proofs still are. The test waits on the loop's inbox (its
// eventfd), never on a fixed sleep.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "supervisor/fake_ledger.hpp"
#include "supervisor/pipeline/delivery.hpp"
#include "supervisor/pipeline/pipeline.hpp"

#include "supervisor/part_fixture.hpp"

namespace zkfarm::supervisor {
namespace {

struct DeliveryFixture : ::testing::Test, fakes::PartGround {
  fakes::FakeLedger ledger;
  LoopInbox inbox;
  JournalLane journal{cfg, log, ledger, inbox, metrics, bus};
  Delivery delivery{cfg, log, jobs, journal, inbox, bus};
  std::vector<uint64_t> ended;

  DeliveryFixture() : PartGround("zkfarm-delivery", [](Config&) {}) { bus.on<JobEnded>([this](const JobEnded& e) { ended.push_back(e.job.id); }); }
  ~DeliveryFixture() override {
    delivery.finish();
    journal.stop();
  }
  template <class F>
  bool loop_until(F done) {
    return fakes::loop_until(inbox, done);
  }
  /// A job of `parts` partitions, each proved (its proof in memory) and marked done.
  uint64_t proved_job(size_t parts, bool client_delivery, const std::string& out) {
    Job j;
    j.client_delivery = client_delivery;
    j.out = out;
    j.owner_uid = ::geteuid();
    j.owner_gid = ::getegid();
    j.parts.resize(parts);
    const uint64_t id = jobs.add(std::move(j));
    for (uint32_t k = 0; k < parts; ++k) {
      jobs.start_synthesis({id, k}, shm::Slot{}, "synth-0", 0, 0);
      jobs.synthesized({id, k}, 1);
      jobs.start_proving({id, k}, "gpu-0", 2);
      jobs.proving_ended({id, k}, 3);
      jobs.mark_done({id, k}, 0, std::string(256, '\0'));
    }
    return id;
  }
};

TEST_F(DeliveryFixture, AJobItsClientDeliversEndsOnceEveryPartitionIsProved) {
  const uint64_t a = proved_job(2, /*client_delivery=*/true, "");
  bus.emit(PartitionProved{*jobs.find(a), 0});
  EXPECT_EQ(jobs.find(a)->state, JobState::kRunning) << "one partition of two delivered";
  EXPECT_TRUE(ended.empty());
  bus.emit(PartitionProved{*jobs.find(a), 1});
  EXPECT_EQ(jobs.find(a)->state, JobState::kDone);
  EXPECT_EQ(ended, std::vector<uint64_t>{a});
  EXPECT_TRUE(ledger.wait_until([&](fakes::FakeLedger& l) {
    return l.finished(a) && l.finished(a)->first == JobState::kDone;
  })) << "its end is journaled";
}

TEST_F(DeliveryFixture, AResultThatCannotBeWrittenFailsTheJobAndSaysWhereTheProofsAre) {
  const std::filesystem::path not_a_folder = dir / "out-is-a-file";
  std::ofstream(not_a_folder) << "x";
  const uint64_t a = proved_job(1, /*client_delivery=*/false, (not_a_folder / "sub").string());
  bus.emit(PartitionProved{*jobs.find(a), 0});
  ASSERT_TRUE(loop_until([&] { return jobs.find(a)->terminal(); }));
  EXPECT_EQ(jobs.find(a)->state, JobState::kFailed);
  const std::string& error = jobs.find(a)->error;
  EXPECT_NE(error.find("cannot be written"), std::string::npos) << error;
  EXPECT_NE(error.find("zkfarmctl result " + std::to_string(a)), std::string::npos) << error;
  EXPECT_EQ(ended, std::vector<uint64_t>{a});
  EXPECT_TRUE(ledger.wait_until([&](fakes::FakeLedger& l) {
    return l.finished(a) && l.finished(a)->first == JobState::kFailed;
  }));
}

}  // namespace
}  // namespace zkfarm::supervisor
