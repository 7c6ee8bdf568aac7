// Journal writes and their faults (a full disk, an I/O error, a read-only
// filesystem): zkfarmd stays up. Every write runs on the journal thread, in
// the order the loop posted it, so the loop never waits for an fsync. A write
// that fails stops intake — submits are refused with the reason and /readyz
// turns 503 — while in-flight partitions go on; the journal thread keeps that
// write (and every later one queued behind it), probes once a second, and
// replays them once the journal takes writes again; then intake reopens by
// itself. What was in memory is never dropped; what an acknowledged job needs
// (its add_job) was committed before the client heard "accepted".
#include <unistd.h>

#include <chrono>
#include <thread>

#include "files/safe_write.hpp"
#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

namespace {
constexpr int64_t kJournalRetryMs = 1000;
}

void Supervisor::journal_write(std::function<void()> write) {
  journal_thread_->post([this, write = std::move(write)] { run_journal_write(write); });
}

// On the journal thread.
void Supervisor::run_journal_write(const std::function<void()>& write) {
  bool faulted = false;
  for (;;) {
    try {
      write();
      if (faulted) inbox_.post([this] { on_journal_recovered(); });
      return;
    } catch (const JournalError& e) {
      const std::string what = e.what();
      inbox_.post([this] { ++metrics_.journal_write_errors; });
      if (!e.storage_fault()) {  // a constraint or a bug: retrying cannot help
        inbox_.post([this, what] { log_->error("journal: {}", what); });
        if (faulted) inbox_.post([this] { on_journal_recovered(); });
        return;
      }
      if (journal_giving_up_) {
        ++journal_dropped_;
        inbox_.post([this, what] { log_->error("journal: a write failed while stopping and is dropped: {}", what); });
        return;
      }
      if (!faulted)
        inbox_.post([this, what] {
          on_journal_fault("journal write failed: " + what);
          // A shared queue's write failed: the queue calls wait behind it on
          // this thread, so none of them would say so; status must.
          if (pg_) queue_call_failed(what);
        });
      faulted = true;
    }
    // Probe until a write commits and the inputs' folder takes a file (the
    // copies of inputs live beside the journal), or zkfarmd stops.
    for (;;) {
      for (int64_t waited = 0; waited < kJournalRetryMs && !journal_giving_up_; waited += 50)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (journal_giving_up_) break;  // one last try of the write itself
      if (!ledger_->writable()) continue;
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

void Supervisor::on_journal_fault(const std::string& why) {
  journal_faulted_ = true;
  if (intake_fault_.empty()) {
    log_->error("{}; intake is closed until the journal takes writes again (in-flight work goes on)", why);
    lifecycle_->notify("STATUS=refusing jobs: " + why);
  }
  intake_fault_ = why;
}

void Supervisor::on_journal_recovered() {
  journal_faulted_ = false;
  if (pg_) queue_call_worked();  // the write that was held reached the queue
  if (!intake_fault_.empty()) log_->info("journal: writes work again; intake reopened ({})", intake_fault_);
  intake_fault_.clear();
}

// A submit's copies that the state dir refused (full, read-only) closed
// intake while the journal itself is fine: probe on the journal thread, once
// a second, until both take a write.
void Supervisor::retry_intake() {
  if (intake_fault_.empty() || journal_faulted_ || intake_probe_in_flight_) return;
  const int64_t now = now_ms();
  if (now < next_journal_retry_ms_) return;
  next_journal_retry_ms_ = now + kJournalRetryMs;
  intake_probe_in_flight_ = true;
  journal_thread_->post([this] {
    std::string fault;
    if (!ledger_->writable()) {
      fault = "journal write failed: " + ledger_->last_error();
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
      intake_probe_in_flight_ = false;
      if (journal_faulted_) return;  // the journal thread reopens intake itself
      if (fault.empty()) {
        if (!intake_fault_.empty()) log_->info("state dir: writes work again; intake reopened ({})", intake_fault_);
        intake_fault_.clear();
      } else {
        intake_fault_ = fault;
      }
    });
  });
}

void Supervisor::finish_background() {
  // Outputs first: a delivery's completion may queue the job's last journal write.
  delivery_thread_->finish();
  inbox_.run();
  journal_giving_up_ = true;
  journal_thread_->finish();
  inbox_.run();
  if (journal_dropped_)
    log_->error("stopped with {} journal writes that failed ({}); the next start proves those partitions again",
                journal_dropped_.load(), intake_fault_);
}

}  // namespace zkfarm::supervisor
