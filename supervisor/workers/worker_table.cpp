#include "supervisor/workers/worker_table.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "protocol/messages.hpp"
#include "protocol/worker_channel.hpp"
#include "supervisor/workers/process.hpp"
#include "witgen/subprocess.hpp"

namespace zkfarm::supervisor {

WorkerTable::WorkerTable(const Config& cfg, std::shared_ptr<spdlog::logger> log, Metrics& metrics,
                         ReleaseCheck& release, const std::vector<std::string>& gpu_devices, std::string endpoint,
                         int arena_fd)
    : cfg_(cfg), log_(std::move(log)), metrics_(metrics), release_(release), endpoint_(std::move(endpoint)),
      arena_fd_(arena_fd) {
  for (unsigned i = 0; i < cfg_.synth_workers; ++i) {
    Worker w;
    w.id = "synth-" + std::to_string(i);
    w.kind = WorkerKind::kSynth;
    workers_.emplace(w.id, w);
  }
  unsigned n = 0;
  for (const auto& dev : gpu_devices) {
    Worker w;
    w.id = "gpu-" + std::to_string(n++);
    w.kind = WorkerKind::kGpu;
    w.device = dev;
    workers_.emplace(w.id, w);
  }
  for (auto& [id, w] : workers_) {
    w.history.backoff_ms = cfg_.restart_backoff_ms;
    w.binary = cfg_.*kind_info(w.kind).binary;
  }
}

Worker* WorkerTable::find(const std::string& id) {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

size_t WorkerTable::ready() const {
  size_t n = 0;
  for (const auto& [id, w] : workers_) n += w.state == WorkerState::kIdle || w.state == WorkerState::kBusy;
  return n;
}

size_t WorkerTable::failed() const {
  size_t n = 0;
  for (const auto& [id, w] : workers_) n += w.state == WorkerState::kFailed;
  return n;
}

void WorkerTable::start(Worker& w, int64_t now) {
  try {
    if (kind_info(w.kind).holds_device) release_.baseline(w.device);
    SpawnedWorker spawned = spawn_worker(cfg_, w, endpoint_, arena_fd_);
    w.pid = spawned.pid;
    w.output = std::make_shared<WorkerOutput>(std::move(spawned.output));
    w.pidfd = pidfd_open_child(w.pid);
    if (w.pidfd < 0) log_->warn("worker {}: no pidfd ({}); signals go by pid", w.id, std::strerror(errno));
  } catch (const std::exception& e) {
    log_->error("worker {}: {}", w.id, e.what());
    w.pid = 0;
    move(w, WorkerEvent::kSpawnFailed);
    w.restart_at_ms = spawn_retry_at(w.history, respawn_rule(), now);
    return;
  }
  move(w, WorkerEvent::kSpawned);
  w.started_ms = w.last_seen_ms = now;
  w.restart_at_ms = 0;
  w.kill_sent = false;
  w.term_sent = false;
  w.failed_reason.clear();
  w.assigned.clear();
  w.computing.clear();
  w.version.clear();
  record_children();
  log_->info("worker {}: started pid {} ({})", w.id, w.pid, w.binary);
}

std::vector<WorkerExit> WorkerTable::reap() {
  std::vector<WorkerExit> exits;
  for (;;) {
    int status = 0;
    pid_t pid;
    {
      // A child a thread runs (a compiler building a witness generator:
      // witgen/subprocess.hpp) is that thread's to reap; peek first.
      std::lock_guard<std::mutex> lock(witgen::ChildRegistry::mutex());
      siginfo_t si{};
      if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) break;
      if (witgen::ChildRegistry::owns(si.si_pid)) break;  // reaped by its thread within 50 ms
      pid = ::waitpid(si.si_pid, &status, WNOHANG);
    }
    if (pid <= 0) break;
    std::string how = WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                        : std::string("signal ") + strsignal(WTERMSIG(status));
    Worker* w = nullptr;
    for (auto& [id, cand] : workers_)
      if (cand.pid == pid) w = &cand;
    if (!w) {
      log_->info("reaped pid {} ({}), not a worker of ours", pid, how);
      continue;
    }
    WorkerExit e;
    e.worker = w->id;
    e.how = how;
    // SHUTDOWN sent without a kill: an operator's or a rolling step's stop, never a crash.
    e.asked = w->state == WorkerState::kStopping && !w->kill_sent;
    // The exit-code contract (protocol/worker_channel.hpp): usage and
    // environment faults say that the same binary with the same flags cannot
    // boot, so the worker is retired instead of fed into a restart loop.
    e.no_respawn = WIFEXITED(status) && (WEXITSTATUS(status) == protocol::kExitUsage ||
                                         WEXITSTATUS(status) == protocol::kExitEnvironment);
    exits.push_back(std::move(e));
  }
  return exits;
}

pid_t WorkerTable::close_process(Worker& w, int64_t now) {
  if (w.pidfd >= 0) ::close(w.pidfd);
  w.pidfd = -1;
  if (w.output) {  // its last words (often the reason it died) before the verdict
    w.output->close(now, [&](std::string_view line) { log_->info("[{}] {}", w.id, line); });
  }
  const pid_t old = w.pid;
  w.pid = 0;
  w.assigned.clear();
  w.computing.clear();
  move(w, WorkerEvent::kProcessGone);
  record_children();
  return old;
}

void WorkerTable::after_exit(Worker& w, bool crashed, const std::string& why, bool no_respawn, bool restart_now,
                             int64_t now) {
  const pid_t old_pid = close_process(w, now);
  const ExitKind how = restart_now ? ExitKind::kRestartAtOnce
                       : !crashed  ? ExitKind::kAsked
                       : no_respawn ? ExitKind::kCannotBoot
                                    : ExitKind::kCrash;
  const RespawnVerdict verdict = decide_respawn(w.history, respawn_rule(), how, now);
  using Do = RespawnVerdict::Do;
  if (how == ExitKind::kCrash)
    ++metrics_.restarts[{worker_kind_name(w.kind), w.kill_sent ? w.kill_reason : std::string("crash")}];
  switch (verdict.what) {
    case Do::kNothing:
      log_->info("worker {}: exited ({})", w.id, why);
      break;
    case Do::kRestart:
      if (how == ExitKind::kCrash) log_->error("worker {}: {}; restarting in {} ms", w.id, why, verdict.delay_ms);
      w.restart_at_ms = verdict.restart_at_ms;
      break;
    case Do::kRetire:
      // Retired, not restarted: its own exit code says a restart cannot help.
      w.failed_reason = why + ": the worker cannot start in this environment (do not respawn)" +
                        (w.output && !w.output->last_line().empty() ? "; its last line: " + w.output->last_line() : "") +
                        "; fix the cause, then `zkfarmctl restart " + w.id + "`";
      log_->error("worker {}: {}", w.id, w.failed_reason);
      ++metrics_.restarts[{worker_kind_name(w.kind), "no_respawn"}];
      move(w, WorkerEvent::kGivenUp);
      w.restart_at_ms = 0;
      break;
    case Do::kRetireFlapping:
      w.failed_reason = std::to_string(w.history.crash_times.size()) + " crashes within " +
                        std::to_string(cfg_.flap_window_ms) + " ms (flapping); last: " + why;
      log_->error("worker {}: failed (flapping): {}; not restarted until `zkfarmctl restart {}`", w.id,
                  w.failed_reason, w.id);
      move(w, WorkerEvent::kGivenUp);
      w.restart_at_ms = 0;
      break;
  }
  w.kill_sent = false;
  if (kind_info(w.kind).holds_device && old_pid > 0) {
    move(w, WorkerEvent::kAwaitRelease);  // exited or failed again once released
    w.release_wait = std::make_shared<ReleaseWait>(release_, old_pid, w.device,
                                                   std::chrono::milliseconds(cfg_.release_timeout_ms));
    w.release_detail = "waiting for pid " + std::to_string(old_pid) + "'s memory";
    w.release_logged_ms = now;
    log_->info("worker {}: waiting until the memory of pid {} is released (release_timeout {} ms)", w.id, old_pid,
               cfg_.release_timeout_ms);
  }
}

void WorkerTable::enforce_deadlines(int64_t now) {
  for (auto& [id, w] : workers_) {
    if (w.pid <= 0 || w.kill_sent) continue;
    const char* why = nullptr;
    if (w.state == WorkerState::kStarting && now - w.started_ms > cfg_.ready_timeout_ms) {
      why = "no READY in time";
      w.kill_reason = "no_ready";
    }
    if ((w.state == WorkerState::kIdle || w.state == WorkerState::kBusy) &&
        now - w.last_seen_ms > cfg_.heartbeat_timeout_ms) {
      why = "missed its heartbeats";
      w.kill_reason = "heartbeat";
    }
    // A stop asks over the channel first (SHUTDOWN), then with SIGTERM half-way, then SIGKILL.
    if (w.state == WorkerState::kStopping && w.stop_deadline_ms && !w.term_sent &&
        now > w.stop_deadline_ms - int64_t(cfg_.stop_timeout_ms) / 2) {
      log_->warn("worker {}: still running {} ms after SHUTDOWN; SIGTERM", id, cfg_.stop_timeout_ms / 2);
      signal_worker(w, SIGTERM);
      w.term_sent = true;
    }
    if (w.state == WorkerState::kStopping && w.stop_deadline_ms && now > w.stop_deadline_ms) {
      why = "did not exit within stop_timeout";
      w.kill_reason = "stop_timeout";
    }
    if (why) {
      log_->error("worker {}: {}; sending SIGKILL to pid {}", id, why, w.pid);
      signal_worker(w, SIGKILL);
      w.kill_sent = true;
    }
  }
}

void WorkerTable::restart_due(int64_t now, bool stopping) {
  if (stopping) return;
  for (auto& [id, w] : workers_)
    if (w.state == WorkerState::kExited && w.pid == 0 && w.restart_at_ms && now >= w.restart_at_ms) start(w, now);
}

void WorkerTable::advance_release_waits(int64_t now, bool stopping) {
  for (auto& [id, w] : workers_) {
    if (w.state != WorkerState::kReleasing || !w.release_wait) continue;
    ReleaseWait& wait = *w.release_wait;
    ReleaseStatus st = wait.poll();
    w.release_detail = st.detail;
    if (wait.released()) {
      log_->info("worker {}: memory of pid {} released after {} ms", id, wait.pid(), wait.elapsed().count());
      w.release_detail.clear();
      w.release_wait.reset();
      move(w, WorkerEvent::kReleased);
      if (w.restart_at_ms && w.restart_at_ms < now) w.restart_at_ms = now;
      continue;
    }
    if (wait.timed_out()) {
      log_->error("worker {}: {}; the worker is failed until `zkfarmctl restart {}`", id, st.detail, id);
      ++metrics_.release_timeouts;
      w.failed_reason = "release wait timed out: " + st.detail;
      w.release_wait.reset();
      move(w, WorkerEvent::kReleaseTimedOut);
      w.restart_at_ms = 0;
      release_failed_ = true;
      continue;
    }
    if (now - w.release_logged_ms >= 5000) {  // progress in the log every 5 s; status has every poll's
      log_->info("worker {}: release wait: {}", id, st.detail);
      w.release_logged_ms = now;
    }
    if (stopping) {
      // Tell systemd the stop is still progressing (TimeoutStopSec covers the rest).
      sd_notifyf(0, "EXTEND_TIMEOUT_USEC=%llu\nSTATUS=waiting for GPU memory of pid %d to be released",
                 (unsigned long long)(2 * 1000 * 1000), int(wait.pid()));
    }
  }
}

void WorkerTable::ask_to_stop(Worker& w, const std::function<void(const Worker&)>& send_shutdown, int64_t now) {
  send_shutdown(w);
  move(w, WorkerEvent::kStopAsked);
  w.stop_deadline_ms = now + cfg_.stop_timeout_ms;
}

void WorkerTable::kill_all(const std::string& why) {
  for (auto& [id, w] : workers_) {
    if (w.pid <= 0) continue;
    log_->warn("worker {}: SIGKILL ({})", id, why);
    signal_worker(w, SIGKILL);
    w.kill_sent = true;
  }
}

std::string WorkerTable::kill_one(const std::string& id, const std::string& why) {
  Worker* w = find(id);
  if (!w) return "no worker '" + id + "'";
  if (w->pid <= 0) return "worker " + id + " runs no process (" + std::string(worker_state_name(w->state)) + ")";
  log_->warn("worker {}: SIGKILL to pid {} ({})", id, w->pid, why);
  signal_worker(*w, SIGKILL);
  w->kill_sent = true;
  w->kill_reason = "operator";
  return "";
}

RespawnRule WorkerTable::respawn_rule() const {
  return {cfg_.restart_backoff_ms, cfg_.restart_backoff_max_ms, cfg_.flap_window_ms, cfg_.flap_max_crashes};
}

void WorkerTable::move(Worker& w, WorkerEvent e) {
  // Every caller here knows the state it moves from; a refusal is a fault of
  // the supervisor's, logged loudly and otherwise harmless (nothing changes).
  if (!w.state.on(e))
    log_->error("worker {}: internal error: event '{}' is not a move from state {}", w.id, worker_event_name(e),
                worker_state_name(w.state));
}

void WorkerTable::record_children() {
  std::vector<ChildRecord> records;
  for (const auto& [id, w] : workers_) {
    if (w.pid <= 0) continue;
    if (auto start = process_start_time(w.pid)) records.push_back({w.pid, *start, id});
  }
  try {
    write_child_records(cfg_.state_dir + "/children", records);
  } catch (const std::exception& e) {
    log_->warn("cannot record the workers' pids: {}", e.what());
  }
}

// A predecessor killed with SIGKILL may leave workers behind for a moment (their
// death signal is on its way) or, if one ignored it, for good. Only processes
// whose pid AND start time match the record are ours; a pid reused by another
// process is left alone.
void WorkerTable::clean_stale_children() {
  const std::string path = cfg_.state_dir + "/children";
  auto records = read_child_records(path);
  if (records.empty()) return;
  for (const auto& line : kill_stale_children(records, 2000)) log_->warn("start-up cleanup: {}", line);
  std::filesystem::remove(path);
}

}  // namespace zkfarm::supervisor
