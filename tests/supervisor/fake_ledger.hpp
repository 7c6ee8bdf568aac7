#pragma once
// A ledger in memory for the supervisor's part tests (tests/supervisor/…):
// one host's record (no shared queue), every write counted, and a wait on
// the journal thread's writes by event (a condition variable), never a sleep.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "supervisor/ledger/journal_error.hpp"
#include "supervisor/ledger/ledger.hpp"

namespace zkfarm::supervisor::fakes {

class FakeLedger : public Ledger {
 public:
  const char* kind() const override { return "fake"; }
  std::string where() const override { return "memory"; }
  uint64_t add_job(const Job& job) override { return note([&] { return job.id ? job.id : ++next_id_; }); }
  CompleteResult complete(uint64_t job, uint32_t index, const ProofRecord& proof) override {
    return note([&] {
      proofs_[{job, index}] = JournaledProof{proof.proof, proof.public_json};
      return CompleteResult{.stored = ProofStored::kStored};
    });
  }
  void finish_job(uint64_t job, JobState state, const std::string& error, int64_t) override {
    note([&] {
      finished_[job] = {state, error};
      return 0;
    });
  }
  void set_started(uint64_t job, int64_t) override {
    note([&] {
      started_.push_back(job);
      return 0;
    });
  }
  std::optional<JournaledProof> proof(uint64_t job, uint32_t index) override {
    std::lock_guard lock(mutex_);
    auto it = proofs_.find({job, index});
    return it == proofs_.end() ? std::nullopt : std::optional(it->second);
  }
  size_t prune(int64_t) override { return 0; }
  void put_circuit(const CircuitRecord&) override {}
  bool remove_circuit(const std::string&) override { return false; }
  std::vector<CircuitRecord> circuits() override { return {}; }
  bool writable() override { return true; }
  const std::string& last_error() const override { return error_; }
  std::vector<Job> load() override { return {}; }

  /// The next `n` writes fail as storage faults (JournalError::storage_fault).
  void fail_next_writes(int n) {
    std::lock_guard lock(mutex_);
    failing_writes_ = n;
  }

  /// Waits (up to `limit`) until `ready()` holds over the ledger's state.
  template <class F>
  bool wait_until(F ready, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return ready(*this); });
  }
  // What was journaled: read inside a wait_until predicate (the lock held).
  /// The end journaled for `job` (state, error), if any.
  std::optional<std::pair<JobState, std::string>> finished(uint64_t job) const {
    auto it = finished_.find(job);
    return it == finished_.end() ? std::nullopt : std::optional(it->second);
  }
  /// Writes tried, failed ones included (any thread, lock or not).
  int writes_tried() const { return writes_tried_.load(); }
  /// The jobs whose start was journaled, in order.
  const std::vector<uint64_t>& started() const { return started_; }

 private:
  template <class F>
  std::invoke_result_t<F> note(F write) {
    std::lock_guard lock(mutex_);
    ++writes_tried_;
    if (failing_writes_ > 0) {
      --failing_writes_;
      changed_.notify_all();
      throw JournalError::of_store("fake ledger: disk full", /*storage=*/true);
    }
    auto r = write();
    changed_.notify_all();
    return r;
  }
  int failing_writes_ = 0;
  std::atomic<int> writes_tried_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t next_id_ = 0;
  std::map<std::pair<uint64_t, uint32_t>, JournaledProof> proofs_;
  std::map<uint64_t, std::pair<JobState, std::string>> finished_;
  std::vector<uint64_t> started_;
  std::string error_;
};

}  // namespace zkfarm::supervisor::fakes
