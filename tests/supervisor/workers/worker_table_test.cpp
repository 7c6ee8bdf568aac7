// The worker table on its own (supervisor/workers/worker_table.hpp): the respawn
// decision after an exit (backoff, flapping, do-not-respawn exit codes, an
// asked exit), a GPU worker's wait for its memory, and the deadlines that
// kill a worker. No process is started: workers get made-up pids without a
// pidfd, so the table's signals go nowhere, and times are passed in.
#include <gtest/gtest.h>

#include <filesystem>
#include <spdlog/sinks/null_sink.h>

#include "supervisor/workers/release.hpp"
#include "supervisor/workers/worker_table.hpp"

namespace zkfarm::supervisor {
namespace {

struct TableFixture : ::testing::Test {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("zkfarm-worker-table-" + std::to_string(::getpid()) + "-" +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Config cfg;
  Metrics metrics;
  FakeReleaseCheck release{std::chrono::milliseconds(0)};
  std::shared_ptr<spdlog::logger> log = std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());

  TableFixture() {
    std::filesystem::create_directories(dir);
    cfg.state_dir = dir.string();
    cfg.synth_workers = 2;
    cfg.synth_binary = "/opt/zkfarm/zkfarm-synth";
    cfg.gpu_binary = "/opt/zkfarm/zkfarm-gpu";
    cfg.restart_backoff_ms = 500;
    cfg.restart_backoff_max_ms = 1500;
    cfg.flap_max_crashes = 3;
    cfg.flap_window_ms = 60000;
  }
  ~TableFixture() override { std::filesystem::remove_all(dir); }

