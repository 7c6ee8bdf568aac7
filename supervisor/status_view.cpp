// The status view: what `zkfarmctl status` and `jobs` show, bounded so that no
// state of the farm can make a reply outgrow a frame (protocol::kMaxFrameBytes).
// Jobs beyond the bounds are counted, and `jobs` pages through all of them.
#include <unistd.h>

#include "protocol/messages.hpp"
#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

namespace {

// The job lists of one reply stay under this many bytes (as JSON text, which
// is larger than its MessagePack): half a frame leaves room for the rest.
constexpr size_t kJobListBudget = protocol::kMaxFrameBytes / 2;
// Live (not finished) jobs `status` lists; more are counted.
constexpr size_t kStatusLiveJobs = 200;
// `jobs`: entries a page holds by default and at most.
constexpr size_t kJobsPageDefault = 100, kJobsPageMax = 1000;

// Appends `j` unless it would pass `budget`; false when it did not fit.
bool append_bounded(json& list, json j, size_t& budget) {
  const size_t n = j.dump().size();
  if (n > budget) return false;
  budget -= n;
  list.push_back(std::move(j));
  return true;
}

}  // namespace

json Supervisor::job_view(const Job& job) const {
  json j = job.to_json();
  j["owner_uid"] = job.owner_uid;
  return j;
}

