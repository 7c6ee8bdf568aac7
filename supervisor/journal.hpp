#pragma once
// The journal: every accepted job, its partitions and their proofs, in SQLite
// (STATE/journal.sqlite, WAL mode, synchronous=FULL), so that nothing accepted
// is lost whatever happens to the supervisor. A job is acknowledged to its
// client only after add_job() has committed. A partition's proof is journaled
// once: the (job, partition) primary key refuses a second.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "supervisor/jobs.hpp"

struct sqlite3;

namespace zkfarm::supervisor {

class JournalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A journaled proof: the 256 proof bytes (protocol/proof_codec.hpp) and the
/// text of public.json.
struct JournaledProof {
  std::string proof;
  std::string public_json;
};

class Journal {
 public:
  /// Opens the journal at `path`, creating it when absent. Throws JournalError
  /// naming the file and the fault when it is not a zkfarm journal (another
  /// SQLite file, a corrupt one, one of a later schema) or cannot be opened
  /// for writing; such a file is never modified.
  explicit Journal(const std::string& path);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  /// Inserts the job and its partitions (each with its public.json) in one transaction and returns the id
  /// it was given. Durable when this returns. Throws JournalError.
  uint64_t add_job(const Job& job);
  /// Journals the 256-byte proof of (job, partition) and its stage times (ms).
  /// Returns false, changing nothing, if that partition already has a proof.
  bool add_proof(uint64_t job, uint32_t index, const std::string& proof, int64_t proved_ms, int64_t synth_ms,
                 int64_t prove_ms);
  /// Records a job's terminal state (done, failed, cancelled).
  void finish_job(uint64_t job, JobState state, const std::string& error, int64_t finished_ms);
  /// Records when a job's first partition went to a worker (queue wait).
  void set_started(uint64_t job, int64_t started_ms);
  /// Every journaled job, oldest first; a partition with a proof comes back
  /// done, every other one queued (what was in flight is proved again).
  std::vector<Job> load();
  /// The journaled proof of (job, partition), if any.
  std::optional<JournaledProof> proof(uint64_t job, uint32_t index);
  /// Deletes jobs that finished before `cutoff_ms`, with their partitions and
  /// proofs. Returns how many jobs went.
  size_t prune(int64_t cutoff_ms);

  const std::string& path() const { return path_; }

 private:
  void exec(const char* sql);
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace zkfarm::supervisor
