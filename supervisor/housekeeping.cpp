// Housekeeping, once a minute and at start: the journal is pruned of finished
// jobs past retention_hours (before, only at start: a farm up for weeks kept
// every job in its status), and the copies of inputs that nothing needs any
// more are removed — a finished job's witnesses, a key no retained job uses,
// what a refused or abandoned submit left.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>

#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

namespace fs = std::filesystem;

namespace {

// inputs/jobs/TOKEN/K.wtns → TOKEN ("" for anything else).
std::string token_of(const std::string& wtns, const std::string& jobs_dir) {
  if (wtns.rfind(jobs_dir + "/", 0) != 0) return {};
  const std::string rest = wtns.substr(jobs_dir.size() + 1);
  const size_t slash = rest.find('/');
  return slash == std::string::npos ? std::string() : rest.substr(0, slash);
}
}  // namespace

void Supervisor::remove_job_inputs(const Job& job) {
  if (ledger_->shared() && job.files_dir.rfind(cfg_.shared_dir + "/jobs/", 0) == 0) {  // a refused submit's shared copies
    journal_->post([dir = job.files_dir](Ledger&) {
      std::error_code ec;
      fs::remove_all(dir, ec);
    });
    return;
  }
  const std::string jobs_dir = cfg_.state_dir + "/inputs/jobs";
  if (job.parts.empty()) return;
  const std::string token = token_of(job.parts.front().private_copy(), jobs_dir);
  if (token.empty()) return;
  // Unlinking a job's witnesses (hundreds of MB each) is disk work: not on the loop.
  journal_->post([dir = jobs_dir + "/" + token](Ledger&) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  });
}

