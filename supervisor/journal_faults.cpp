// Journal and state-dir faults (a full disk, an I/O error, a read-only filesystem): zkfarmd
// stays up. A write that fails stops intake — submits are refused with the
// reason and /readyz turns 503 — while in-flight partitions go on; the write
// is kept in memory and replayed in order once the journal takes writes again
// (probed once a second), and then intake reopens by itself. What was in
// memory is never dropped; what an acknowledged job needs (its add_job) was
// committed before the client heard "accepted".
#include <unistd.h>

#include "files/safe_write.hpp"
#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

namespace {
constexpr int64_t kJournalRetryMs = 1000;
}

void Supervisor::journal_write(std::function<void()> write) {
  if (!journal_backlog_.empty()) {  // keep the order: behind the writes already waiting
    journal_backlog_.push_back(std::move(write));
    return;
  }
  try {
    write();
  } catch (const JournalError& e) {
    if (!e.storage_fault()) {  // a constraint or a bug: retrying cannot help
      log_->error("journal: {}", e.what());
      return;
    }
    journal_backlog_.push_back(std::move(write));
    if (intake_fault_.empty()) {
      intake_fault_ = std::string("journal write failed: ") + e.what();
      log_->error("{}; intake is closed until the journal takes writes again (in-flight work goes on)", intake_fault_);
      notify("STATUS=refusing jobs: " + intake_fault_);
    }
    next_journal_retry_ms_ = now_ms() + kJournalRetryMs;
  }
}

void Supervisor::retry_journal() {
  if (intake_fault_.empty() && journal_backlog_.empty()) return;
  const int64_t now = now_ms();
  if (now < next_journal_retry_ms_) return;
  next_journal_retry_ms_ = now + kJournalRetryMs;
  if (!journal_.writable()) {
    intake_fault_ = "journal write failed: " + journal_.last_error();
    return;
  }
  // The copies of inputs live beside the journal: a write there must work too.
  try {
    const std::string dir = cfg_.state_dir + "/inputs";
    files::write_file_safe(dir, ".probe", std::string(4096, '\0'), 0600);
    ::unlink((dir + "/.probe").c_str());
  } catch (const std::exception& e) {
    intake_fault_ = std::string("state dir write failed: ") + e.what();
    return;
  }
  while (!journal_backlog_.empty()) {
    try {
      journal_backlog_.front()();
    } catch (const JournalError& e) {
      if (e.storage_fault()) {
        intake_fault_ = std::string("journal write failed: ") + e.what();
        return;
      }
      log_->error("journal: dropped a write that cannot succeed: {}", e.what());
    }
    journal_backlog_.pop_front();
  }
  log_->info("journal: writes work again; intake reopened ({})", intake_fault_);
  intake_fault_.clear();
}

void Supervisor::retry_journal_now() {
  if (journal_backlog_.empty()) return;
  next_journal_retry_ms_ = 0;
  retry_journal();
  if (!journal_backlog_.empty())
    log_->error("stopping with {} journal writes that failed ({}); the next start proves those partitions again",
                journal_backlog_.size(), intake_fault_);
}

}  // namespace zkfarm::supervisor
