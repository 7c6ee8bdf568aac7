#include "supervisor/model/jobs.hpp"

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
  j["done"] = done_count();
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
  int64_t synth = shared ? shared_synth_ms : 0, prove = shared ? shared_prove_ms : 0;
  uint64_t syntheses = shared ? shared_attempts : 0;
  for (const auto& p : parts) {
    if (shared) break;  // the queue's sums cover every host's partitions
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

uint64_t JobTable::add(Job job, int64_t now) {
  if (job.id == 0) job.id = next_id_;
  next_id_ = std::max(next_id_, job.id + 1);
  for (uint32_t i = 0; i < job.parts.size(); ++i) {
    job.parts[i].index = i;
    job.parts[i].state = PartState::kQueued;
    job.parts[i].queued_since_ms = now;
  }
  uint64_t id = job.id;
  if (jobs_.emplace(id, std::move(job)).second) live_.insert(id);
  return id;
}

void JobTable::restore(Job job) {
  next_id_ = std::max(next_id_, job.id + 1);
  uint64_t id = job.id;
  const bool live = !job.terminal();
  if (jobs_.emplace(id, std::move(job)).second && live) live_.insert(id);
}

Job* JobTable::find_mut(uint64_t id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const Job* JobTable::find(uint64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

Partition* JobTable::find_mut(const PartRef& ref) {
  Job* j = find_mut(ref.job);
  if (!j || ref.index >= j->parts.size()) return nullptr;
  return &j->parts[ref.index];
}

const Partition* JobTable::find(const PartRef& ref) const {
  const Job* j = find(ref.job);
  if (!j || ref.index >= j->parts.size()) return nullptr;
  return &j->parts[ref.index];
}

std::optional<PartRef> JobTable::next(PartState s) const {
  std::optional<PartRef> best;
  int best_prio = -1;
  for (auto it = live_.begin(); it != live_.end();) {  // ascending id: oldest first
    auto found = jobs_.find(*it);
    if (found == jobs_.end() || found->second.terminal()) {
      it = live_.erase(it);
      continue;
    }
    const Job& job = found->second;
    ++it;
    if (int(job.priority) <= best_prio) continue;
    for (const auto& p : job.parts) {
      if (p.state == s) {
        best = PartRef{job.id, p.index};
        best_prio = int(job.priority);
        break;
      }
    }
  }
  return best;
}

std::vector<PartRef> JobTable::more_of_job(const PartRef& first, PartState s, size_t n) const {
  std::vector<PartRef> out;
  const Job* job = find(first.job);
  if (!job || job->terminal()) return out;
  for (const auto& p : job->parts) {
    if (out.size() >= n) break;
    if (p.index > first.index && p.state == s) out.push_back(PartRef{job->id, p.index});
  }
  return out;
}

size_t JobTable::count(PartState s) const {
  size_t n = 0;
  for (auto it = live_.begin(); it != live_.end();) {
    auto found = jobs_.find(*it);
    if (found == jobs_.end() || found->second.terminal()) {
      it = live_.erase(it);
      continue;
    }
    n += found->second.count(s);
    ++it;
  }
  return n;
}

bool JobTable::start_synthesis(const PartRef& ref, const shm::Slot& slot, const std::string& worker, int64_t now,
                               int64_t wall) {
  Job* job = find_mut(ref.job);
  Partition* p = find_mut(ref);
  if (!job || !p) return false;
  p->slot = slot;
  p->state = PartState::kSynthesizing;
  p->worker = worker;
  p->stage_start_ms = now;
  p->queued_ms = 0;
  p->wait_ms = std::max<int64_t>(0, now - p->queued_since_ms);  // a new attempt: its own waits only
  p->delivery_ms.reset();
  ++p->attempts;
  if (job->state == JobState::kQueued) job->state = JobState::kRunning;
  if (job->started_ms != 0) return false;
  job->started_ms = wall;
  return true;
}

void JobTable::worker_started(const PartRef& ref, int64_t now) {
  if (Partition* p = find_mut(ref)) {
    p->queued_ms += now - p->stage_start_ms;  // time queued inside the worker is not compute time
    p->wait_ms += now - p->stage_start_ms;
    p->stage_start_ms = now;
  }
}

void JobTable::synthesized(const PartRef& ref, int64_t now) {
  if (Partition* p = find_mut(ref)) {
    p->worker.clear();
    p->synth_ms = now - p->stage_start_ms;
    p->synthesized_at_ms = now;
    p->state = PartState::kSynthesized;
  }
}

void JobTable::set_public_signals(const PartRef& ref, std::string public_json, std::vector<U256> values) {
  if (Partition* p = find_mut(ref)) {
    p->public_json = std::move(public_json);
    p->public_values = std::move(values);
  }
}

void JobTable::start_proving(const PartRef& ref, const std::string& worker, int64_t now) {
  if (Partition* p = find_mut(ref)) {
    p->state = PartState::kProving;
    p->worker = worker;
    p->stage_start_ms = now;
    p->queued_ms = 0;
    p->wait_ms += std::max<int64_t>(0, now - p->synthesized_at_ms);  // ready, waiting for a GPU worker
  }
}

void JobTable::proving_ended(const PartRef& ref, int64_t now) {
  if (Partition* p = find_mut(ref)) {
    p->worker.clear();
    p->prove_ms = now - p->stage_start_ms;
    p->proved_at_ms = now;
  }
}

void JobTable::reprove_in_slot(const PartRef& ref, const shm::Slot& renewed, int64_t now) {
  if (Partition* p = find_mut(ref)) {
    p->worker.clear();
    p->slot = renewed;
    p->state = PartState::kSynthesized;
    p->synthesized_at_ms = now;  // waits for a GPU worker again from now
  }
}

std::optional<shm::Slot> JobTable::back_to_queue(const PartRef& ref, int64_t now) {
  Job* job = find_mut(ref.job);
  Partition* p = find_mut(ref);
  if (!job || !p) return std::nullopt;
  std::optional<shm::Slot> slot = p->slot;
  p->slot.reset();
  p->worker.clear();
  if (job->terminal()) {
    if (p->state != PartState::kDone)
      p->state = job->state == JobState::kCancelled ? PartState::kCancelled : PartState::kFailed;
  } else if (p->state == PartState::kSynthesizing || p->state == PartState::kProving ||
             p->state == PartState::kSynthesized) {
    // A shared queue's partition whose lease was lost meanwhile is not this
    // host's to queue: another host will claim it.
    p->state = job->shared && p->lease == 0 ? PartState::kElsewhere : PartState::kQueued;
    p->queued_since_ms = now;
  }
  return slot;
}

unsigned JobTable::count_fault(const PartRef& ref) {
  Partition* p = find_mut(ref);
  return p ? ++p->faults : 0;
}

std::optional<shm::Slot> JobTable::fail_partition(const PartRef& ref) {
  Partition* p = find_mut(ref);
  if (!p) return std::nullopt;
  std::optional<shm::Slot> slot = p->slot;
  p->slot.reset();
  p->worker.clear();
  p->state = PartState::kFailed;
  return slot;
}

void JobTable::mark_done(const PartRef& ref, int64_t now, std::string proof) {
  Partition* p = find_mut(ref);
  if (!p) return;
  p->verify_ms = std::max<int64_t>(0, now - p->proved_at_ms);
  p->verified_at_ms = now;
  p->state = PartState::kDone;
  p->proof = std::move(proof);
  p->delivered = false;
  p->slot.reset();
  p->worker.clear();
}

bool JobTable::mark_delivered(const PartRef& ref, int64_t now, int64_t wall, const std::string& error) {
  Job* job = find_mut(ref.job);
  if (!job || ref.index >= job->parts.size()) return false;
  Partition& part = job->parts[ref.index];
  part.delivered = true;
  if (error.empty() && !job->client_delivery) part.delivery_ms = std::max<int64_t>(0, now - part.verified_at_ms);
  if (!error.empty() && job->delivery_error.empty()) job->delivery_error = error;
  if (job->terminal() || job->shared) return false;  // a shared queue's job ends by its row (mirror)
  for (const auto& p : job->parts)
    if (p.state != PartState::kDone || !p.delivered) return false;
  job->finished_ms = wall;
  if (job->delivery_error.empty()) {
    job->state = JobState::kDone;
  } else {
    job->state = JobState::kFailed;
    job->error = job->delivery_error;
  }
  return true;
}

std::vector<shm::Slot> JobTable::end_job(Job& job, JobState state, PartState part_state, int64_t now_ms) {
  std::vector<shm::Slot> freed;
  job.state = state;
  job.finished_ms = now_ms;
  for (auto& p : job.parts) {
    if (p.state == PartState::kQueued || p.state == PartState::kSynthesized || p.state == PartState::kElsewhere) {
      if (p.slot) freed.push_back(*p.slot);
      p.slot.reset();
      p.state = part_state;
      p.lease = 0;
    }
  }
  return freed;
}

std::vector<shm::Slot> JobTable::fail(uint64_t id, const std::string& error, int64_t now_ms) {
  Job* job = find_mut(id);
  if (!job || job->terminal()) return {};
  job->error = error;
  return end_job(*job, JobState::kFailed, PartState::kFailed, now_ms);
}

std::vector<shm::Slot> JobTable::cancel(uint64_t id, int64_t now_ms) {
  Job* job = find_mut(id);
  if (!job || job->terminal()) return {};
  return end_job(*job, JobState::kCancelled, PartState::kCancelled, now_ms);
}

size_t JobTable::prune(int64_t cutoff_ms) {
  return std::erase_if(jobs_, [&](const auto& kv) {
    return kv.second.terminal() && kv.second.finished_ms != 0 && kv.second.finished_ms < cutoff_ms;
  });
}

std::vector<shm::Slot> JobTable::mirror(const Job& row) {
  Job* job = find_mut(row.id);
  if (!job) {
    Job copy = row;
    copy.shared = true;
    for (uint32_t k = 0; k < copy.parts.size(); ++k) {
      copy.parts[k].index = k;
      copy.parts[k].state = copy.terminal() ? (copy.state == JobState::kDone ? PartState::kDone
                                               : copy.state == JobState::kCancelled ? PartState::kCancelled
                                                                                    : PartState::kFailed)
                                            : PartState::kElsewhere;
    }
    restore(std::move(copy));
    return {};
  }
  job->shared_done = row.shared_done;
  job->shared_attempts = row.shared_attempts;
  job->shared_synth_ms = row.shared_synth_ms;
  job->shared_prove_ms = row.shared_prove_ms;
  if (row.started_ms) job->started_ms = row.started_ms;
  if (job->terminal() || !row.terminal()) {
    if (!job->terminal() && row.state == JobState::kRunning) job->state = JobState::kRunning;
    return {};
  }
  // The queue ended it (every proof in, a failure on any host, a cancel).
  job->error = row.error;
  if (row.state == JobState::kDone) {
    job->state = JobState::kDone;
    job->finished_ms = row.finished_ms;
    for (auto& p : job->parts)
      if (p.state == PartState::kElsewhere || p.state == PartState::kQueued) p.state = PartState::kDone;
    return {};
  }
  auto freed = end_job(*job, row.state, row.state == JobState::kCancelled ? PartState::kCancelled : PartState::kFailed,
                       row.finished_ms);
  return freed;
}

bool JobTable::hold(const PartRef& ref, uint64_t lease, int64_t until, const std::string& wtns,
                    const std::string& input, const std::string& input_name, std::string public_json,
                    std::vector<U256> public_values, int64_t now) {
  Job* job = find_mut(ref.job);
  Partition* p = find_mut(ref);
  if (!job || !p || job->terminal() || p->state != PartState::kElsewhere) return false;
  p->state = PartState::kQueued;
  p->lease = lease;
  p->lease_until_ms = until;
  p->wtns = wtns;
  p->input = input;
  p->input_source = input_name;
  p->public_json = std::move(public_json);
  p->public_values = std::move(public_values);
  p->queued_since_ms = now;
  return true;
}

void JobTable::lease_spent(const PartRef& ref) {
  if (Partition* p = find_mut(ref)) p->lease = 0;
}

void JobTable::renewed(const std::vector<uint64_t>& leases, int64_t until) {
  for (auto& [id, job] : jobs_)
    for (auto& p : job.parts)
      if (p.lease && std::find(leases.begin(), leases.end(), p.lease) != leases.end()) p.lease_until_ms = until;
}

std::optional<shm::Slot> JobTable::lose_lease(const PartRef& ref) {
  Partition* p = find_mut(ref);
  if (!p) return std::nullopt;
  p->lease = 0;
  if (p->state == PartState::kSynthesizing || p->state == PartState::kProving) return std::nullopt;
  std::optional<shm::Slot> slot = p->slot;
  p->slot.reset();
  if (p->state == PartState::kQueued || p->state == PartState::kSynthesized || p->state == PartState::kDone) {
    p->state = PartState::kElsewhere;
    p->proof.clear();
  }
  return slot;
}

std::vector<uint64_t> JobTable::release_queued() {
  std::vector<uint64_t> out;
  for (auto& [id, job] : jobs_)
    for (auto& p : job.parts)
      if (p.lease && p.state == PartState::kQueued) {
        out.push_back(p.lease);
        p.lease = 0;
        p.state = PartState::kElsewhere;
      }
  return out;
}

std::vector<std::pair<PartRef, uint64_t>> JobTable::leases() const {
  std::vector<std::pair<PartRef, uint64_t>> out;
  for (const auto& [id, job] : jobs_)
    for (const auto& p : job.parts)
      if (p.lease && p.state != PartState::kDone) out.push_back({PartRef{id, p.index}, p.lease});
  return out;
}

}  // namespace zkfarm::supervisor
