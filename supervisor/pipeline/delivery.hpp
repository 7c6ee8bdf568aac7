#pragma once
// Delivery: a proved partition's proof.json and public.json written into the
// job's output folder (or a `result --out` folder) with the rights of the user
// who asked (files/fs_credentials.hpp), never through a symlink or a guessable
// temporary name (files/safe_write.hpp). A write that fails is reported, never
// swallowed: the job ends `failed` with the reason while its proofs stay in the
// journal for `zkfarmctl result`.
#include <spdlog/logger.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "protocol/control_requests.hpp"
#include "supervisor/background.hpp"
#include "supervisor/config.hpp"
#include "supervisor/model/peer.hpp"
#include "supervisor/ledger/journal_lane.hpp"
#include "supervisor/ledger/ledger.hpp"
#include "supervisor/model/event_bus.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/model/loop_events.hpp"

namespace zkfarm::supervisor {

/// Writes results off the loop (a thread of its own) and answers `result`
/// pages from memory or the ledger (on the journal lane). Its methods are
/// called on the loop's thread; their answers come back through the inbox.
///
/// Events (model/event_bus.hpp): handles PartitionProved (pipeline.hpp);
/// emits ControlReply (a `result` page) and JobEnded (done, or failed by a
/// write).
class Delivery {
 public:
  /// `jobs`: the loop's table; proofs of earlier instances are read from the
  /// ledger on `journal`'s thread (its tasks), or, before the loop runs, from
  /// the ledger given to deliver().
  Delivery(const Config& cfg, std::shared_ptr<spdlog::logger> log, JobTable& jobs, JournalLane& journal,
           LoopInbox& inbox, EventBus& bus);

  /// At start, before the loop runs: the proved partitions of `job` (proofs
  /// from memory or `ledger`) into `out`, as `as`; with `only_missing`, a
  /// pair of files already there is left alone. Returns how many were
  /// written; the first fault goes to `error` (when given) and each is logged.
  size_t deliver(Ledger& ledger, const Job& job, const std::string& out, const Peer& as, bool only_missing,
                 std::string* error);
  /// Partition `index` of `job`, just proved and journaled, to the job's
  /// output (on the delivery thread; a job the client delivers is marked at
  /// once); the job ends once every partition is delivered, `failed` with
  /// the reason when a write fails.
  void publish(const Job& job, uint32_t index);
  /// `zkfarmctl result` (and `wait` for a job the client delivers): a page of
  /// job `req.job`'s proofs as proof.json/public.json texts, from partition
  /// `req.from`; the reply names the next page. Another user's job is "no
  /// job" unless `role` is admin. Nothing is written here.
  void start_result(const std::string& identity, const protocol::Result& req, const Peer& peer, Role role);
  /// Waits for every write posted (at exit, before the journal's last writes).
  void finish();

 private:
  void on_published(const PartRef& ref, const std::string& error);
  void reply(const std::string& identity, nlohmann::json r) { bus_.emit(ControlReply{identity, std::move(r)}); }

  const Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  JobTable& jobs_;
  JournalLane& journal_;
  LoopInbox& inbox_;
  EventBus& bus_;
  SerialWorker thread_{"zkfarmd-deliver"};  ///< the only writer of output files
};

}  // namespace zkfarm::supervisor
