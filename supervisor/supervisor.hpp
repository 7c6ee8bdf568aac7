#pragma once
// zkfarmd's event loop. One thread owns all state; each pass runs in a fixed
// order: take signals (signalfd), reap children, read worker and control
// messages, kill workers past their heartbeat or READY deadline, restart those
// whose backoff has passed, dispatch partitions, advance a stop in progress.
#include <spdlog/logger.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "shm/arena.hpp"
#include "shm/slots.hpp"
#include "files/input_file.hpp"
#include "protocol/worker_messages.hpp"
#include "supervisor/pipeline/delivery.hpp"
#include "supervisor/pipeline/pipeline.hpp"
#include "supervisor/background.hpp"
#include "supervisor/check_pool.hpp"
#include "supervisor/clock.hpp"
#include "supervisor/housekeeping_schedule.hpp"
#include "supervisor/workers/children.hpp"
#include "supervisor/config.hpp"
#include "supervisor/control/control_api.hpp"
#include "supervisor/workers/device_monitor.hpp"
#include "supervisor/intake/admission.hpp"
#include "supervisor/intake/intake.hpp"
#include "supervisor/model/event_bus.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/ledger/journal_lane.hpp"
#include "supervisor/intake/key_cache.hpp"
#include "supervisor/workers/lifecycle.hpp"
#include "supervisor/cluster/cluster_mirror.hpp"
#include "supervisor/ledger/ledger.hpp"
#include "supervisor/listener_cap.hpp"
#include "supervisor/log_limiter.hpp"
#include "supervisor/model/metrics.hpp"
#include "supervisor/status/published_view.hpp"
#include "supervisor/model/peer.hpp"
#include "supervisor/workers/release.hpp"
#include "supervisor/status/status_view.hpp"
#include "supervisor/intake/submission.hpp"
#include "supervisor/intake/circuit_registry.hpp"
#include "supervisor/workers/worker_link.hpp"
#include "supervisor/workers/worker_socket.hpp"
#include "supervisor/workers/worker_table.hpp"
#include "witgen/generator_run.hpp"
#include "witgen/sandbox.hpp"

#include <deque>
#include <set>
#include <functional>
#include <future>
#include <optional>

#include <atomic>

namespace zkfarm::supervisor {

class Supervisor {
 public:
  /// Sets up the instance: creates the arena, an anonymous memfd (removing a
  /// named /dev/shm segment of this state dir an older version left: the
  /// caller holds the state lock), binds the worker and control
  /// sockets (mode 0660), blocks SIGTERM/SIGINT/SIGCHLD for the signalfd, makes
  /// this process a child subreaper. Throws std::runtime_error naming the fault.
  Supervisor(Config cfg, std::shared_ptr<spdlog::logger> log);
  ~Supervisor();

  /// Starts the workers and runs until stopped (zkfarmctl stop, SIGTERM,
  /// SIGINT); then the workers are stopped and reaped; the arena's memory goes with the last of them.
  /// Returns the exit code (0 after a clean stop).
  int run();

  /// The status object of docs/protocol.md (also served at GET /status),
  /// bounded in size: a FarmView of this loop rendered by status_view.hpp. With `only_owner`, the job lists and
  /// counts cover that uid's jobs only (a non-admin peer's view).
  nlohmann::json status(std::optional<uint32_t> only_owner = std::nullopt) const;
  /// A copy of the latest status, safe to read from another thread (HTTP).
  std::string status_snapshot() const;
  /// The latest /metrics text (Prometheus exposition format 0.0.4), thread-safe.
  std::string metrics_snapshot() const;
  /// Healthy: the loop ran within the last 5 s. Thread-safe.
  bool healthy() const;
  /// Ready: intake open and every worker READY. Thread-safe.
  bool ready() const { return published_.ready(); }
  /// Why not ready ("" when ready), as the loop last saw it. Thread-safe.
  std::string ready_reason() const { return published_.not_ready_reason(); }

