#include "supervisor/jobs.hpp"

#include <algorithm>

namespace zkfarm::supervisor {

std::optional<Priority> parse_priority(const std::string& s) {
  if (s == "low") return Priority::kLow;
  if (s == "normal") return Priority::kNormal;
  if (s == "high") return Priority::kHigh;
  if (s == "critical") return Priority::kCritical;
  return std::nullopt;
}

const char* priority_name(Priority p) {
  switch (p) {
    case Priority::kLow: return "low";
    case Priority::kNormal: return "normal";
    case Priority::kHigh: return "high";
    case Priority::kCritical: return "critical";
  }
  return "?";
}

const char* job_state_name(JobState s) {
  switch (s) {
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kDone: return "done";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "?";
}

size_t Job::count(PartState s) const {
  size_t n = 0;
  for (const auto& p : parts) n += p.state == s;
  return n;
}

nlohmann::json Job::to_json() const {
  nlohmann::json j;
  j["id"] = id;
  j["state"] = job_state_name(state);
  j["priority"] = priority_name(priority);
  j["partitions"] = parts.size();
  j["done"] = count(PartState::kDone);
  j["zkey"] = zkey_source.empty() ? zkey : zkey_source;  // the client's path; the farm proves its private copy
  if (!zkey_sha256.empty()) j["zkey_sha256"] = zkey_sha256;
  j["out"] = out;
  // Who writes OUT/k.proof.json and OUT/k.public.json: zkfarmd as the
  // submitter, or (zkfarmd runs as another user) the client's `wait`/`result`.
  j["delivery"] = client_delivery ? "client" : "zkfarmd";
  if (inputs()) j["circuit"] = circuit;
  if (!error.empty()) j["error"] = error;
  j["submitted_ms"] = submitted_ms;
  j["finished_ms"] = finished_ms ? nlohmann::json(finished_ms) : nlohmann::json(nullptr);
  // Timings (ms): waiting for the first worker, summed synthesis and proving, end to end.
  int64_t synth = 0, prove = 0;
  uint64_t syntheses = 0;
  for (const auto& p : parts) {
    synth += p.synth_ms;
    prove += p.prove_ms;
    syntheses += p.attempts;
  }
  // SYNTHs sent in this instance: a partition re-proved from its slot after a
  // GPU worker died is not synthesized again, so this stays at one a partition.
  j["syntheses"] = syntheses;
  j["queue_wait_ms"] = started_ms ? nlohmann::json(started_ms - submitted_ms) : nlohmann::json(nullptr);
  j["synthesis_ms"] = synth;
  j["proving_ms"] = prove;
  j["total_ms"] = finished_ms ? nlohmann::json(finished_ms - submitted_ms) : nlohmann::json(nullptr);
  return j;
}

uint64_t JobTable::add(Job job) {
  if (job.id == 0) job.id = next_id_;
  next_id_ = std::max(next_id_, job.id + 1);
  for (uint32_t i = 0; i < job.parts.size(); ++i) {
    job.parts[i].index = i;
    job.parts[i].state = PartState::kQueued;
  }
  uint64_t id = job.id;
  jobs_.emplace(id, std::move(job));
  return id;
}

void JobTable::restore(Job job) {
  next_id_ = std::max(next_id_, job.id + 1);
  uint64_t id = job.id;
  jobs_.emplace(id, std::move(job));
}

Job* JobTable::find(uint64_t id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const Job* JobTable::find(uint64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

Partition* JobTable::find(const PartRef& ref) {
  Job* j = find(ref.job);
  if (!j || ref.index >= j->parts.size()) return nullptr;
  return &j->parts[ref.index];
}

std::optional<PartRef> JobTable::next(PartState s) const {
  std::optional<PartRef> best;
  int best_prio = -1;
  for (const auto& [id, job] : jobs_) {  // ascending id: oldest first
    if (job.terminal() || int(job.priority) <= best_prio) continue;
    for (const auto& p : job.parts) {
      if (p.state == s) {
        best = PartRef{id, p.index};
        best_prio = int(job.priority);
        break;
      }
    }
  }
  return best;
}

size_t JobTable::count(PartState s) const {
  size_t n = 0;
  for (const auto& [id, job] : jobs_)
    if (!job.terminal()) n += job.count(s);
  return n;
}

void JobTable::mark_done(const PartRef& ref) {
  Job* job = find(ref.job);
  if (!job) return;
  Partition& p = job->parts[ref.index];
  p.state = PartState::kDone;
  p.delivered = false;
  p.slot.reset();
  p.worker.clear();
}

bool JobTable::mark_delivered(const PartRef& ref, int64_t now_ms) {
  Job* job = find(ref.job);
  if (!job || ref.index >= job->parts.size()) return false;
  job->parts[ref.index].delivered = true;
  if (job->terminal()) return false;
  for (const auto& p : job->parts)
    if (p.state != PartState::kDone || !p.delivered) return false;
  job->state = JobState::kDone;
  job->finished_ms = now_ms;
  return true;
}

std::vector<shm::Slot> JobTable::end_job(Job& job, JobState state, PartState part_state, int64_t now_ms) {
  std::vector<shm::Slot> freed;
  job.state = state;
  job.finished_ms = now_ms;
  for (auto& p : job.parts) {
    if (p.state == PartState::kQueued || p.state == PartState::kSynthesized) {
      if (p.slot) freed.push_back(*p.slot);
      p.slot.reset();
      p.state = part_state;
    }
  }
  return freed;
}

std::vector<shm::Slot> JobTable::fail(uint64_t id, const std::string& error, int64_t now_ms) {
  Job* job = find(id);
  if (!job || job->terminal()) return {};
  job->error = error;
  return end_job(*job, JobState::kFailed, PartState::kFailed, now_ms);
}

std::vector<shm::Slot> JobTable::cancel(uint64_t id, int64_t now_ms) {
  Job* job = find(id);
  if (!job || job->terminal()) return {};
  return end_job(*job, JobState::kCancelled, PartState::kCancelled, now_ms);
}

size_t JobTable::prune(int64_t cutoff_ms) {
  return std::erase_if(jobs_, [&](const auto& kv) {
    return kv.second.terminal() && kv.second.finished_ms != 0 && kv.second.finished_ms < cutoff_ms;
  });
}

}  // namespace zkfarm::supervisor