void Supervisor::housekeeping(bool at_start) {
  if (!housekeeping_schedule_.due(steady_ms(), at_start)) return;

  const int64_t cutoff = wall_ms() - int64_t(cfg_.retention_hours) * 3600 * 1000;
  const size_t dropped = jobs_.prune(cutoff);
  // Which input copies are still needed: decided here, from the loop's
  // tables; the journal's prune and the removals run on the journal thread.
  const std::string inputs = cfg_.state_dir + "/inputs", jobs_dir = inputs + "/jobs", keys_dir = inputs + "/keys";
  std::set<std::string> live_tokens, keys;
  for (const auto& [id, job] : jobs_.all()) {
    keys.insert(fs::path(job.zkey).filename().string());
    if (!job.terminal() && !job.parts.empty())
      live_tokens.insert(token_of(job.parts.front().private_copy(), jobs_dir));
  }
  for (const auto& t : intake_->live_tokens()) live_tokens.insert(t);
  // Keys and generators the registered circuits use stay; so do the
  // generators of live jobs (a removed circuit's accepted jobs go on).
  std::set<std::string> generators;
  for (const auto& [name, c] : circuits_->all()) {
    keys.insert(c.zkey_sha256 + ".zkey");
    generators.insert(c.generator);
  }
  for (const auto& [id, job] : jobs_.all())
    if (!job.terminal() && job.inputs()) generators.insert(fs::path(job.generator).parent_path().filename().string());
  // A build nothing uses is a cache: kept for retention_hours after it was
  // last built or added (a circuit removed and added again, or a build put
  // there by hand, is not built again), then removed.
  std::vector<std::string> dead_generators;
  if (!circuits_->building()) {  // a build may be about to use a cached generator
    std::error_code gec;
    const auto keep_since = fs::file_time_type::clock::now() - std::chrono::hours(cfg_.retention_hours);
    for (const auto& e : fs::directory_iterator(cfg_.state_dir + "/circuits", gec)) {
      const std::string name = e.path().filename().string();
      // HASH folders only: HASH.lock and HASH.building-PID belong to a build.
      if (name.find('.') != std::string::npos || name.rfind("incoming-", 0) == 0 || generators.count(name)) continue;
      std::error_code tec;
      if (fs::last_write_time(e.path(), tec) < keep_since && !tec) dead_generators.push_back(e.path().string());
    }
  }
  // Folders of jobs that are over, listed now (a submit started later makes a
  // new token, never one of these) and removed on the journal thread:
  // unlinking witnesses of hundreds of MB each is disk work.
  std::vector<std::string> dead;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(jobs_dir, ec))
    if (!live_tokens.count(e.path().filename().string())) dead.push_back(e.path().string());
  // Keys: here, and only while no submit is being checked or journaled and
  // no circuit is being added (either may be about to use a stored key it
  // found by its identity, or one it has just copied). And only keys taken
  // more than an hour ago (take_key touches a key it uses again): a second
  // guard for any window between a copy and the record that names it
  // (one such window lost an accepted job: docs/decisions.md, 2026-12-07).
  // A clock set back keeps keys longer; one set forward leaves the first guard.
  if (!intake_->busy() && !circuits_->building()) {
    const auto taken_before = fs::file_time_type::clock::now() - std::chrono::hours(1);
    for (const auto& e : fs::directory_iterator(keys_dir, ec)) {
      const std::string name = e.path().filename().string();
      if (keys.count(name)) continue;
      std::error_code tec;
      if (fs::last_write_time(e.path(), tec) > taken_before || tec) continue;
      fs::remove(e.path(), ec);
    }
  }
  // A shared queue's keys: any host may submit with one at any time (and
  // touches it when it does: take_key), so only keys no retained job or
  // circuit uses and untouched for an hour go.
  // Only with a fresh mirror: a host cut off from the queue does not know
  // what other hosts accepted meanwhile.
  const bool mirror_fresh = cluster_ && cluster_->fresh(steady_ms());
  if (mirror_fresh) {
    const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
    for (const auto& e : fs::directory_iterator(cfg_.shared_dir + "/keys", ec)) {
      std::error_code tec;
      if (keys.count(e.path().filename().string()) || fs::last_write_time(e.path(), tec) > old || tec) continue;
      dead.push_back(e.path().string());
    }
  }
  dead.insert(dead.end(), dead_generators.begin(), dead_generators.end());
  if (ledger_->shared()) {
    // A shared queue: this host's private copies of claims it no longer
    // holds, and (any host may) the shared copies of jobs that are over.
    // A folder younger than an hour is left alone: its submit (on any host)
    // may not be in the queue yet.
    std::set<std::string> held;
    for (const auto& [ref, token] : jobs_.leases()) held.insert(std::to_string(token));
    if (cluster_ && cluster_->preparing() == 0) {
      for (const auto& e : fs::directory_iterator(cfg_.state_dir + "/inputs/claims", ec)) {
        const std::string stem = e.path().stem().string();
        if (!held.count(stem)) dead.push_back(e.path().string());
      }
    }
    if (mirror_fresh) {
      std::set<std::string> live;
      for (const auto& [id, job] : jobs_.all())
        if (!job.terminal()) live.insert(job.files_dir);
      for (const auto& t : intake_->live_tokens()) live.insert(cfg_.shared_dir + "/jobs/" + t);
      const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
      for (const auto& e : fs::directory_iterator(cfg_.shared_dir + "/jobs", ec)) {
        std::error_code tec;
        if (live.count(e.path().string()) || fs::last_write_time(e.path(), tec) > old || tec) continue;
        dead.push_back(e.path().string());
      }
    }
  }
  journal_->post([this, cutoff, dropped, dead](Ledger& ledger) {
    size_t pruned = 0;
    std::string error;
    try {
      pruned = ledger.prune(cutoff);
    } catch (const JournalError& e) {
      error = e.what();
    }
    inbox_.post([this, pruned, dropped, error] {
      if (!error.empty()) log_->warn("journal: prune failed: {}", error);
      if (pruned || dropped)
        log_->info("pruned {} finished jobs older than {} h ({} from the journal)", dropped, cfg_.retention_hours,
                   pruned);
    });
    std::error_code ec;
    for (const auto& d : dead) fs::remove_all(d, ec);
  });
}

}  // namespace zkfarm::supervisor
