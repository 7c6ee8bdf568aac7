#pragma once
// Intake: the checks of submitted jobs in progress. It owns the pools a
// submit's check runs on (submit_checks threads, and submit_copies threads
// for witness copies), the caches the checks share (keys by file identity,
// keys checked before), the submits being checked and the jobs whose
// add_job is being journaled (by their folder under inputs/jobs). Whether a
// submit may start at all (stopping, an intake fault, the queue unreachable)
// and what an accepted job becomes are the loop's; this class knows checks.
// Times are monotonic milliseconds.
#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "supervisor/check_pool.hpp"
#include "supervisor/config.hpp"
#include "supervisor/intake/key_cache.hpp"
#include "supervisor/model/peer.hpp"
#include "supervisor/intake/submission.hpp"

namespace zkfarm::supervisor {

class Intake {
 public:
  /// `shared`: a shared queue (inputs go under cfg.shared_dir and witness
  /// copies are hashed). Throws std::system_error when a pool's threads cannot start.
  Intake(const Config& cfg, bool shared);

  /// A new submit's context: where its copies go (a fresh folder name), the
  /// caches, the limits of docs/configuration.md.
  SubmitContext context() const;
  /// Queues the check of `req` (check_submission, with `peer`'s rights);
  /// false when submit_queue checks are already waiting (the caller refuses).
  bool start(const std::string& identity, const protocol::Submit& req, const Peer& peer, SubmitContext ctx,
             int64_t now);

  /// A check that ended: its client, and whether the client was already
  /// told "refused" (its deadline passed; the copies are to be removed).
  struct Finished {
    std::string identity;
    SubmitCheck check;
    bool answered = false;
  };
  /// The checks that ended; each check whose submit_timeout_ms passed first
  /// is told to stop and `on_timeout(identity)` runs once for it.
  std::vector<Finished> take_finished(int64_t now, const std::function<void(const std::string&)>& on_timeout);

  /// A checked job's add_job is being journaled under its folder `token`,
  /// and then it is not any more.
  void journaling(const std::string& token) { journaling_.insert(token); }
  void journaled(const std::string& token) { journaling_.erase(token); }
  /// Whether any submit is being checked or journaled (a stored key may be
  /// about to be used: housekeeping leaves keys alone).
  bool busy() const { return !pending_.empty() || !journaling_.empty(); }
  /// The folders under inputs/jobs that submits in progress use.
  std::set<std::string> live_tokens() const;
  /// The keys checked before, shared with a shared queue's claim preparation.
  std::shared_ptr<CheckedKeys> checked_keys() const { return checked_keys_; }
  /// Jobs go into a shared queue (the constructor's `shared`).
  bool shared() const { return shared_; }

 private:
  struct Pending {
    std::string identity;                  ///< the client to answer
    std::future<SubmitCheck> check;        ///< the job, or why it is refused
    int64_t deadline_ms = 0;               ///< submit_timeout_ms from the request (monotonic)
    std::string token;                     ///< its folder under inputs/jobs
    bool answered = false;                 ///< refused on timeout; the check is told to stop
    std::shared_ptr<std::atomic<bool>> cancel;  ///< the check's stop flag (SubmitContext::cancel)
  };
  const Config& cfg_;
  bool shared_;
  CheckPool submit_pool_;
  std::shared_ptr<KeyHashCache> key_hashes_ = std::make_shared<KeyHashCache>();
  std::shared_ptr<CheckedKeys> checked_keys_ = std::make_shared<CheckedKeys>();
  /// Witness copies of every submit, submit_copies at once, first submitted first.
  std::shared_ptr<CheckPool> copy_pool_;
  std::vector<Pending> pending_;
  std::set<std::string> journaling_;  ///< inputs/jobs/TOKEN of jobs whose add_job is in flight
};

}  // namespace zkfarm::supervisor
