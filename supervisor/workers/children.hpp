#pragma once
// The supervisor's child table: one entry per worker slot (synth-0, gpu-0, …),
// each with an explicit state, and the one function that starts a worker
// process. Reaping and the decision to respawn live in the supervisor loop.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "supervisor/config.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/model/worker_life.hpp"
#include "supervisor/workers/release.hpp"
#include "supervisor/workers/worker_kinds.hpp"
#include "supervisor/workers/worker_output.hpp"

#include <memory>

namespace zkfarm::supervisor {

struct Worker {
  std::string id;                ///< "synth-0", "gpu-1": also its ZeroMQ routing id
  WorkerKind kind = WorkerKind::kSynth;
  std::string device;            ///< CUDA_VISIBLE_DEVICES for a GPU worker ("" for the CPU backend)
  pid_t pid = 0;                 ///< 0 when no process runs
  int pidfd = -1;                ///< signals go through it (no PID-reuse race)
  std::string binary;            ///< the executable this worker runs (upgrades change it)
  WorkerLife state;              ///< written only through state.on(event): model/worker_life.hpp
  std::string version, backend;  ///< from READY
  /// Partitions handed to it and not yet answered, in the order sent: a
  /// synthesis worker holds at most one, a GPU worker gpu_queue_depth (one
  /// more for a partition of higher priority than all it holds).
  std::vector<PartRef> assigned;
  /// The ones of `assigned` its STARTED named and not yet answered: those
  /// computing (one, or up to gpu_lanes for a GPU worker with lanes), oldest first.
  std::vector<PartRef> computing;
  CrashRecord history;           ///< crash restarts, the next backoff, recent crash times
  int64_t started_ms = 0, last_seen_ms = 0, stop_deadline_ms = 0;
  int64_t restart_at_ms = 0;     ///< when exited and a restart is due; 0: none
  bool kill_sent = false;
  bool term_sent = false;        ///< SIGTERM sent during a stop
  bool retiring = false;         ///< a rolling restart: no new work, then stop
  bool operator_stop = false;    ///< stopped by the operator: never counts as a crash
  std::string release_detail;    ///< progress of the release wait, for status
  std::shared_ptr<ReleaseWait> release_wait;  ///< while releasing: the wait for the old process's memory
  int64_t release_logged_ms = 0;  ///< last progress line in the log
  std::string kill_reason;       ///< why the supervisor killed it ("heartbeat", "no_ready", "stop_timeout")
  std::shared_ptr<WorkerOutput> output;  ///< its stdout/stderr pipe, read by the loop into the log
  std::string failed_reason;     ///< why it is failed (flapping, a do-not-respawn exit code, a release timeout), for status
};

/// Starts the worker's binary with Boost.Process: arguments for the endpoint,
/// arena, id, threads and heartbeats; CUDA_VISIBLE_DEVICES for a GPU worker; in
/// the child, before exec, an empty signal mask (the supervisor blocks signals
/// for its signalfd) and PR_SET_PDEATHSIG(SIGTERM), so no worker outlives it.
/// `arena_fd` is the supervisor's memfd arena (shm::Arena::fd(), close-on-exec):
/// the child gets a copy as descriptor shm::kArenaChildFd, inheritable, and
/// `--arena fd:3`. Throws std::runtime_error when `arena_fd` is -1.
/// Its stdout and stderr go to a pipe whose read end is returned with the pid.
/// Throws std::runtime_error if the binary cannot be started.
struct SpawnedWorker {
  pid_t pid = 0;
  WorkerOutput output;
};
SpawnedWorker spawn_worker(const Config& cfg, const Worker& w, const std::string& endpoint, int arena_fd);

/// Sends `sig` to the worker through its pidfd (nothing when it has none).
void signal_worker(const Worker& w, int sig);

}  // namespace zkfarm::supervisor
