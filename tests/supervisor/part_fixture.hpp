#pragma once
// What every test of one supervisor part sets up (tests/supervisor/…): a
// state folder of its own, removed at the end; a configuration whose
// state_dir it is; a logger that drops everything; and a wait on the loop's
// inbox (its eventfd) until a condition holds, never a fixed sleep.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <memory>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "supervisor/background.hpp"
#include "supervisor/config.hpp"
#include "supervisor/model/event_bus.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/model/metrics.hpp"
#include "supervisor/workers/release.hpp"
#include "supervisor/workers/worker_table.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor::fakes {

/// A default configuration in `dir`, then `adjust` applied.
template <class F>
Config config_in(const zkfarm::test::TempDir& dir, F adjust) {
  Config c;
  c.state_dir = dir.path.string();
  adjust(c);
  return c;
}

inline std::shared_ptr<spdlog::logger> null_logger() {
  return std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
}

/// What every part test's fixture holds first: its state folder (`name`, a
/// TempDir), a configuration there with `adjust` applied, a logger that
/// drops everything, the metrics, the loop's event bus and a job table. A
/// fixture derives from it after ::testing::Test, so its own members,
/// declared after, can take these.
struct PartGround {
  template <class F>
  PartGround(const char* name, F adjust) : dir(name), cfg(config_in(dir, adjust)) {}
  zkfarm::test::TempDir dir;
  Config cfg;
  std::shared_ptr<spdlog::logger> log = null_logger();
  Metrics metrics;
  EventBus bus;
  JobTable jobs;
};

/// PartGround and the worker table of a farm whose workers are never
/// processes: a released worker's memory is back at once (FakeReleaseCheck),
/// and no worker has a pid until a test gives it one (all_ready).
struct WorkerGround : PartGround {
  using PartGround::PartGround;
  FakeReleaseCheck release{std::chrono::milliseconds(0)};
  WorkerTable workers{cfg, log, metrics, release, {""}, "ipc:///nowhere", -1};

  /// Every worker READY through the model's moves, with pids from
  /// `first_pid` up that no process has (signals to them go nowhere).
  void all_ready(int first_pid = 999990) {
    for (auto& [id, w] : workers.all()) {
      w.pid = first_pid++;
      EXPECT_TRUE(w.state.on(WorkerEvent::kSpawned)) << id;
      EXPECT_TRUE(w.state.on(WorkerEvent::kReady)) << id;
    }
  }
};

/// Runs the closures posted to `inbox` until `done()` holds; false after 10 s.
template <class F>
bool loop_until(LoopInbox& inbox, F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    pollfd p{inbox.fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    inbox.run();
  }
  return true;
}

}  // namespace zkfarm::supervisor::fakes
