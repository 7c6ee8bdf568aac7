// The status view (status_view.hpp): rendering only, from a FarmView.
#include "supervisor/status/status_view.hpp"

#include "protocol/messages.hpp"

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

json job_json(const Job& job) {
  json j = job.to_json();
  j["owner_uid"] = job.owner_uid;
  return j;
}

json status_json(const FarmView& v, std::optional<uint32_t> only_owner) {
  json s;
  s["version"] = v.version;
  s["pid"] = v.pid;
  s["state_dir"] = v.state_dir;
  s["state"] = v.stopping ? "stopping" : "running";
  // What happens to work: open (submits accepted, partitions start),
  // draining (submits accepted and queued, no partition starts), closed
  // (stopping: submits refused), refusing (a journal, state-dir or queue fault).
  s["intake"] = v.stopping ? "closed" : v.draining ? "draining" : v.intake_fault.empty() ? "open" : "refusing";
  if (!v.intake_fault.empty()) s["intake_fault"] = v.intake_fault;
  s["ready"] = v.ready;
  s["started_ms"] = v.started_ms;
  s["uptime_s"] = v.uptime_s;
  const JobTable& jobs = v.jobs;
  s["in_flight"] = jobs.count(PartState::kSynthesizing) + jobs.count(PartState::kSynthesized) +
                   jobs.count(PartState::kProving);
  s["partitions"] = {{"queued", jobs.count(PartState::kQueued)},
                     {"synthesizing", jobs.count(PartState::kSynthesizing)},
                     {"synthesized", jobs.count(PartState::kSynthesized)},
                     {"proving", jobs.count(PartState::kProving)}};
  s["rolling"] = v.rolling;
  // Where things are (docs/protocol.md): null when there is none.
  auto path_or_null = [](const std::string& p) { return p.empty() ? json(nullptr) : json(p); };
  s["journal"] = v.journal;
  s["http_address"] = path_or_null(v.http_address);
  s["config_file"] = path_or_null(v.config_file);
  s["log_file"] = path_or_null(v.log_file);
  s["workers"] = json::array();
  const int64_t now = v.now_ms;
  for (const auto& [id, w] : v.workers.all()) {
    json j;
    j["id"] = id;
    j["kind"] = worker_kind_name(w.kind);
    j["pid"] = w.pid;
    j["state"] = worker_state_name(w.state);
    j["version"] = w.version;
    j["backend"] = w.backend;
    if (!w.device.empty()) j["device"] = w.device;
    // The one computing (else the first handed out), and how many it holds in all.
    const std::optional<PartRef> shown = !w.computing.empty() ? std::optional<PartRef>(w.computing.front())
                                         : w.assigned.empty() ? std::nullopt
                                                              : std::optional<PartRef>(w.assigned.front());
    j["partition"] = shown ? json(std::to_string(shown->job) + "/" + std::to_string(shown->index)) : json(nullptr);
    j["job"] = shown ? json(shown->job) : json(nullptr);
    j["partition_index"] = shown ? json(shown->index) : json(nullptr);
    j["held"] = w.assigned.size();
    j["restarts"] = w.history.restarts;
    j["retiring"] = w.retiring;
    j["binary"] = w.binary;
    j["uptime_s"] = w.pid > 0 ? json(double(now - w.started_ms) / 1000.0) : json(nullptr);
    if (v.rolling_worker == id) j["rolling_step"] = v.rolling_step;
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
  s["queue"] = {{"synth", jobs.count(PartState::kQueued)}, {"prove", jobs.count(PartState::kSynthesized)}};
  // A shared queue: the hosts, the queue's counts, what this host holds.
  s["cluster"] = v.cluster;
  s["arena"] = v.arena;
  s["connections"] = v.connections;
  // Jobs: every live one (up to kStatusLiveJobs), then the newest finished
  // ones (status_finished_jobs); counts by state cover all of them.
  std::map<std::string, size_t> by_state;
  json live = json::array(), finished = json::array();
  size_t budget = kJobListBudget, omitted = 0, finished_listed = 0;
  for (const auto& [id, job] : jobs.all()) {
    if (only_owner && job.owner_uid != *only_owner) continue;
    ++by_state[job_state_name(job.state)];
    if (!job.terminal()) {
      if (live.size() >= kStatusLiveJobs || !append_bounded(live, job_json(job), budget)) ++omitted;
    }
  }
  for (auto it = jobs.all().rbegin(); it != jobs.all().rend(); ++it) {
    const Job& job = it->second;
    if ((only_owner && job.owner_uid != *only_owner) || !job.terminal()) continue;
    if (finished_listed < v.status_finished_jobs && append_bounded(finished, job_json(job), budget)) {
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

json jobs_page(const JobTable& jobs, const protocol::JobsPage& req, std::optional<uint32_t> only_owner) {
  std::optional<JobState> want;
  if (const auto& st = req.state) {
    for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kFailed, JobState::kCancelled})
      if (*st == job_state_name(s)) want = s;
    if (!want) return {{"ok", false}, {"error", "state must be queued, running, done, failed or cancelled"}};
  }
  size_t limit = kJobsPageDefault;
  if (req.limit) limit = std::min<size_t>(std::max<uint64_t>(*req.limit, 1), kJobsPageMax);
  // Newest first; `before` is the cursor (a job id) of the next page;
  // `since_ms` (Unix ms) leaves out jobs submitted earlier.
  const uint64_t before = req.before.value_or(UINT64_MAX);
  const uint64_t since = req.since_ms.value_or(0);
  json list = json::array();
  size_t budget = kJobListBudget;
  std::optional<uint64_t> next;
  for (auto it = jobs.all().rbegin(); it != jobs.all().rend(); ++it) {
    const Job& job = it->second;
    if (job.id >= before) continue;
    if (only_owner && job.owner_uid != *only_owner) continue;
    if (want && job.state != *want) continue;
    // Not `break`: ids follow acceptance, but the wall clock may have jumped back.
    if (job.submitted_ms < 0 || uint64_t(job.submitted_ms) < since) continue;
    if (list.size() >= limit || !append_bounded(list, job_json(job), budget)) {
      next = list.empty() ? job.id : list.back()["id"].get<uint64_t>();
      break;
    }
  }
  json reply = {{"ok", true}, {"jobs", std::move(list)}};
  reply["next_before"] = next ? json(*next) : json(nullptr);
  return reply;
}

}  // namespace zkfarm::supervisor