 private:
  void handle_signals();
  /// A warning a client can cause at will (a bad frame, a bad request): at most
  /// a few lines a second, with a count of the rest (bad_frames_).
  void warn_limited(const std::string& line);
  /// SIGHUP/SIGUSR1: every ReopenableFileSink of the logger reopens its file.
  void reopen_logs(const char* why);
  /// Reaps exited workers (the worker table's exit handler) and handles each exit.
  void reap_children();
  /// Passes the workers' output lines to the log, each with its worker's id.
  void pump_worker_output();
  // housekeeping.cpp: hourly pruning of the journal past retention_hours, and
  // removal of input copies no live job or pending submit uses.
  void housekeeping(bool at_start);
  void remove_job_inputs(const Job& job);
  void restore_from_journal();
  void finish_background();  ///< at exit: every queued write done (a failing journal write tried once more)
  void update_snapshot();
  /// Why the farm is not ready, in words ("" when ready: intake open and every
  /// worker READY): GET /readyz's 503 body.
  std::string not_ready_reason() const;
  /// Why submits are refused now ("" when intake is open to them): a shared
  /// queue out of reach, else a journal or state-dir fault (journal_lane.hpp).
  std::string intake_fault() const;

  Config cfg_;
  std::shared_ptr<spdlog::logger> log_;
  /// The loop's events (model/event_bus.hpp): declared before every part
  /// that subscribes, so it outlives their handlers.
  EventBus bus_;
  /// The ledger (ledger.hpp): the SQLite journal of this host, or the
  /// PostgreSQL queue several hosts share; used on the journal lane's thread only (journal_lane.hpp).
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<WorkerLink> worker_link_;  // workers.sock and its frames in, messages out (worker_link.hpp)
  LogLimiter bad_frames_;  // bad frames and requests: a few log lines a second at most
  int sigfd_ = -1;
  shm::Arena arena_;
  shm::SlotAllocator slots_;
  JobTable jobs_;
  DeviceMonitor devices_;  // release checks and GPU usage samples (device_monitor.hpp); outlives workers_
  std::unique_ptr<WorkerTable> workers_;  // every worker by id, and their lives
  std::unique_ptr<Lifecycle> lifecycle_;  // run state (running, draining, stopping), rolling operations
  std::unique_ptr<Intake> intake_;  // submits being checked and journaled (intake.hpp)
  std::unique_ptr<Admission> admission_;  // a submit from request to reply (admission.hpp)
  HousekeepingSchedule housekeeping_schedule_ = HousekeepingSchedule::from_env();  ///< housekeeping_schedule.hpp
  std::unique_ptr<CircuitRegistry> circuits_;  ///< circuit add/list/remove (circuit_registry.hpp)
  std::unique_ptr<ControlApi> control_;        ///< control.sock's requests (control_api.hpp)
  PublishedView published_;  ///< status and metrics texts, health, for the HTTP thread
  Metrics metrics_;
  /// A job that ended in this instance (done, failed, cancelled): counted
  /// and its latency observed for /metrics.
  void count_job_end(const Job& job);

  // Disk work off the loop (background.hpp). Once the loop runs, the journal
  // is used only on the journal lane's thread (writes, prune, reads of old proofs) and
  // output files are written only on the delivery's thread. Declared after
  // what their tasks use, so the threads end first.
  LoopInbox inbox_;
  std::unique_ptr<JournalLane> journal_;  // the ledger's thread, its write order and faults (journal_lane.hpp)
  std::unique_ptr<Delivery> delivery_;    // output files and `result` pages (delivery.hpp)
  std::unique_ptr<Pipeline> pipeline_;    // partitions, slots, dispatch, workers' answers (pipeline.hpp)
  std::unique_ptr<ClusterMirror> cluster_;  // a shared queue's mirror, leases and claims; null on one host
  std::string render_metrics() const;
};

}  // namespace zkfarm::supervisor