json Supervisor::status(std::optional<uint32_t> only_owner) const {
  json s;
  s["version"] = kZkfarmVersion;
  s["pid"] = getpid();
  s["state_dir"] = cfg_.state_dir;
  s["state"] = stopping_ ? "stopping" : "running";
  // What happens to work: open (submits accepted, partitions start),
  // draining (submits accepted and queued, no partition starts), closed
  // (stopping: submits refused), refusing (a journal or state-dir fault).
  const std::string fault =
      !intake_fault_.empty() ? intake_fault_ : pg_ && !cluster_.reachable ? "the queue is unreachable: " + cluster_.fault : "";
  s["intake"] = stopping_ ? "closed" : draining_ ? "draining" : fault.empty() ? "open" : "refusing";
  if (!fault.empty()) s["intake_fault"] = fault;
  s["ready"] = ready_.load();
  s["started_ms"] = started_wall_ms_;
  s["uptime_s"] = double(now_ms() - started_steady_ms_) / 1000.0;
  s["in_flight"] = in_flight();
  s["partitions"] = {{"queued", jobs_.count(PartState::kQueued)},
                     {"synthesizing", jobs_.count(PartState::kSynthesizing)},
                     {"synthesized", jobs_.count(PartState::kSynthesized)},
                     {"proving", jobs_.count(PartState::kProving)}};
  // The current rolling restart/upgrade, or the last one with its result.
  json rolling = nullptr;
  if (rolling_op_.id) {
    rolling = {{"id", rolling_op_.id},
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
  s["rolling"] = rolling;
  s["workers"] = json::array();
  const int64_t now = now_ms();
  for (const auto& [id, w] : workers_->all()) {
    json j;
    j["id"] = id;
    j["kind"] = worker_kind_name(w.kind);
    j["pid"] = w.pid;
    j["state"] = worker_state_name(w.state);
    j["version"] = w.version;
    j["backend"] = w.backend;
    if (!w.device.empty()) j["device"] = w.device;
    // The one computing (else the first handed out), and how many it holds in all.
    const std::optional<PartRef> shown = w.computing ? w.computing
                                         : w.assigned.empty() ? std::nullopt
                                                              : std::optional<PartRef>(w.assigned.front());
    j["partition"] = shown ? json(std::to_string(shown->job) + "/" + std::to_string(shown->index)) : json(nullptr);
    j["job"] = shown ? json(shown->job) : json(nullptr);
    j["partition_index"] = shown ? json(shown->index) : json(nullptr);
    j["held"] = w.assigned.size();
    j["restarts"] = w.restarts;
    j["retiring"] = w.retiring;
    j["binary"] = w.binary;
    j["uptime_s"] = w.pid > 0 ? json(double(now - w.started_ms) / 1000.0) : json(nullptr);
    if (rolling_current_ && rolling_current_->worker == id) j["rolling_step"] = rolling_step(w);
    if (w.state == WorkerState::kExited && w.restart_at_ms)
      j["restart_in_ms"] = std::max<int64_t>(0, w.restart_at_ms - now);
    if (w.state == WorkerState::kReleasing || !w.release_detail.empty()) j["release"] = w.release_detail;
    if (w.release_wait)
      j["release_wait"] = {{"pid", w.release_wait->pid()},
                           {"elapsed_ms", w.release_wait->elapsed().count()},
                           {"timeout_ms", w.release_wait->timeout().count()}};
    if (w.state == WorkerState::kFailed) j["failed_reason"] = w.failed_reason;
    s["workers"].push_back(j);
  }
  s["queue"] = {{"synth", jobs_.count(PartState::kQueued)}, {"prove", jobs_.count(PartState::kSynthesized)}};
  // A shared queue: the hosts, the queue's counts, what this host holds.
  s["cluster"] = cluster_status();
  s["arena"] = {{"kind", arena_.kind()},
                {"name", arena_.name()},
                {"bytes", slots_.capacity()},
                {"used", slots_.used()},
                {"free", slots_.capacity() - slots_.used()},
                {"slots", slots_.slots_in_use()}};
  s["connections"] = {{"control", control_cap_ ? control_cap_->open() : 0},
                      {"control_sheds", control_cap_ ? control_cap_->sheds() : 0}};
  // Jobs: every live one (up to kStatusLiveJobs), then the newest finished
  // ones (status_finished_jobs); counts by state cover all of them.
  std::map<std::string, size_t> by_state;
  json live = json::array(), finished = json::array();
  size_t budget = kJobListBudget, omitted = 0, finished_listed = 0;
  for (const auto& [id, job] : jobs_.all()) {
    if (only_owner && job.owner_uid != *only_owner) continue;
    ++by_state[job_state_name(job.state)];
    if (!job.terminal()) {
      if (live.size() >= kStatusLiveJobs || !append_bounded(live, job_view(job), budget)) ++omitted;
    }
  }
  for (auto it = jobs_.all().rbegin(); it != jobs_.all().rend(); ++it) {
    const Job& job = it->second;
    if ((only_owner && job.owner_uid != *only_owner) || !job.terminal()) continue;
    if (finished_listed < cfg_.status_finished_jobs && append_bounded(finished, job_view(job), budget)) {
      ++finished_listed;
    } else {
      ++omitted;
    }
  }
  s["jobs"] = std::move(live);
  for (auto& j : finished) s["jobs"].push_back(std::move(j));
  s["job_counts"] = by_state;
  s["jobs_omitted"] = omitted;  // listed by `zkfarmctl jobs`, page by page
  return s;
}

std::string Supervisor::rolling_step(const Worker& w) const {
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

json Supervisor::jobs_page(const json& req, std::optional<uint32_t> only_owner) const {
  std::optional<JobState> want;
  if (auto st = protocol::find_str(req, "state")) {
    for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kFailed, JobState::kCancelled})
      if (*st == job_state_name(s)) want = s;
    if (!want) return {{"ok", false}, {"error", "state must be queued, running, done, failed or cancelled"}};
  }
  size_t limit = kJobsPageDefault;
  if (req.contains("limit")) limit = std::min<size_t>(std::max<uint64_t>(protocol::get_u64(req, "limit"), 1), kJobsPageMax);
  // Newest first; `before` is the cursor (a job id) of the next page;
  // `since_ms` (Unix ms) leaves out jobs submitted earlier.
  const uint64_t before = req.contains("before") ? protocol::get_u64(req, "before") : UINT64_MAX;
  const uint64_t since = req.contains("since_ms") ? protocol::get_u64(req, "since_ms") : 0;
  json list = json::array();
  size_t budget = kJobListBudget;
  std::optional<uint64_t> next;
  for (auto it = jobs_.all().rbegin(); it != jobs_.all().rend(); ++it) {
    const Job& job = it->second;
    if (job.id >= before) continue;
    if (only_owner && job.owner_uid != *only_owner) continue;
    if (want && job.state != *want) continue;
    // Not `break`: ids follow acceptance, but the wall clock may have jumped back.
    if (job.submitted_ms < 0 || uint64_t(job.submitted_ms) < since) continue;
    if (list.size() >= limit || !append_bounded(list, job_view(job), budget)) {
      next = list.empty() ? job.id : list.back()["id"].get<uint64_t>();
      break;
    }
  }
  json reply = {{"ok", true}, {"jobs", std::move(list)}};
  reply["next_before"] = next ? json(*next) : json(nullptr);
  return reply;
}

}  // namespace zkfarm::supervisor
