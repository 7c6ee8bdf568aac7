// The farm's lifecycle (lifecycle.hpp): stop and drain, resume, rolling
// restarts and upgrades, sd_notify. The workers' own lives (exits, respawns,
// flapping, release waits) are the worker table's (worker_table.hpp).
#include "supervisor/workers/lifecycle.hpp"

#include <signal.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "protocol/messages.hpp"
#include "supervisor/clock.hpp"
#include "supervisor/workers/process.hpp"
#include "supervisor/workers/trusted_binary.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

Lifecycle::Lifecycle(const Config& cfg, std::shared_ptr<spdlog::logger> log, WorkerTable& workers,
                     const JobTable& jobs, Metrics& metrics, EventBus& bus,
                     std::function<void(const Worker&)> send_shutdown)
    : cfg_(cfg), log_(std::move(log)), workers_(workers), jobs_(jobs), metrics_(metrics), bus_(bus),
      send_shutdown_(std::move(send_shutdown)) {
  if (sd_watchdog_enabled(0, &watchdog_usec_) <= 0) watchdog_usec_ = 0;
  bus_.on<ServiceNotice>([this](const ServiceNotice& e) { notify(e.line); });
}

size_t Lifecycle::in_flight() const {
  return jobs_.count(PartState::kSynthesizing) + jobs_.count(PartState::kSynthesized) +
         jobs_.count(PartState::kProving);
}

void Lifecycle::begin_stop(const std::string& reason) {
  if (stopping_) return;
  stopping_ = true;
  if (rolling_running()) end_rolling("zkfarmd is stopping (" + reason + ")");
  notify("STOPPING=1\nSTATUS=stopping: " + reason);
  bus_.emit(ClaimsToHandBack{"stopping: " + reason});
  drain_deadline_ms_ = steady_ms() + cfg_.drain_timeout_ms;
  log_->info("stopping ({}): intake closed, letting in-flight partitions finish (drain_timeout {} ms)", reason,
             cfg_.drain_timeout_ms);
}

void Lifecycle::set_drain_timeout_s(uint64_t seconds) {
  // Clamped, never wrapped: 2^64 - 1 s once became a deadline in the past
  // (int64 overflow) and the stop killed partitions in flight.
  drain_deadline_ms_ = steady_ms() + int64_t(std::min<uint64_t>(seconds, kMaxDrainSeconds)) * 1000;
}

void Lifecycle::stop_now(const std::string& why) {
  begin_stop(why);
  drain_deadline_ms_ = 0;
  workers_.kill_all(why);
}

// One step of a stop; true when it is complete (every worker reaped).
bool Lifecycle::advance_stop(int64_t now) {
  const bool in_flight = this->in_flight() > 0;
  bool workers_alive = false, releasing = false;
  for (auto& [id, w] : workers_.all()) {
    workers_alive |= w.pid > 0;
    releasing |= w.state == WorkerState::kReleasing;  // the exit waits for their memory too
  }
  if (!shutdown_sent_ && (!in_flight || now >= drain_deadline_ms_ || !workers_alive)) {
    if (in_flight) log_->warn("drain_timeout passed with partitions in flight; stopping the workers anyway");
    for (auto& [id, w] : workers_.all()) {
      if (w.pid <= 0) continue;
      workers_.ask_to_stop(w, send_shutdown_, now);
    }
    shutdown_sent_ = true;
  }
  return shutdown_sent_ && !workers_alive && !releasing;
}


void Lifecycle::start_rolling(const std::vector<std::string>& ids, const PerKind<std::optional<std::string>>& binaries,
                              const std::string& what) {
  for (const auto& id : ids) {
    Worker& w = *workers_.find(id);
    const std::optional<std::string>& fresh = binaries[size_t(w.kind)];
    rolling_.push_back({id, fresh.value_or(w.binary), w.binary});
  }
  rolling_op_ = RollingOp{rolling_op_.id + 1, what, "running", "", ids.size(), 0, wall_ms(), 0};
  log_->info("{} {}: {} workers, one at a time", what, rolling_op_.id, ids.size());
}

