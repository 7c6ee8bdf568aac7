// The supervisor's lifecycle duties (design.md §4): what happens after a
// worker exits (crash bookkeeping, flapping, the wait for its memory to be
// released), drain and resume, rolling restarts and upgrades, the cleanup of a
// dead predecessor's workers, and the init system's notifications.
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "protocol/messages.hpp"
#include "supervisor/process.hpp"
#include "supervisor/supervisor.hpp"
#include "supervisor/trusted_binary.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

size_t Supervisor::in_flight() const {
  return jobs_.count(PartState::kSynthesizing) + jobs_.count(PartState::kSynthesized) +
         jobs_.count(PartState::kProving);
}

void Supervisor::record_children() {
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
void Supervisor::clean_stale_children() {
  const std::string path = cfg_.state_dir + "/children";
  auto records = read_child_records(path);
  if (records.empty()) return;
  for (const auto& line : kill_stale_children(records, 2000)) log_->warn("start-up cleanup: {}", line);
  std::filesystem::remove(path);
}

void Supervisor::kill_all_workers(const std::string& why) {
  for (auto& [id, w] : workers_) {
    if (w.pid <= 0) continue;
    log_->warn("worker {}: SIGKILL ({})", id, why);
    signal_worker(w, SIGKILL);
    w.kill_sent = true;
  }
}

// Called once a worker's process has been reaped. A crash (not asked for by the
// operator or a stop) counts towards flapping; a GPU worker's replacement waits
// until its memory is released.
void Supervisor::after_exit(Worker& w, bool crashed, const std::string& why, bool no_respawn) {
  const int64_t now = now_ms();
  if (w.pidfd >= 0) ::close(w.pidfd);
  w.pidfd = -1;
  if (w.output) {  // its last words (often the reason it died) before the verdict
    w.output->close(now, [&](std::string_view line) { log_->info("[{}] {}", w.id, line); });
  }
  const pid_t old_pid = w.pid;
  w.pid = 0;
  // Every partition it held goes back. A crash counts (max_attempts, poison
  // partitions) against the one it was computing; when its STARTED never
  // arrived, against all it held, as nothing tells which one killed it.
  for (const PartRef& ref : w.assigned) {
    const bool culprit = !w.computing || (w.computing->job == ref.job && w.computing->index == ref.index);
    requeue(ref, "worker " + w.id + " " + why, crashed && culprit);
  }
  w.assigned.clear();
  w.computing.reset();
  w.state = WorkerState::kExited;
  record_children();

  const bool new_binary_failed = rolling_current_ && rolling_current_->worker == w.id && rolling_current_->started &&
                                 rolling_current_->binary != rolling_current_->old_binary;
  if (crashed && new_binary_failed) {
    // An upgrade whose new binary does not reach READY: stop the upgrade, put
    // the old binary back on this worker; the others never changed.
    const std::string bad = w.binary;
    w.binary = rolling_current_->old_binary;
    end_rolling("worker " + w.id + ": new binary " + bad + " " + why + " before READY; upgrade stopped, old binary " +
                w.binary + " kept");
    w.restart_at_ms = now;  // at once: this is no crash loop of the old binary
    crashed = false;
  } else if (crashed && no_respawn) {
    // Retired, not restarted: its own exit code says a restart cannot help.
    w.failed_reason = why + ": the worker cannot start in this environment (do not respawn)" +
                      (w.output && !w.output->last_line().empty() ? "; its last line: " + w.output->last_line() : "") +
                      "; fix the cause, then `zkfarmctl restart " + w.id + "`";
    log_->error("worker {}: {}", w.id, w.failed_reason);
    ++metrics_.restarts[{worker_kind_name(w.kind), "no_respawn"}];
    w.state = WorkerState::kFailed;
    w.restart_at_ms = 0;
  } else if (crashed) {
    ++w.restarts;
    ++metrics_.restarts[{worker_kind_name(w.kind), w.kill_sent ? w.kill_reason : std::string("crash")}];
    w.crashes.push_back(now);
    std::erase_if(w.crashes, [&](int64_t t) { return now - t > int64_t(cfg_.flap_window_ms); });
    if (w.crashes.size() > cfg_.flap_max_crashes) {
      w.failed_reason = std::to_string(w.crashes.size()) + " crashes within " + std::to_string(cfg_.flap_window_ms) +
                        " ms (flapping); last: " + why;
      log_->error("worker {}: failed (flapping): {}; not restarted until `zkfarmctl restart {}`", w.id,
                  w.failed_reason, w.id);
      w.state = WorkerState::kFailed;
      w.restart_at_ms = 0;
    } else {
      log_->error("worker {}: {}; restarting in {} ms", w.id, why, w.backoff_ms);
      w.restart_at_ms = now + w.backoff_ms;
      w.backoff_ms = std::min(w.backoff_ms * 2, cfg_.restart_backoff_max_ms);
    }
  } else {
    log_->info("worker {}: exited ({})", w.id, why);
  }
  w.kill_sent = false;
  if (w.kind == WorkerKind::kGpu && old_pid > 0) {
    const WorkerState after = w.state;  // exited or failed once released
    w.state = WorkerState::kReleasing;
    w.release_wait = std::make_shared<ReleaseWait>(*release_check_, old_pid, w.device,
                                                   std::chrono::milliseconds(cfg_.release_timeout_ms));
    w.release_detail = "waiting for pid " + std::to_string(old_pid) + "'s memory";
    w.release_logged_ms = now;
    w.after_release = after;
    log_->info("worker {}: waiting until the memory of pid {} is released (release_timeout {} ms)", w.id, old_pid,
               cfg_.release_timeout_ms);
  }
}

void Supervisor::advance_release_waits() {
  const int64_t now = now_ms();
  for (auto& [id, w] : workers_) {
    if (w.state != WorkerState::kReleasing || !w.release_wait) continue;
    ReleaseWait& wait = *w.release_wait;
    ReleaseStatus st = wait.poll();
    w.release_detail = st.detail;
    if (wait.released()) {
      log_->info("worker {}: memory of pid {} released after {} ms", id, wait.pid(), wait.elapsed().count());
      w.release_detail.clear();
      w.release_wait.reset();
      w.state = w.after_release;
      if (w.restart_at_ms && w.restart_at_ms < now) w.restart_at_ms = now;
      continue;
    }
    if (wait.timed_out()) {
      log_->error("worker {}: {}; the worker is failed until `zkfarmctl restart {}`", id, st.detail, id);
      ++metrics_.release_timeouts;
      w.failed_reason = "release wait timed out: " + st.detail;
      w.release_wait.reset();
      w.state = WorkerState::kFailed;
      w.restart_at_ms = 0;
      release_failed_ = true;
      continue;
    }
    if (now - w.release_logged_ms >= 5000) {  // progress in the log every 5 s; status has every poll's
      log_->info("worker {}: release wait: {}", id, st.detail);
      w.release_logged_ms = now;
    }
    if (stopping_) {
      // Tell systemd the stop is still progressing (TimeoutStopSec covers the rest).
      sd_notifyf(0, "EXTEND_TIMEOUT_USEC=%llu\nSTATUS=waiting for GPU memory of pid %d to be released",
                 (unsigned long long)(2 * 1000 * 1000), int(wait.pid()));
    }
  }
}

void Supervisor::start_rolling(const std::vector<std::string>& ids, const std::optional<std::string>& synth_binary,
                               const std::optional<std::string>& gpu_binary, const std::string& what) {
  for (const auto& id : ids) {
    Worker& w = workers_.at(id);
    const auto& fresh = w.kind == WorkerKind::kSynth ? synth_binary : gpu_binary;
    rolling_.push_back({id, fresh.value_or(w.binary), w.binary});
  }
  rolling_op_ = RollingOp{rolling_op_.id + 1, what, "running", "", ids.size(), 0, wall_ms(), 0};
  log_->info("{} {}: {} workers, one at a time", what, rolling_op_.id, ids.size());
}

void Supervisor::end_rolling(const std::string& error) {
  rolling_.clear();
  rolling_current_.reset();
  rolling_op_.result = error.empty() ? "done" : "failed";
  rolling_op_.error = error;
  rolling_op_.finished_ms = wall_ms();
  ++metrics_.rolling[{rolling_op_.what, rolling_op_.result}];
  if (error.empty()) log_->info("{} {}: done, {} workers replaced", rolling_op_.what, rolling_op_.id, rolling_op_.replaced);
  else log_->error("{} {}: failed: {}", rolling_op_.what, rolling_op_.id, error);
}

// One step of a rolling restart: the worker takes no new work, finishes its
// partition, exits (SHUTDOWN), its memory is released, the (new) binary starts
// and must say READY; then the next worker. The farm is never short of more
// than the one worker being replaced.
void Supervisor::advance_rolling() {
  if (stopping_) return;
  if (!rolling_current_) {
    if (rolling_.empty()) return;
    rolling_current_ = rolling_.front();
    rolling_.pop_front();
    log_->info("{}: replacing worker {} ({} -> {})", rolling_op_.what, rolling_current_->worker,
               rolling_current_->old_binary, rolling_current_->binary);
  }
  RollingStep& step = *rolling_current_;
  Worker& w = workers_.at(step.worker);
  if (!step.started) {
    if (w.pid > 0) {  // running: retire it first
      w.retiring = true;
      if (w.state == WorkerState::kIdle) {  // its partition is done: ask it to exit
        send_to_worker(w, protocol::make(protocol::kShutdown));
        w.state = WorkerState::kStopping;
        w.stop_deadline_ms = now_ms() + cfg_.stop_timeout_ms;
      }
      return;
    }
    if (w.state == WorkerState::kReleasing || w.state == WorkerState::kStopping) return;
    // Gone (and its memory released): start the (new) binary.
    w.retiring = false;
    w.binary = step.binary;
    w.crashes.clear();
    w.backoff_ms = cfg_.restart_backoff_ms;
    w.restart_at_ms = 0;
    step.started = true;
    start_worker(w);
    if (w.pid == 0) {  // it could not even be executed
      const std::string bad = w.binary;
      w.binary = step.old_binary;
      end_rolling("worker " + w.id + ": cannot start " + bad + "; " + rolling_op_.what + " stopped, old binary " +
                  w.binary + " kept");
      start_worker(w);
    }
    return;
  }
  if (w.state == WorkerState::kIdle || w.state == WorkerState::kBusy) {
    log_->info("{}: worker {} READY again with version {}", rolling_op_.what, w.id, w.version);
    rolling_current_.reset();
    ++rolling_op_.replaced;
    if (rolling_.empty()) end_rolling("");
  } else if (w.state == WorkerState::kFailed) {
    end_rolling("worker " + w.id + " failed during the " + rolling_op_.what + " (" + w.failed_reason +
                "); the rest was not touched");
  }
}

json Supervisor::lifecycle_request(const std::string& type, const json& req) {
  if (type == "drain") {
    draining_ = true;
    log_->info("drain: no new partitions start; {} in flight", in_flight());
    return {{"ok", true}, {"in_flight", in_flight()}};
  }
  if (type == "resume") {
    draining_ = false;
    log_->info("resume: taking partitions again");
    return {{"ok", true}};
  }
  if (type == "kill") {
    begin_stop("zkfarmctl kill");
    drain_deadline_ms_ = 0;
    kill_all_workers("zkfarmctl kill");
    return {{"ok", true}};
  }
  if (type == "restart" || type == "upgrade") {
    if (stopping_) return {{"ok", false}, {"error", "zkfarmd is stopping"}};
    if (rolling_current_ || !rolling_.empty())
      return {{"ok", false}, {"error", "a rolling " + rolling_op_.what + " is in progress (see status)"}};
    std::vector<std::string> ids;
    std::optional<std::string> synth_bin, gpu_bin;
    if (type == "restart") {
      const std::string target = protocol::get_str(req, "target");
      for (const auto& [id, w] : workers_) {
        if (target == "all" || target == id || target == worker_kind_name(w.kind)) ids.push_back(id);
      }
      if (ids.empty()) return {{"ok", false}, {"error", "no worker '" + target + "' (a worker id, synth, gpu or all)"}};
    } else {
      synth_bin = protocol::find_str(req, "synth");
      gpu_bin = protocol::find_str(req, "gpu");
      if (!synth_bin && !gpu_bin) return {{"ok", false}, {"error", "upgrade needs --synth PATH and/or --gpu PATH"}};
      // Only programs nobody but root or zkfarmd's user could have written
      // (trusted_binary.hpp); what was checked (symlinks resolved) is what runs.
      for (auto* p : {&synth_bin, &gpu_bin}) {
        if (!*p) continue;
        try {
          **p = trusted_binary(**p);
        } catch (const std::exception& e) {
          return {{"ok", false}, {"error", std::string("refused: ") + e.what()}};
        }
      }
      for (const auto& [id, w] : workers_) {
        if ((w.kind == WorkerKind::kSynth && synth_bin) || (w.kind == WorkerKind::kGpu && gpu_bin)) ids.push_back(id);
      }
    }
    start_rolling(ids, synth_bin, gpu_bin, type);
    return {{"ok", true}, {"workers", ids}, {"rolling_id", rolling_op_.id}};
  }
  return {{"ok", false}, {"error", "unknown request '" + type + "'"}};
}

// sd_notify(3): a no-op unless NOTIFY_SOCKET is set (started by systemd).
void Supervisor::notify(const std::string& state) { sd_notify(0, state.c_str()); }

void Supervisor::notify_progress() {
  const int64_t now = now_ms();
  if (!notified_ready_ && !stopping_) {
    bool all = !workers_.empty();
    for (const auto& [id, w] : workers_) all &= w.state == WorkerState::kIdle || w.state == WorkerState::kBusy;
    if (all) {
      notified_ready_ = true;
      notify("READY=1\nSTATUS=all " + std::to_string(workers_.size()) + " workers ready");
      log_->info("all {} workers READY", workers_.size());
    }
  }
  if (watchdog_usec_ && now >= next_watchdog_ms_) {
    notify("WATCHDOG=1");
    next_watchdog_ms_ = now + int64_t(watchdog_usec_ / 2000);
  }
  size_t ready = 0;
  for (const auto& [id, w] : workers_) ready += w.state == WorkerState::kIdle || w.state == WorkerState::kBusy;
  std::string line = std::string(stopping_ ? "stopping" : draining_ ? "draining" : "running") + ": " +
                     std::to_string(ready) + "/" + std::to_string(workers_.size()) + " workers ready, " +
                     std::to_string(in_flight()) + " partitions in flight, " +
                     std::to_string(jobs_.count(PartState::kQueued)) + " queued";
  if (line != last_status_line_) {
    last_status_line_ = line;
    notify("STATUS=" + line);
  }
}

}  // namespace zkfarm::supervisor