  std::unique_ptr<WorkerTable> table(ReleaseCheck& check, std::vector<std::string> gpus = {"0"}) {
    return std::make_unique<WorkerTable>(cfg, log, metrics, check, gpus, "ipc:///nowhere", -1);
  }
  // A worker that is running (a pid no process has, no pidfd: signals go nowhere).
  static void running(Worker& w, WorkerState state, int64_t now) {
    w.pid = 999999;
    w.pidfd = -1;
    // Its state is reached through the model's events, as the supervisor's are.
    // A worker still running (called again in a test) is reaped first.
    if (w.state != WorkerState::kExited && w.state != WorkerState::kFailed)
      ASSERT_TRUE(w.state.on(WorkerEvent::kProcessGone));
    ASSERT_TRUE(w.state.on(WorkerEvent::kSpawned));
    if (state != WorkerState::kStarting) ASSERT_TRUE(w.state.on(WorkerEvent::kReady));
    if (state == WorkerState::kBusy) ASSERT_TRUE(w.state.on(WorkerEvent::kAssigned));
    if (state == WorkerState::kStopping) ASSERT_TRUE(w.state.on(WorkerEvent::kStopAsked));
    ASSERT_EQ(w.state, state);
    w.started_ms = w.last_seen_ms = now;
  }
};

TEST_F(TableFixture, HoldsOneSynthesisWorkerEachAndOneGpuWorkerPerDeviceNoneStarted) {
  auto t = table(release, {"0", "1"});
  ASSERT_EQ(t->size(), 4u);
  for (const char* id : {"synth-0", "synth-1", "gpu-0", "gpu-1"}) ASSERT_NE(t->find(id), nullptr) << id;
  EXPECT_EQ(t->find("gpu-1")->device, "1");
  EXPECT_EQ(t->find("synth-1")->binary, cfg.synth_binary);
  EXPECT_EQ(t->find("gpu-0")->binary, cfg.gpu_binary);
  for (const auto& [id, w] : t->all()) {
    EXPECT_EQ(w.state, WorkerState::kExited) << id;
    EXPECT_EQ(w.pid, 0) << id;
    EXPECT_EQ(w.history.backoff_ms, cfg.restart_backoff_ms) << id;
  }
  EXPECT_EQ(t->ready(), 0u);
  running(*t->find("synth-0"), WorkerState::kIdle, 0);
  running(*t->find("gpu-0"), WorkerState::kBusy, 0);
  running(*t->find("synth-1"), WorkerState::kStarting, 0);
  EXPECT_EQ(t->ready(), 2u);  // idle and busy count, starting does not
}

TEST_F(TableFixture, ACrashRestartsAfterABackoffThatDoublesUpToItsCap) {
  auto t = table(release);
  Worker& w = *t->find("synth-0");
  int64_t now = 10000;
  const unsigned expected[] = {500, 1000, 1500};  // doubled, then capped at restart_backoff_max_ms
  for (unsigned delay : expected) {
    running(w, WorkerState::kBusy, now);
    w.assigned.push_back(PartRef{1, 0});
    t->after_exit(w, /*crashed=*/true, "died (signal Killed)", /*no_respawn=*/false, /*restart_now=*/false, now);
    EXPECT_EQ(w.state, WorkerState::kExited);
    EXPECT_EQ(w.pid, 0);
    EXPECT_TRUE(w.assigned.empty());  // what it held is the supervisor's to requeue, not the worker's any more
    EXPECT_EQ(w.restart_at_ms, now + delay);
    now += 100000;  // past the flapping window: no flapping
  }
  EXPECT_EQ(w.history.restarts, 3u);
  EXPECT_EQ((metrics.restarts[{"synth", "crash"}]), 3u);
}

TEST_F(TableFixture, MoreCrashesThanTheFlapLimitWithinTheWindowFailTheWorkerForGood) {
  auto t = table(release);
  Worker& w = *t->find("synth-1");
  int64_t now = 1000;
  for (unsigned i = 0; i <= cfg.flap_max_crashes; ++i, now += 10) {
    running(w, WorkerState::kIdle, now);
    t->after_exit(w, true, "died (exit code 1)", false, false, now);
  }
  EXPECT_EQ(w.state, WorkerState::kFailed);
  EXPECT_EQ(w.restart_at_ms, 0);
  EXPECT_NE(w.failed_reason.find("flapping"), std::string::npos) << w.failed_reason;
  EXPECT_NE(w.failed_reason.find("4 crashes"), std::string::npos) << w.failed_reason;
  t->restart_due(now + 1000000, /*stopping=*/false);  // a failed worker is never restarted by time
  EXPECT_EQ(w.pid, 0);
  EXPECT_EQ(w.state, WorkerState::kFailed);
}

TEST_F(TableFixture, AnExitCodeThatSaysCannotBootRetiresTheWorkerInsteadOfALoop) {
  auto t = table(release);
  Worker& w = *t->find("synth-0");
  running(w, WorkerState::kStarting, 0);
  t->after_exit(w, true, "died (exit code 3)", /*no_respawn=*/true, false, 5);
  EXPECT_EQ(w.state, WorkerState::kFailed);
  EXPECT_EQ(w.restart_at_ms, 0);
  EXPECT_NE(w.failed_reason.find("do not respawn"), std::string::npos) << w.failed_reason;
  EXPECT_NE(w.failed_reason.find("zkfarmctl restart synth-0"), std::string::npos) << w.failed_reason;
  EXPECT_EQ((metrics.restarts[{"synth", "no_respawn"}]), 1u);
  EXPECT_EQ(w.history.restarts, 0u);
}

TEST_F(TableFixture, AnAskedExitIsNoCrashAndSchedulesNoRestart) {
  auto t = table(release);
  Worker& w = *t->find("synth-0");
  running(w, WorkerState::kStopping, 0);
  t->after_exit(w, /*crashed=*/false, "exit code 0", false, false, 100);
  EXPECT_EQ(w.state, WorkerState::kExited);
  EXPECT_EQ(w.restart_at_ms, 0);
  EXPECT_EQ(w.history.restarts, 0u);
  EXPECT_TRUE(w.history.crash_times.empty());
  for (const auto& [key, n] : metrics.restarts) EXPECT_EQ(n, 0u) << key.first << " " << key.second;
}

TEST_F(TableFixture, RestartNowIsDueAtOnceWithoutCountingACrash) {
  auto t = table(release);
  Worker& w = *t->find("synth-0");
  running(w, WorkerState::kStarting, 0);
  t->after_exit(w, false, "new binary failed", false, /*restart_now=*/true, 777);
  EXPECT_EQ(w.state, WorkerState::kExited);
  EXPECT_EQ(w.restart_at_ms, 777);
  EXPECT_EQ(w.history.restarts, 0u);
}

TEST_F(TableFixture, AGpuWorkerWaitsForItsMemoryThenTakesTheStateItsExitDecided) {
  auto t = table(release);  // released at the first check
  Worker& w = *t->find("gpu-0");
  running(w, WorkerState::kBusy, 0);
  t->after_exit(w, true, "died (signal Segmentation fault)", false, false, 1000);
  EXPECT_EQ(w.state, WorkerState::kReleasing);
  EXPECT_EQ(w.state.after_release(), WorkerState::kExited);
  EXPECT_NE(w.release_detail.find("999999"), std::string::npos) << w.release_detail;
  t->restart_due(1000000, false);  // nothing starts while its memory is held
  EXPECT_EQ(w.pid, 0);
  t->advance_release_waits(2000, false);
  EXPECT_EQ(w.state, WorkerState::kExited);
  EXPECT_EQ(w.restart_at_ms, 2000);  // its backoff passed during the wait: due now
  EXPECT_FALSE(t->release_failed());
}

TEST_F(TableFixture, AReleaseWaitPastItsTimeoutFailsTheWorkerAndTheExitCode) {
  FakeReleaseCheck never{std::chrono::hours(1)};
  cfg.release_timeout_ms = 0;
  auto t = table(never);
  Worker& w = *t->find("gpu-0");
  running(w, WorkerState::kIdle, 0);
  t->after_exit(w, false, "exit code 0", false, false, 10);
  ASSERT_EQ(w.state, WorkerState::kReleasing);
  t->advance_release_waits(20, false);
  EXPECT_EQ(w.state, WorkerState::kFailed);
  EXPECT_NE(w.failed_reason.find("release wait timed out"), std::string::npos) << w.failed_reason;
  EXPECT_TRUE(t->release_failed());
  EXPECT_EQ(metrics.release_timeouts, 1u);
}

TEST_F(TableFixture, DeadlinesKillWhatMissedReadyHeartbeatsOrAStop) {
  cfg.ready_timeout_ms = 1000;
  cfg.heartbeat_timeout_ms = 2000;
  cfg.stop_timeout_ms = 4000;
  auto t = table(release, {});
  Worker& starting = *t->find("synth-0");
  Worker& silent = *t->find("synth-1");
  running(starting, WorkerState::kStarting, 0);
  running(silent, WorkerState::kBusy, 0);
  t->enforce_deadlines(1000);  // exactly at the deadlines: nothing yet
  EXPECT_FALSE(starting.kill_sent);
  EXPECT_FALSE(silent.kill_sent);
  t->enforce_deadlines(2001);
  EXPECT_TRUE(starting.kill_sent);
  EXPECT_EQ(starting.kill_reason, "no_ready");
  EXPECT_TRUE(silent.kill_sent);
  EXPECT_EQ(silent.kill_reason, "heartbeat");

  running(starting, WorkerState::kIdle, 10000);
  starting.kill_sent = false;
  t->ask_to_stop(starting, [](const Worker&) {}, 10000);
  EXPECT_EQ(starting.state, WorkerState::kStopping);
  EXPECT_EQ(starting.stop_deadline_ms, 14000);
  t->enforce_deadlines(12001);  // half-way: SIGTERM, no kill yet
  EXPECT_TRUE(starting.term_sent);
  EXPECT_FALSE(starting.kill_sent);
  t->enforce_deadlines(14001);
  EXPECT_TRUE(starting.kill_sent);
  EXPECT_EQ(starting.kill_reason, "stop_timeout");
}

}  // namespace
}  // namespace zkfarm::supervisor
