#pragma once
// The farm's lifecycle (design.md §4): stop and drain, resume, rolling
// restarts and upgrades, and what the init system is told (sd_notify). It
// owns the farm-wide run state (running, draining, stopping) and the rolling
// operation; the workers' own lives (exits, respawns, flapping, release
// waits) are the worker table's, and a worker's exit reaches the table's one
// respawn decision through on_worker_gone(). Every time is monotonic
// milliseconds except the rolling operation's started/finished (Unix ms).
#include <spdlog/logger.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "protocol/control_requests.hpp"
#include "supervisor/config.hpp"
#include "supervisor/ledger/journal_lane.hpp"
#include "supervisor/model/event_bus.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/model/metrics.hpp"
#include "supervisor/workers/worker_table.hpp"

namespace zkfarm::supervisor {

/// The last (or current) rolling restart or upgrade, kept once it ends so
/// that `status` and `restart|upgrade --wait` see its result.
struct RollingOp {
  uint64_t id = 0;          ///< 1, 2, …: the reply to restart/upgrade names it; 0: none yet
  std::string what;         ///< "restart" or "upgrade"
  std::string result;       ///< "running", "done" or "failed"
  std::string error;        ///< why it failed (the worker, the binary, what was kept)
  size_t total = 0, replaced = 0;           ///< workers to replace, replaced so far
  int64_t started_ms = 0, finished_ms = 0;  ///< Unix ms (for people)
};

/// The farm begins to drain or stop: a shared queue's leases of partitions
/// not yet started go back to the queue. Handled by the cluster mirror.
struct ClaimsToHandBack {
  std::string why;
};

/// Events (model/event_bus.hpp): handles ServiceNotice (journal_lane.hpp);
/// emits ClaimsToHandBack.
class Lifecycle {
 public:

  /// `workers` and `jobs` are the loop's tables (read for in-flight counts,
  /// changed only through the worker table's calls); `metrics` counts
  /// rolling operations.
  Lifecycle(const Config& cfg, std::shared_ptr<spdlog::logger> log, WorkerTable& workers, const JobTable& jobs,
            Metrics& metrics, EventBus& bus, std::function<void(const Worker&)> send_shutdown);

  bool stopping() const { return stopping_; }
  bool draining() const { return draining_; }
  /// "running", "draining" or "stopping" (status lines, the hosts table).
  const char* run_state() const { return stopping_ ? "stopping" : draining_ ? "draining" : "running"; }
  /// Partitions being synthesized, synthesized, or proved.
  size_t in_flight() const;

  /// Starts a stop (once): intake closes, a rolling operation ends, systemd
  /// hears STOPPING=1, queued claims go back, in-flight partitions get
  /// drain_timeout_ms to finish.
  void begin_stop(const std::string& reason);
  /// `zkfarmctl stop --timeout S`: the drain ends S seconds from now.
  void set_drain_timeout_s(uint64_t seconds);
  /// The longest drain a client may ask for (100 years): larger values are clamped to it.
  static constexpr uint64_t kMaxDrainSeconds = 100ull * 365 * 86400;
  /// A second SIGTERM/SIGINT during a stop, or `zkfarmctl kill`: no more
  /// draining; every worker is killed.
  void stop_now(const std::string& why);
  /// One step of a stop: SHUTDOWN to every worker once nothing is in flight
  /// (or the drain timed out); true when every worker is reaped and released.
  bool advance_stop(int64_t now);

  /// `drain`: no new partitions start (queued claims go back to the shared
  /// queue); the reply counts those in flight.
  nlohmann::json drain();
  /// `resume`: partitions start again after a drain.
  nlohmann::json resume();
  /// `restart TARGET` or `upgrade --synth/--gpu PATH`: the workers it
  /// replaces, one at a time; the reply names the operation.
  nlohmann::json roll(const protocol::Rolling& req);
  /// One step of the rolling operation in progress (nothing while stopping).
  void advance_rolling(int64_t now);
  /// A worker's process is gone and what it held was requeued: an upgrade
  /// whose new binary died before READY stops and the old binary goes back
  /// at once; then the worker table's respawn decision.
  void on_worker_gone(Worker& w, bool crashed, const std::string& why, bool no_respawn, int64_t now);

  /// The rolling operation as status shows it (null when there never was one).
  nlohmann::json rolling_json() const;
  /// The worker being replaced now ("" none) and what it is doing.
  std::string rolling_worker() const;
  std::string rolling_step(const Worker& w) const;
  bool rolling_running() const { return rolling_op_.result == "running"; }

  /// sd_notify(3) `state` (a no-op unless started by systemd).
  void notify(const std::string& state);
  /// READY=1 once every worker is READY, or failed for good, or the start's
  /// settle time (ready_timeout_ms + 5 s) has passed (then STATUS says
  /// degraded and which workers are not READY); the watchdog's ping; a
  /// STATUS line whenever it changes.
  void notify_progress(int64_t now);

 private:
  // A rolling restart or upgrade: workers replaced one at a time.
  struct RollingStep {
    std::string worker;
    std::string binary;      ///< binary to start (the new one for an upgrade)
    std::string old_binary;  ///< to fall back to when the new one fails READY
    bool started = false;    ///< the (new) binary was started for this step
  };
  /// Queues `ids` for replacement, each with its kind's binary of `binaries` (none: its own).
  void start_rolling(const std::vector<std::string>& ids, const PerKind<std::optional<std::string>>& binaries,
                     const std::string& what);
  /// Ends the rolling operation in progress with `error` ("" = done).
  void end_rolling(const std::string& error);

  const Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  WorkerTable& workers_;
  const JobTable& jobs_;
  Metrics& metrics_;
  EventBus& bus_;
  std::function<void(const Worker&)> send_shutdown_;  ///< SHUTDOWN to a worker over its channel
  bool stopping_ = false, shutdown_sent_ = false, draining_ = false, notified_ready_ = false;
  int64_t drain_deadline_ms_ = 0;
  std::deque<RollingStep> rolling_;
  std::optional<RollingStep> rolling_current_;
  RollingOp rolling_op_;
  uint64_t watchdog_usec_ = 0;
  int64_t next_watchdog_ms_ = 0;
  int64_t first_progress_ms_ = -1;  ///< the loop's first notify_progress: the start's settle deadline counts from it
  std::string last_status_line_;
};

}  // namespace zkfarm::supervisor
