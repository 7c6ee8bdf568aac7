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
#include "supervisor/children.hpp"
#include "supervisor/config.hpp"
#include "supervisor/jobs.hpp"
#include "supervisor/journal.hpp"
#include "supervisor/metrics.hpp"
#include "supervisor/release.hpp"

#include <deque>
#include <future>
#include <optional>

#include <atomic>

namespace zkfarm::supervisor {

/// What checking a submitted job's files gives: the job (not yet journaled, no
/// id) or the error that refuses it.
struct SubmitCheck {
  std::optional<Job> job;
  std::string error;
};

class Supervisor {
 public:
  /// Sets up the instance: creates the arena (removing a stale one of this
  /// state dir: the caller holds the state lock), binds the worker and control
  /// sockets (mode 0660), blocks SIGTERM/SIGINT/SIGCHLD for the signalfd, makes
  /// this process a child subreaper. Throws std::runtime_error naming the fault.
  Supervisor(Config cfg, std::shared_ptr<spdlog::logger> log);
  ~Supervisor();

  /// Starts the workers and runs until stopped (zkfarmctl stop, SIGTERM,
  /// SIGINT); then the workers are stopped and reaped and the arena unlinked.
  /// Returns the exit code (0 after a clean stop).
  int run();

  /// The status object of docs/protocol.md (also served at GET /status).
  nlohmann::json status() const;
  /// A copy of the latest status, safe to read from another thread (HTTP).
  std::string status_snapshot() const;
  /// The latest /metrics text (Prometheus exposition format 0.0.4), thread-safe.
  std::string metrics_snapshot() const;
  /// Healthy: the loop ran within the last 5 s. Thread-safe.
  bool healthy() const;
  /// Ready: intake open and every worker READY. Thread-safe.
  bool ready() const { return ready_.load(); }

 private:
  void start_worker(Worker& w);
  void handle_signals();
  /// SIGHUP/SIGUSR1: every ReopenableFileSink of the logger reopens its file.
  void reopen_logs(const char* why);
  void reap_children();
  /// Passes the workers' output lines to the log, each with its worker's id.
  void pump_worker_output();
  void on_worker_frame(const std::string& identity, const std::string& frame);
  void on_worker_done(Worker& w, const nlohmann::json& msg, bool synth);
  void on_control_frame(const std::string& identity, const std::string& frame);
  nlohmann::json handle_request(const nlohmann::json& req);
  // submit.cpp: a job's files are checked on a thread of their own (a large key
  // takes seconds), the reply goes out from the loop once the check is done.
  void start_submit(const std::string& identity, const nlohmann::json& req);
  void finish_submits();
  void send_reply(const std::string& identity, nlohmann::json reply);
  void check_deadlines();
  void dispatch();
  void send_to_worker(const Worker& w, const nlohmann::json& msg);
  void requeue(const PartRef& ref, const std::string& why, bool crashed = false);
  void fail_job(uint64_t job, const std::string& error);
  void free_slots(const std::vector<shm::Slot>& slots);
  void finish_partition(Worker& w, const PartRef& ref, const std::string& proof);
  void restore_from_journal();
  void abort_in_flight(uint64_t job);
  bool write_result(uint64_t job, uint32_t index, const std::string& out);
  int write_results(const Job& job, const std::string& out);
  void begin_stop(const std::string& reason);
  // lifecycle.cpp: drain, rolling restarts and upgrades, release waits,
  // flapping, stale children, sd_notify.
  nlohmann::json lifecycle_request(const std::string& type, const nlohmann::json& req);
  void kill_all_workers(const std::string& why);
  void after_exit(Worker& w, bool crashed, const std::string& why, bool no_respawn = false);
  void advance_release_waits();
  void advance_rolling();
  void start_rolling(const std::vector<std::string>& ids, const std::optional<std::string>& synth_binary,
                     const std::optional<std::string>& gpu_binary, const std::string& what);
  void record_children();
  void clean_stale_children();
  void notify(const std::string& state);
  void notify_progress();
  size_t in_flight() const;
  bool advance_stop();
  void update_snapshot();
  /// Monotonic milliseconds (steady_clock): every deadline, heartbeat, backoff
  /// and duration. Never compared with wall_ms().
  int64_t now_ms() const;
  /// Unix milliseconds (system_clock): only timestamps shown to people and
  /// journaled (submitted, started, finished, proved; retention).
  int64_t wall_ms() const;

  Config cfg_;
  std::shared_ptr<spdlog::logger> log_;
  Journal journal_;
  zmq::context_t ctx_;
  zmq::socket_t workers_sock_, control_sock_;
  std::string workers_endpoint_, control_path_, workers_path_;
  int sigfd_ = -1;
  shm::Arena arena_;
  shm::SlotAllocator slots_;
  JobTable jobs_;
  std::map<std::string, Worker> workers_;  // by id
  bool stopping_ = false, shutdown_sent_ = false, draining_ = false, notified_ready_ = false;
  std::unique_ptr<ReleaseCheck> release_check_;
  // A rolling restart or upgrade: workers replaced one at a time.
  struct RollingStep {
    std::string worker;
    std::string binary;      ///< binary to start (the new one for an upgrade)
    std::string old_binary;  ///< to fall back to when the new one fails READY
    bool started = false;    ///< the (new) binary was started for this step
  };
  std::deque<RollingStep> rolling_;
  std::optional<RollingStep> rolling_current_;
  std::string rolling_what_, rolling_error_;
  int64_t next_watchdog_ms_ = 0;
  uint64_t watchdog_usec_ = 0;
  bool release_failed_ = false;
  std::string last_status_line_;
  struct PendingSubmit {
    std::string identity;                  ///< the client to answer
    std::future<SubmitCheck> check;        ///< the job, or why it is refused
  };
  std::vector<PendingSubmit> pending_submits_;
  int64_t drain_deadline_ms_ = 0;
  int64_t next_heartbeat_ms_ = 0;
  mutable std::mutex snapshot_mutex_;
  std::string snapshot_, metrics_text_;
  Metrics metrics_;
  std::atomic<int64_t> loop_ms_{0};
  std::atomic<bool> ready_{false};
  int64_t last_render_ms_ = 0;
  std::string render_metrics() const;
};

}  // namespace zkfarm::supervisor
