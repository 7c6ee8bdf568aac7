#pragma once
// A worker's life as data: its state, the events that move it, the one table
// of legal moves (state × event → state), and the respawn decision after its
// process ends (backoff, flapping, do-not-respawn). No process, clock or log
// here: workers/worker_table.cpp carries out what these functions decide, and
// tests/supervisor/model/worker_life_test.cpp checks every pair of the table,
// the refusals included. The model is s6-supervise's (a state × event table)
// and gunicorn's arbiter (one place decides a respawn).
#include <cstdint>
#include <optional>
#include <vector>

namespace zkfarm::supervisor {

/// starting: spawned, no READY yet; idle/busy: READY, without/with partitions;
/// stopping: asked to exit (SHUTDOWN sent); releasing: reaped, waiting until its
/// (GPU or pinned) memory is really released; exited: gone, a restart may be
/// due; failed: crashed too often in a window (flapping), not restarted until
/// `zkfarmctl restart`.
enum class WorkerState { kStarting, kIdle, kBusy, kStopping, kReleasing, kExited, kFailed };
const char* worker_state_name(WorkerState s);

/// What happens to a worker, as the supervisor learns it.
enum class WorkerEvent {
  kSpawned,         ///< its binary was started (exited or failed → starting)
  kSpawnFailed,     ///< its binary could not be started (exited or failed → exited, a retry due)
  kReady,           ///< it said READY (starting → idle)
  kAssigned,        ///< a partition was handed to it (idle or busy → busy)
  kAllAnswered,     ///< it answered the last partition it held (busy → idle)
  kStopAsked,       ///< SHUTDOWN was sent (a running state → stopping)
  kProcessGone,     ///< its process was reaped (a running state → exited)
  kGivenUp,         ///< the respawn decision retired it (exited → failed)
  kAwaitRelease,    ///< a device-holding worker's old process's memory is awaited (exited or failed → releasing)
  kReleased,        ///< that memory was released (releasing → the state it had before the wait)
  kReleaseTimedOut  ///< the wait passed release_timeout (releasing → failed)
};
const char* worker_event_name(WorkerEvent e);
inline constexpr WorkerEvent kAllWorkerEvents[] = {
    WorkerEvent::kSpawned,      WorkerEvent::kSpawnFailed, WorkerEvent::kReady,        WorkerEvent::kAssigned,
    WorkerEvent::kAllAnswered,  WorkerEvent::kStopAsked,   WorkerEvent::kProcessGone,  WorkerEvent::kGivenUp,
    WorkerEvent::kAwaitRelease, WorkerEvent::kReleased,    WorkerEvent::kReleaseTimedOut};
inline constexpr WorkerState kAllWorkerStates[] = {WorkerState::kStarting,  WorkerState::kIdle,
                                                    WorkerState::kBusy,      WorkerState::kStopping,
                                                    WorkerState::kReleasing, WorkerState::kExited,
                                                    WorkerState::kFailed};

/// A worker's state, written only by on(): reading it as a WorkerState is
/// free (`w.state == WorkerState::kIdle`); neither a WorkerState nor another
/// WorkerLife can be assigned to it (copy-assignment is private), so no
/// code outside the table moves a worker. A new one is exited.
class WorkerLife {
 public:
  WorkerLife() = default;
  WorkerLife(const WorkerLife&) = default;
  operator WorkerState() const { return state_; }  // NOLINT: read as the plain state everywhere
  /// While releasing: the state the worker takes once its memory is released
  /// (exited, or failed when it was retired before the wait).
  WorkerState after_release() const { return after_release_; }
  /// The life after `e`, or nullopt where the table has no such move.
  std::optional<WorkerLife> after(WorkerEvent e) const;
  /// Applies `e`; false (and nothing changed) where the table refuses it.
  bool on(WorkerEvent e);

 private:
  WorkerLife& operator=(const WorkerLife&) = default;  // on() only
  WorkerState state_ = WorkerState::kExited;
  WorkerState after_release_ = WorkerState::kExited;
};

/// The restart policy's settings (zkfarm.toml: restart_backoff_ms,
/// restart_backoff_max_ms, flap_window_ms, flap_max_crashes), in ms.
struct RespawnRule {
  unsigned backoff_ms = 0, backoff_max_ms = 0, flap_window_ms = 0, flap_max_crashes = 0;
};

/// What the respawn decision remembers of a worker's crashes.
struct CrashRecord {
  unsigned restarts = 0;              ///< crash restarts so far
  unsigned backoff_ms = 0;            ///< delay before the next restart (doubles per crash, up to the rule's max)
  std::vector<int64_t> crash_times;   ///< monotonic ms of the crashes inside the flap window
};

/// How a worker's process ended, as the respawn decision weighs it.
enum class ExitKind {
  kAsked,         ///< an exit it was asked for (SHUTDOWN, zkfarmd stopping): never a crash
  kCrash,         ///< anything else
  kCannotBoot,    ///< a crash whose exit code says the same binary cannot start here (do not respawn)
  kRestartAtOnce  ///< an upgrade's new binary failed and the old one is back: start it now, no crash counted
};

/// The respawn decision's verdict: what the worker table carries out.
struct RespawnVerdict {
  enum class Do { kNothing, kRestart, kRetire, kRetireFlapping } what = Do::kNothing;
  int64_t restart_at_ms = 0;  ///< kRestart: when (monotonic ms)
  unsigned delay_ms = 0;      ///< kRestart after a crash: the backoff that applies
};

/// The one respawn decision (gunicorn's arbiter keeps one too). A crash is
/// counted (restarts, crash_times) and restarted after `record.backoff_ms`,
/// which then doubles up to the rule's max; more than flap_max_crashes within
/// flap_window_ms retires the worker (kRetireFlapping); kCannotBoot retires it
/// at once (kRetire); kRestartAtOnce restarts at `now`; kAsked does nothing.
/// `record` is updated in place. Times are monotonic ms.
RespawnVerdict decide_respawn(CrashRecord& record, const RespawnRule& rule, ExitKind how, int64_t now);

/// A binary that could not be started is retried after the backoff, which
/// then doubles up to the rule's max (no crash counted); returns when.
int64_t spawn_retry_at(CrashRecord& record, const RespawnRule& rule, int64_t now);

}  // namespace zkfarm::supervisor
