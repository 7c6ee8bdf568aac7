#pragma once
// The worker table: every child process of zkfarmd (synth-0…, gpu-0…), each
// with an explicit state (model/worker_life.hpp: starting, idle, busy,
// stopping, releasing, exited, failed, moved only by that table's events),
// and the one place where their lives are carried out, as s6-supervise and
// nginx's master keep theirs:
//   start()          spawns a worker's binary (or schedules a retry);
//   reap()           the one exit handler: waits for exited children and reads
//                    each exit status against the exit-code contract;
//   after_exit()     carries out the model's one respawn decision
//                    (decide_respawn: backoff, flapping, do-not-respawn) and
//                    starts the wait for a GPU worker's memory;
//   enforce_deadlines() kills what missed READY, heartbeats or a stop;
//   restart_due()    starts those whose backoff passed.
// What a worker held (partitions) is the supervisor's to requeue before
// after_exit() runs; the table knows workers, not jobs. Every time here is
// monotonic milliseconds (steady clock).
#include <spdlog/logger.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "supervisor/workers/children.hpp"
#include "supervisor/config.hpp"
#include "supervisor/model/metrics.hpp"
#include "supervisor/workers/release.hpp"

namespace zkfarm::supervisor {

/// A worker's process that ended, as reap() read its status.
struct WorkerExit {
  std::string worker;       ///< its id
  std::string how;          ///< "exit code N" or "signal NAME"
  bool asked = false;       ///< the exit was asked for (SHUTDOWN without a kill, or zkfarmd stopping)
  /// Its exit code says the same binary cannot boot here (protocol/worker_channel.hpp:
  /// kExitUsage, kExitEnvironment): retire it instead of a restart loop.
  bool no_respawn = false;
};

class WorkerTable {
 public:
  /// One synthesis worker per cfg.synth_workers and one GPU worker per entry
  /// of `gpu_devices` ("" = the CPU backend), none started. `endpoint` is
  /// workers.sock's ZeroMQ address, `arena_fd` the arena every worker maps.
  WorkerTable(const Config& cfg, std::shared_ptr<spdlog::logger> log, Metrics& metrics, ReleaseCheck& release,
              const std::vector<std::string>& gpu_devices, std::string endpoint, int arena_fd);

  std::map<std::string, Worker>& all() { return workers_; }
  const std::map<std::string, Worker>& all() const { return workers_; }
  Worker* find(const std::string& id);
  size_t size() const { return workers_.size(); }
  /// Workers that said READY and are not stopping (idle or busy).
  size_t ready() const;
  /// Workers failed for good (not restarted until `zkfarmctl restart`).
  size_t failed() const;

  /// Spawns `w`'s binary (children.hpp spawn_worker). When it cannot be
  /// started, `w` is exited with a restart due after its backoff (doubled,
  /// up to restart_backoff_max_ms).
  void start(Worker& w, int64_t now);
  /// Reaps every child that exited (never one a thread runs: witgen's
  /// ChildRegistry) and returns the workers among them; other children are
  /// logged. Never blocks.
  std::vector<WorkerExit> reap();
  /// The respawn decision once a worker's process is gone and the supervisor
  /// has taken back what it held: a crash restarts it after its backoff, or
  /// marks it failed when it flaps (more than flap_max_crashes within
  /// flap_window_ms) or when `no_respawn`; a GPU worker then waits in
  /// `releasing` until its old process's memory is released.
  /// `restart_now`: start it again at once (an upgrade's new binary failed
  /// and the old one is back; no crash of the old one).
  void after_exit(Worker& w, bool crashed, const std::string& why, bool no_respawn, bool restart_now, int64_t now);
  /// Closes what was left of a reaped process (pidfd; its last output lines
  /// go to the log) and returns its pid; w.pid is 0 afterwards.
  pid_t close_process(Worker& w, int64_t now);
  /// SIGKILL for a worker past its READY deadline, its heartbeats, or its
  /// stop_timeout; SIGTERM half-way through a stop.
  void enforce_deadlines(int64_t now);
  /// Starts every exited worker whose restart is due (not while stopping).
  void restart_due(int64_t now, bool stopping);
  /// Advances the release waits of GPU workers; a wait past release_timeout
  /// fails its worker (then release_failed() is true). `stopping`: systemd
  /// is told the stop is still progressing.
  void advance_release_waits(int64_t now, bool stopping);
  /// Asks `w` to exit over the channel (`send_shutdown`), then stop_timeout applies.
  void ask_to_stop(Worker& w, const std::function<void(const Worker&)>& send_shutdown, int64_t now);
  /// SIGKILL to every running worker.
  void kill_all(const std::string& why);
  /// `zkfarmctl kill WORKER`: SIGKILL to that worker's process; once reaped
  /// it is restarted as after a crash (its backoff, flapping; restarts
  /// metric reason "operator"). "" when sent, else why not (no such worker,
  /// no process running).
  std::string kill_one(const std::string& id, const std::string& why);
  /// Records the running workers' pids and start times (STATE/children).
  void record_children();
  /// Kills workers a SIGKILLed predecessor left (STATE/children: pid and start time must match).
  void clean_stale_children();
  /// Whether a release wait timed out (zkfarmd then exits 1).
  bool release_failed() const { return release_failed_; }
  /// The restart settings of the configuration, as the respawn decision reads them.
  RespawnRule respawn_rule() const;
  /// Applies `e` to `w`'s state (model/worker_life.hpp); a move the table
  /// refuses changes nothing and is logged as an internal error.
  void move(Worker& w, WorkerEvent e);

 private:
  const Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  Metrics& metrics_;
  ReleaseCheck& release_;
  std::string endpoint_;
  int arena_fd_;
  std::map<std::string, Worker> workers_;
  bool release_failed_ = false;
};

}  // namespace zkfarm::supervisor
