#pragma once
// What every test of one supervisor part sets up (tests/supervisor/…): a
// state folder of its own, removed at the end; a configuration whose
// state_dir it is; a logger that drops everything; and a wait on the loop's
// inbox (its eventfd) until a condition holds, never a fixed sleep.
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
