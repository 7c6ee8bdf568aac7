#pragma once
// The journal lane: the one thread on which the ledger is used once the loop
// runs, the order of its writes, and what a failing write does to intake.
// Every write runs on the journal thread in the order the loop posted it, so
// the loop never waits for an fsync. A write that fails for storage (a full
// disk, an I/O error, a read-only filesystem) closes intake (submits are
// refused with the reason, /readyz turns 503) while in-flight partitions go
// on; the thread keeps that write (and every later one queued behind it),
// probes once a second, and replays them once the journal takes writes
// again; then intake reopens by itself. A submit's copies that the state dir
// refused close intake the same way (close_intake) until a probe works. What
// was in memory is never dropped; what an acknowledged job needs (its
// add_job) was committed before the client heard "accepted". Times are
// monotonic milliseconds.
#include <spdlog/logger.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "supervisor/background.hpp"
#include "supervisor/config.hpp"
#include "supervisor/ledger/ledger.hpp"
#include "supervisor/model/event_bus.hpp"
#include "supervisor/model/metrics.hpp"

namespace zkfarm::supervisor {

/// A held write reached (true) or failed to reach (false, with why) the
/// ledger: a shared queue's reachability follows it. Handled by the cluster mirror.
struct LedgerReach {
  bool reached;
  std::string why;
};

/// A line for the init system (sd_notify(3), "STATUS=…": intake closed).
/// Handled by the lifecycle, which talks to systemd.
struct ServiceNotice {
  std::string line;
};

/// Events (model/event_bus.hpp), emitted on the loop's thread: LedgerReach,
/// ServiceNotice.
class JournalLane {
 public:

  /// Starts the journal thread. `ledger` and `inbox` outlive the lane; tasks
  /// that come back to the loop are posted to `inbox`. Once the loop runs the
  /// lane is the only holder of the ledger: the parts hold the lane, and
  /// reach the ledger as the argument of a task on its thread.
  JournalLane(const Config& cfg, std::shared_ptr<spdlog::logger> log, Ledger& ledger, LoopInbox& inbox,
              Metrics& metrics, EventBus& bus);

  /// Runs `task` on the journal thread with the ledger, in order with every
  /// write (reads, a shared queue's calls: each returns its own answer to
  /// the loop through the inbox). It must not throw.
  void post(std::function<void(Ledger&)> task);

  /// Journals the verified proof of partition `index` of `job` (Ledger::
  /// add_proof) as a write in order. Proofs that arrive while the journal
  /// thread is still busy join one batch, stored in one transaction
  /// (Ledger::add_proofs: one fsync for all); any other write closes the
  /// batch, so the order of writes is kept. A second proof of a partition is
  /// refused by the ledger and logged; the first is kept.
  void add_proof(uint64_t job, uint32_t index, ProofRecord rec);

  // The ledger's writes as typed commands, each a write() in order (the
  // parts name what is written, not a closure over the ledger).
  /// Ledger::set_started: the job's first partition started at `started_ms` (Unix ms).
  void set_started(uint64_t job, int64_t started_ms);
  /// Ledger::finish_job: the job ended in `state` (done, failed with `error`, cancelled) at `finished_ms` (Unix ms).
  void finish_job(uint64_t job, JobState state, std::string error, int64_t finished_ms);
  /// Ledger::record_deliveries: the delivery times of a job that ended done.
  void record_deliveries(uint64_t job, std::vector<DeliveryTime> times);
  /// Ledger::remove_circuit: `circuit remove NAME`.
  void remove_circuit(std::string name);

  /// Why intake is closed ("" when open): a journal or state-dir fault.
  const std::string& intake_fault() const { return intake_fault_; }
  /// A submit's state-dir or journal write failed (`why`): intake closes
  /// until a probe (retry_intake) works.
  void close_intake(const std::string& why, int64_t now);
  /// Probes a closed intake once a second on the journal thread (a state-dir
  /// fault: while the journal itself works).
  void retry_intake(int64_t now);

  /// At exit, after the delivery thread: a write still failing is tried once
  /// more and dropped, the thread finished and its last answers run on the
  /// loop (`inbox`); the count of dropped writes is logged.
  void finish();
  /// The same without the loop (zkfarmd's destructor, or a start that failed).
  void stop();
  /// From now on a failing write is tried once more and dropped (at exit,
  /// before the delivery thread's last tasks queue their writes).
  void give_up() { giving_up_ = true; }
  /// Set once zkfarmd gives up failing writes at exit (long retries stop).
  bool giving_up() const { return giving_up_.load(); }

 private:
  /// Runs the ledger write `write` on the journal thread, in order; retried
  /// as described above while it fails for storage. The typed commands above
  /// are its only callers.
  void write(std::function<void(Ledger&)> write);
  void run_write(const std::function<void(Ledger&)>& write);  ///< on the journal thread
  void on_fault(const std::string& why);
  void on_recovered();
  /// Proofs journaled together (add_proof): filled on the loop until the
  /// journal thread takes them.
  struct ProofBatch {
    std::vector<ProofToStore> proofs;
    bool taken = false;  ///< the journal thread started on it: no more join
  };
  /// Guards open_batch_ and every batch's fields, and keeps what is posted
  /// in the order it was asked for: writes come from the loop and from the
  /// delivery thread.
  std::mutex batch_mutex_;
  std::shared_ptr<ProofBatch> open_batch_;  ///< the batch proofs may still join

  const Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  Ledger& ledger_;
  LoopInbox& inbox_;
  Metrics& metrics_;
  EventBus& bus_;
  std::string intake_fault_;  ///< non-empty: intake refused for this reason
  bool faulted_ = false;      ///< the journal thread holds a write that failed (intake closed)
  bool probe_in_flight_ = false;
  int64_t next_retry_ms_ = 0;
  std::atomic<bool> giving_up_{false};  ///< at exit: a failing write is tried once more, then dropped
  std::atomic<size_t> dropped_{0};      ///< writes dropped that way (logged at exit)
  SerialWorker thread_{"zkfarmd-journal"};  ///< last: it ends before what its tasks use
};

}  // namespace zkfarm::supervisor
