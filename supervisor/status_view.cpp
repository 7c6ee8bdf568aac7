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
  s["intake"] = stopping_ ? "closed" : draining_ ? "draining" : intake_fault_.empty() ? "open" : "refusing";
  if (!intake_fault_.empty()) s["intake_fault"] = intake_fault_;
  s["in_flight"] = in_flight();
  json rolling = nullptr;
  if (rolling_current_ || !rolling_.empty() || !rolling_error_.empty()) {
    rolling = {{"what", rolling_what_},
               {"current", rolling_current_ ? json(rolling_current_->worker) : json(nullptr)},
               {"queued", rolling_.size()},
               {"error", rolling_error_}};
  }
  s["rolling"] = rolling;
  s["workers"] = json::array();
  for (const auto& [id, w] : workers_) {
    json j;
    j["id"] = id;
    j["kind"] = worker_kind_name(w.kind);
    j["pid"] = w.pid;
    j["state"] = worker_state_name(w.state);
    j["version"] = w.version;
    j["backend"] = w.backend;
    // The one computing (else the first handed out), and how many it holds in all.
    const std::optional<PartRef> shown = w.computing ? w.computing
                                         : w.assigned.empty() ? std::nullopt
                                                              : std::optional<PartRef>(w.assigned.front());
    j["partition"] = shown ? json(std::to_string(shown->job) + "/" + std::to_string(shown->index)) : json(nullptr);
    j["held"] = w.assigned.size();
    j["restarts"] = w.restarts;
    j["retiring"] = w.retiring;
    j["binary"] = w.binary;
    if (w.state == WorkerState::kReleasing || !w.release_detail.empty()) j["release"] = w.release_detail;
    if (w.state == WorkerState::kFailed) j["failed_reason"] = w.failed_reason;
    s["workers"].push_back(j);
  }
  s["queue"] = {{"synth", jobs_.count(PartState::kQueued)}, {"prove", jobs_.count(PartState::kSynthesized)}};
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

json Supervisor::jobs_page(const json& req, std::optional<uint32_t> only_owner) const {
  std::optional<JobState> want;
  if (auto st = protocol::find_str(req, "state")) {
    for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kFailed, JobState::kCancelled})
      if (*st == job_state_name(s)) want = s;
    if (!want) return {{"ok", false}, {"error", "state must be queued, running, done, failed or cancelled"}};
  }
  size_t limit = kJobsPageDefault;
  if (req.contains("limit")) limit = std::min<size_t>(std::max<uint64_t>(protocol::get_u64(req, "limit"), 1), kJobsPageMax);
  // Newest first; `before` is the cursor (a job id) of the next page.
  const uint64_t before = req.contains("before") ? protocol::get_u64(req, "before") : UINT64_MAX;
  json list = json::array();
  size_t budget = kJobListBudget;
  std::optional<uint64_t> next;
  for (auto it = jobs_.all().rbegin(); it != jobs_.all().rend(); ++it) {
    const Job& job = it->second;
    if (job.id >= before) continue;
    if (only_owner && job.owner_uid != *only_owner) continue;
    if (want && job.state != *want) continue;
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
