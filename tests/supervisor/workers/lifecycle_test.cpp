// The lifecycle (supervisor/workers/lifecycle.hpp) as a part on its own: a
// drain and a stop hand a shared queue's unstarted claims back (the
// ClaimsToHandBack event), a stop lets partitions in flight finish until the
// drain deadline, then asks every running worker to exit (SHUTDOWN through
// its hook) and completes once each is reaped and its memory released. No
// process runs: workers get a pid no process has and reach their states
// through the model's events; exits go through the worker table's respawn
// decision as a reaped process's would.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "supervisor/clock.hpp"
#include "supervisor/workers/lifecycle.hpp"

#include "supervisor/part_fixture.hpp"

namespace zkfarm::supervisor {
namespace {

struct LifecycleFixture : ::testing::Test, fakes::WorkerGround {
  std::vector<std::string> shutdowns;  ///< the workers SHUTDOWN was sent to
  Lifecycle lifecycle{cfg, log, workers, jobs, metrics, bus, [this](const Worker& w) { shutdowns.push_back(w.id); }};
  std::vector<std::string> handed_back;  ///< ClaimsToHandBack reasons

  LifecycleFixture() : WorkerGround("zkfarm-lifecycle", [](Config& c) { c.synth_workers = 1; }) {
    bus.on<ClaimsToHandBack>([this](const ClaimsToHandBack& e) { handed_back.push_back(e.why); });
    all_ready();
  }
  /// A job of one partition, in a synthesis worker's hands (in flight).
  uint64_t job_in_synthesis() {
    Job j;
    j.parts.resize(1);
    const uint64_t a = jobs.add(j);
    jobs.start_synthesis({a, 0}, shm::Slot{}, "synth-0", 0, 0);
    return a;
  }
  /// Every worker's process is reaped after an asked exit, and the release
  /// waits are advanced (the fake releases at once).
  void reap_all(int64_t now) {
    for (auto& [id, w] : workers.all())
      if (w.pid > 0) workers.after_exit(w, /*crashed=*/false, "exit code 0", false, false, now);
    workers.advance_release_waits(now, true);
  }
};

TEST_F(LifecycleFixture, ADrainHandsBackUnstartedClaimsAndAResumeTakesWorkAgain) {
  EXPECT_STREQ(lifecycle.run_state(), "running");
  EXPECT_EQ(lifecycle.drain()["ok"], true);
  EXPECT_STREQ(lifecycle.run_state(), "draining");
  EXPECT_EQ(handed_back, std::vector<std::string>{"drain"});
  lifecycle.resume();
  EXPECT_STREQ(lifecycle.run_state(), "running");
  EXPECT_EQ(handed_back.size(), 1u) << "a resume claims again by the cluster's own pass, nothing to hand back";
}

TEST_F(LifecycleFixture, AStopWaitsForPartitionsInFlightThenStopsEveryWorkerAndEndsOnceAllAreReleased) {
  const uint64_t a = job_in_synthesis();
  lifecycle.begin_stop("SIGTERM");
  lifecycle.begin_stop("SIGTERM again");  // once
  EXPECT_STREQ(lifecycle.run_state(), "stopping");
  EXPECT_EQ(handed_back, std::vector<std::string>{"stopping: SIGTERM"});
  lifecycle.set_drain_timeout_s(3600);
  EXPECT_FALSE(lifecycle.advance_stop(1));
  EXPECT_TRUE(shutdowns.empty()) << "a partition is in flight and the drain has time left";

  jobs.synthesized({a, 0}, 2);
  jobs.start_proving({a, 0}, "gpu-0", 3);
  jobs.proving_ended({a, 0}, 4);
  jobs.mark_done({a, 0}, 0);
  EXPECT_FALSE(lifecycle.advance_stop(5));
  EXPECT_EQ(shutdowns, (std::vector<std::string>{"gpu-0", "synth-0"}));
  for (const auto& [id, w] : workers.all()) EXPECT_EQ(w.state, WorkerState::kStopping) << id;
  EXPECT_FALSE(lifecycle.advance_stop(6)) << "the workers still run";
  EXPECT_EQ(shutdowns.size(), 2u) << "SHUTDOWN is sent once";

  reap_all(7);
  for (const auto& [id, w] : workers.all()) {
    EXPECT_EQ(w.state, WorkerState::kExited) << id;
    EXPECT_EQ(w.restart_at_ms, 0) << id << ": an asked exit is not restarted";
  }
  EXPECT_TRUE(lifecycle.advance_stop(8));
}

TEST_F(LifecycleFixture, APassedDrainDeadlineStopsTheWorkersWithPartitionsStillInFlight) {
  job_in_synthesis();
  lifecycle.begin_stop("SIGTERM");
  lifecycle.set_drain_timeout_s(0);
  EXPECT_FALSE(lifecycle.advance_stop(steady_ms() + 1));
  EXPECT_EQ(shutdowns.size(), 2u);
}

}  // namespace
}  // namespace zkfarm::supervisor
