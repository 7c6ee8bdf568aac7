#include "supervisor/ledger/journal_lane.hpp"

#include <unistd.h>

#include <chrono>
#include <thread>

#include "files/safe_write.hpp"
#include "supervisor/ledger/journal_error.hpp"

namespace zkfarm::supervisor {

namespace {
constexpr int64_t kJournalRetryMs = 1000;
}

JournalLane::JournalLane(const Config& cfg, std::shared_ptr<spdlog::logger> log, Ledger& ledger, LoopInbox& inbox,
                         Metrics& metrics, EventBus& bus)
    : cfg_(cfg), log_(std::move(log)), ledger_(ledger), inbox_(inbox), metrics_(metrics), bus_(bus) {}

void JournalLane::write(std::function<void(Ledger&)> write) {
  std::lock_guard lock(batch_mutex_);
  open_batch_.reset();  // proofs after this write go after it
  thread_.post([this, write = std::move(write)] { run_write(write); });
}

void JournalLane::post(std::function<void(Ledger&)> task) {
  std::lock_guard lock(batch_mutex_);
  open_batch_.reset();  // a read after a proof sees it
  thread_.post([this, task = std::move(task)] { task(ledger_); });
}

void JournalLane::add_proof(uint64_t job, uint32_t index, ProofRecord rec) {
  std::lock_guard lock(batch_mutex_);
  if (open_batch_ && !open_batch_->taken) {
    open_batch_->proofs.push_back({job, index, std::move(rec)});
    return;
  }
  auto batch = std::make_shared<ProofBatch>();
  batch->proofs.push_back({job, index, std::move(rec)});
  open_batch_ = batch;
  // Run (and retried) on the journal thread; the batch is closed when it first runs.
  thread_.post([this, batch] {
    run_write([this, batch](Ledger& ledger) {
      std::vector<ProofToStore> proofs;
      {
        std::lock_guard lock(batch_mutex_);
        batch->taken = true;
        proofs = batch->proofs;
      }
      const std::vector<ProofStored> stored = ledger.add_proofs(proofs);
      for (size_t i = 0; i < stored.size(); ++i) {
        if (stored[i] != ProofStored::kDuplicate) continue;
        inbox_.post([this, job = proofs[i].job, index = proofs[i].index] {
          log_->warn("job {} partition {}: a proof was already journaled; keeping that one", job, index);
        });
      }
    });
  });
}

void JournalLane::set_started(uint64_t job, int64_t started_ms) {
  write([job, started_ms](Ledger& ledger) { ledger.set_started(job, started_ms); });
}

void JournalLane::finish_job(uint64_t job, JobState state, std::string error, int64_t finished_ms) {
  write([job, state, error = std::move(error), finished_ms](Ledger& ledger) {
    ledger.finish_job(job, state, error, finished_ms);
  });
}

void JournalLane::record_deliveries(uint64_t job, std::vector<DeliveryTime> times) {
  write([job, times = std::move(times)](Ledger& ledger) { ledger.record_deliveries(job, times); });
}

void JournalLane::remove_circuit(std::string name) {
  write([name = std::move(name)](Ledger& ledger) { ledger.remove_circuit(name); });
}

// On the journal thread.
void JournalLane::run_write(const std::function<void(Ledger&)>& write) {
  bool faulted = false;
  for (;;) {
    try {
      write(ledger_);
      if (faulted) inbox_.post([this] { on_recovered(); });
      return;
    } catch (const JournalError& e) {
      const std::string what = e.what();
      inbox_.post([this] { ++metrics_.journal_write_errors; });
      if (!e.storage_fault()) {  // a constraint or a bug: retrying cannot help
        inbox_.post([this, what] { log_->error("journal: {}", what); });
        if (faulted) inbox_.post([this] { on_recovered(); });
        return;
      }
      if (giving_up_) {
        ++dropped_;
        inbox_.post([this, what] { log_->error("journal: a write failed while stopping and is dropped: {}", what); });
        return;
      }
      if (!faulted)
        inbox_.post([this, what] {
          on_fault("journal write failed: " + what);
          // A shared queue's write failed: the queue calls wait behind it on
          // this thread, so none of them would say so; status must.
          bus_.emit(LedgerReach{false, what});
        });
      faulted = true;
    }
    // Probe until a write commits and the inputs' folder takes a file (the
    // copies of inputs live beside the journal), or zkfarmd stops.
    for (;;) {
      for (int64_t waited = 0; waited < kJournalRetryMs && !giving_up_; waited += 50)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (giving_up_) break;  // one last try of the write itself
      if (!ledger_.writable()) continue;
      try {
        const std::string dir = cfg_.state_dir + "/inputs";
        files::write_file_safe(dir, ".probe", std::string(4096, '\0'), 0600);
        ::unlink((dir + "/.probe").c_str());
        break;
      } catch (const std::exception&) {
      }
    }
  }
}

void JournalLane::on_fault(const std::string& why) {
  faulted_ = true;
  if (intake_fault_.empty()) {
    log_->error("{}; intake is closed until the journal takes writes again (in-flight work goes on)", why);
    bus_.emit(ServiceNotice{"STATUS=refusing jobs: " + why});
  }
  intake_fault_ = why;
}

void JournalLane::on_recovered() {
  faulted_ = false;
  bus_.emit(LedgerReach{true, ""});  // the write that was held reached the ledger
  if (!intake_fault_.empty()) log_->info("journal: writes work again; intake reopened ({})", intake_fault_);
  intake_fault_.clear();
}

void JournalLane::close_intake(const std::string& why, int64_t now) {
  if (!intake_fault_.empty()) return;
  intake_fault_ = why;
  next_retry_ms_ = now + kJournalRetryMs;
}

// A submit's copies that the state dir refused (full, read-only) closed
// intake while the journal itself is fine: probe on the journal thread, once
// a second, until both take a write.
void JournalLane::retry_intake(int64_t now) {
  if (intake_fault_.empty() || faulted_ || probe_in_flight_) return;
  if (now < next_retry_ms_) return;
  next_retry_ms_ = now + kJournalRetryMs;
  probe_in_flight_ = true;
  thread_.post([this] {
    std::string fault;
    if (!ledger_.writable()) {
      fault = "journal write failed: " + ledger_.last_error();
    } else {
      try {
        const std::string dir = cfg_.state_dir + "/inputs";
        files::write_file_safe(dir, ".probe", std::string(4096, '\0'), 0600);
        ::unlink((dir + "/.probe").c_str());
      } catch (const std::exception& e) {
        fault = std::string("state dir write failed: ") + e.what();
      }
    }
    inbox_.post([this, fault] {
      probe_in_flight_ = false;
      if (faulted_) return;  // the journal thread reopens intake itself
      if (fault.empty()) {
        if (!intake_fault_.empty()) log_->info("state dir: writes work again; intake reopened ({})", intake_fault_);
        intake_fault_.clear();
      } else {
        intake_fault_ = fault;
      }
    });
  });
}

void JournalLane::finish() {
  giving_up_ = true;
  thread_.finish();
  inbox_.run();
  if (dropped_)
    log_->error("stopped with {} journal writes that failed ({}); the next start proves those partitions again",
                dropped_.load(), intake_fault_);
}

void JournalLane::stop() {
  giving_up_ = true;
  thread_.finish();
}

}  // namespace zkfarm::supervisor