void Lifecycle::end_rolling(const std::string& error) {
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
void Lifecycle::advance_rolling(int64_t now) {
  if (stopping_) return;
  if (!rolling_current_) {
    if (rolling_.empty()) return;
    rolling_current_ = rolling_.front();
    rolling_.pop_front();
    log_->info("{}: replacing worker {} ({} -> {})", rolling_op_.what, rolling_current_->worker,
               rolling_current_->old_binary, rolling_current_->binary);
  }
  RollingStep& step = *rolling_current_;
  Worker& w = *workers_.find(step.worker);
  if (!step.started) {
    if (w.pid > 0) {  // running: retire it first
      w.retiring = true;
      if (w.state == WorkerState::kIdle)  // its partition is done: ask it to exit
        workers_.ask_to_stop(w, send_shutdown_, now);
      return;
    }
    if (w.state == WorkerState::kReleasing || w.state == WorkerState::kStopping) return;
    // Gone (and its memory released): start the (new) binary.
    w.retiring = false;
    w.binary = step.binary;
    w.history.crash_times.clear();
    w.history.backoff_ms = cfg_.restart_backoff_ms;
    w.restart_at_ms = 0;
    step.started = true;
    workers_.start(w, now);
    if (w.pid == 0) {  // it could not even be executed
      const std::string bad = w.binary;
      w.binary = step.old_binary;
      end_rolling("worker " + w.id + ": cannot start " + bad + "; " + rolling_op_.what + " stopped, old binary " +
                  w.binary + " kept");
      workers_.start(w, now);
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

void Lifecycle::on_worker_gone(Worker& w, bool crashed, const std::string& why, bool no_respawn, int64_t now) {
  // An upgrade whose new binary does not reach READY: the upgrade stops and
  // the old binary goes back on this worker at once (no crash of the old
  // one); the other workers never changed.
  const bool new_binary_failed = crashed && rolling_current_ && rolling_current_->worker == w.id &&
                                 rolling_current_->started && rolling_current_->binary != rolling_current_->old_binary;
  if (new_binary_failed) {
    const std::string bad = w.binary;
    w.binary = rolling_current_->old_binary;
    end_rolling("worker " + w.id + ": new binary " + bad + " " + why + " before READY; upgrade stopped, old binary " +
                w.binary + " kept");
  }
  workers_.after_exit(w, crashed && !new_binary_failed, why, no_respawn, new_binary_failed, now);
}

json Lifecycle::rolling_json() const {
  if (!rolling_op_.id) return nullptr;
  return {{"id", rolling_op_.id},
          {"what", rolling_op_.what},
          {"result", rolling_op_.result},
          {"current", rolling_current_ ? json(rolling_current_->worker) : json(nullptr)},
          {"queued", rolling_.size()},
          {"replaced", rolling_op_.replaced},
          {"total", rolling_op_.total},
          {"error", rolling_op_.error},
          {"started_ms", rolling_op_.started_ms},
          {"finished_ms", rolling_op_.finished_ms ? json(rolling_op_.finished_ms) : json(nullptr)}};
}

std::string Lifecycle::rolling_worker() const { return rolling_current_ ? rolling_current_->worker : ""; }

std::string Lifecycle::rolling_step(const Worker& w) const {
  if (!rolling_current_ || rolling_current_->worker != w.id) return {};
  const bool fresh = rolling_current_->binary != rolling_current_->old_binary;
  if (!rolling_current_->started) {
    if (w.state == WorkerState::kBusy) return "finishing its " + std::to_string(w.assigned.size()) + " partitions";
    if (w.state == WorkerState::kStopping) return "stopping";
    if (w.state == WorkerState::kReleasing) return "waiting for its memory to be released";
    return "about to start " + std::string(fresh ? "the new binary" : "again");
  }
  return std::string("waiting for READY from ") + (fresh ? "the new binary" : "the restarted worker");
}

json Lifecycle::drain() {
  draining_ = true;
  bus_.emit(ClaimsToHandBack{"drain"});
  log_->info("drain: no new partitions start; {} in flight", in_flight());
  return {{"ok", true}, {"in_flight", in_flight()}};
}

json Lifecycle::resume() {
  draining_ = false;
  log_->info("resume: taking partitions again");
  return {{"ok", true}};
}

// `restart TARGET` or `upgrade --synth/--gpu PATH`: the workers it replaces, one at a time.
json Lifecycle::roll(const protocol::Rolling& req) {
  const std::string type = req.upgrade ? "upgrade" : "restart";
  if (stopping_) return {{"ok", false}, {"error", "zkfarmd is stopping"}};
  if (rolling_current_ || !rolling_.empty())
    return {{"ok", false}, {"error", "a rolling " + rolling_op_.what + " is in progress (see status)"}};
  std::vector<std::string> ids;
  PerKind<std::optional<std::string>> binaries;  // upgrade: each kind's new executable, if any
  if (type == "restart") {
    const std::string& target = req.target;
    for (const auto& [id, w] : workers_.all()) {
      if (target == "all" || target == id || target == worker_kind_name(w.kind)) ids.push_back(id);
    }
    if (ids.empty()) return {{"ok", false}, {"error", "no worker '" + target + "' (a worker id, synth, gpu or all)"}};
  } else {
    bool any = false;
    for (const WorkerKindInfo& k : kWorkerKinds) {
      binaries[size_t(k.kind)] = req.*k.upgrade_binary;
      any = any || binaries[size_t(k.kind)].has_value();
    }
    if (!any) return {{"ok", false}, {"error", "upgrade needs --synth PATH and/or --gpu PATH"}};
    // Only programs inside the configured upgrade_dir (an operator's choice
    // in the config file, not a request's: any root-owned program, such as
    // /usr/bin/env, would otherwise run as a worker) that nobody but root
    // or zkfarmd's user could have written (trusted_binary.hpp); what was
    // checked (symlinks resolved) is what runs.
    if (cfg_.upgrade_dir.empty())
      return {{"ok", false},
              {"error", "refused: upgrades are off: set upgrade_dir in zkfarmd's configuration to the folder new "
                        "builds are installed under (e.g. /opt/zkfarm); zkfarmd then runs only binaries inside it "
                        "(docs/configuration.md)"}};
    for (std::optional<std::string>& p : binaries) {
      if (!p) continue;
      try {
        *p = trusted_binary(*p);
        if (!inside_folder(*p, cfg_.upgrade_dir))
          return {{"ok", false},
                  {"error", "refused: " + *p + " is not inside upgrade_dir (" + cfg_.upgrade_dir +
                                "): zkfarmd runs new worker binaries only from there"}};
      } catch (const std::exception& e) {
        return {{"ok", false}, {"error", std::string("refused: ") + e.what()}};
      }
    }
    for (const auto& [id, w] : workers_.all()) {
      if (binaries[size_t(w.kind)]) ids.push_back(id);
    }
  }
  start_rolling(ids, binaries, type);
  return {{"ok", true}, {"workers", ids}, {"rolling_id", rolling_op_.id}};
}

// sd_notify(3): a no-op unless NOTIFY_SOCKET is set (started by systemd).
void Lifecycle::notify(const std::string& state) { sd_notify(0, state.c_str()); }

void Lifecycle::notify_progress(int64_t now) {
  // Workers failed for good (flapping, an exit code that says a restart
  // cannot help, a release timeout) stay failed until `zkfarmctl restart`;
  // a worker that hangs before READY, or crashes slower than flapping
  // counts, may never settle: the start is settled once every other worker
  // is READY, or once a worker has had its full ready_timeout_ms (+ 5 s for
  // its spawn and the kill) and still is not.
  if (first_progress_ms_ < 0) first_progress_ms_ = now;
  // Counts every pass (the STATUS line); the lists only once, for READY=1.
  const size_t ready = workers_.ready(), n_failed = workers_.failed();
  const bool settled = ready + n_failed == workers_.size();
  const bool settle_time_passed = now - first_progress_ms_ >= int64_t(cfg_.ready_timeout_ms) + 5000;
  if (!notified_ready_ && !stopping_ && workers_.size() > 0 && (settled || settle_time_passed)) {
    // READY=1 also when some failed or are not READY in time: the farm serves
    // with the workers it has and systemd's start does not hang for
    // TimeoutStartSec on one broken worker (a restart of zkfarmd cannot fix a
    // worker's environment); STATUS, `zkfarmctl ready`, /readyz and the
    // alert rules say degraded.
    notified_ready_ = true;
    if (ready == workers_.size()) {
      notify("READY=1\nSTATUS=all " + std::to_string(workers_.size()) + " workers ready");
      log_->info("all {} workers READY", workers_.size());
    } else {
      std::string failed, waiting;
      for (const auto& [id, w] : workers_.all()) {
        if (w.state == WorkerState::kFailed) {
          if (failed.size() < 400) failed += (failed.empty() ? "" : "; ") + id + ": " + w.failed_reason.substr(0, 160);
        } else if (w.state != WorkerState::kIdle && w.state != WorkerState::kBusy && waiting.size() < 200) {
          waiting += (waiting.empty() ? "" : ", ") + id + " " + worker_state_name(w.state);
        }
      }
      std::string why;
      if (n_failed) why = std::to_string(n_failed) + " of " + std::to_string(workers_.size()) + " workers failed: " + failed;
      if (!waiting.empty())
        why += (why.empty() ? "" : "; ") + std::string("not READY after ") +
               std::to_string((now - first_progress_ms_) / 1000) + " s: " + waiting;
      notify("READY=1\nSTATUS=degraded: " + why);
      log_->error("started degraded: {}; the other workers serve; `zkfarmctl restart WORKER` once the cause is fixed",
                  why);
    }
  }
  if (watchdog_usec_ && now >= next_watchdog_ms_) {
    notify("WATCHDOG=1");
    next_watchdog_ms_ = now + int64_t(watchdog_usec_ / 2000);
  }
  std::string line = std::string(run_state()) + (n_failed ? " (degraded)" : "") + ": " + std::to_string(ready) + "/" +
                     std::to_string(workers_.size()) + " workers ready" +
                     (n_failed ? ", " + std::to_string(n_failed) + " failed" : std::string()) + ", " +
                     std::to_string(in_flight()) + " partitions in flight, " +
                     std::to_string(jobs_.count(PartState::kQueued)) + " queued";
  if (line != last_status_line_) {
    last_status_line_ = line;
    notify("STATUS=" + line);
  }
}

}  // namespace zkfarm::supervisor
