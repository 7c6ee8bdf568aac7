#pragma once
// The job table: jobs, their partitions' states, and the dispatch order
// (priority, then oldest job, then lowest partition). Pure bookkeeping, no I/O,
// so the order and the state rules are unit-tested on their own.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "groth16/field.hpp"
#include "shm/slots.hpp"

namespace zkfarm::supervisor {

enum class Priority { kLow = 0, kNormal = 1, kHigh = 2, kCritical = 3 };
/// "low", "normal", "high", "critical" → Priority; nullopt for anything else.
std::optional<Priority> parse_priority(const std::string& s);
const char* priority_name(Priority p);

/// A partition's life: queued → synthesizing → synthesized → proving → done.
/// A worker's death sends synthesizing/proving back to queued (the prove step
/// works in place, so its slot must be synthesized again).
enum class PartState { kQueued, kSynthesizing, kSynthesized, kProving, kDone, kFailed, kCancelled };

enum class JobState { kQueued, kRunning, kDone, kFailed, kCancelled };
const char* job_state_name(JobState s);

struct Partition {
  uint32_t index = 0;
  std::string wtns;                ///< absolute path of the farm's private copy (inputs/jobs/…/K.wtns); "" for an input
  std::string input;               ///< a job of circom inputs: the private copy of its input (inputs/jobs/…/K.json)
  std::string input_source;        ///< …and the path the client named, for messages
  /// The farm's private copy of what the client gave: the witness or the input.
  const std::string& private_copy() const { return wtns.empty() ? input : wtns; }
  std::string public_json;         ///< public.json's text, from the witness at submit
  std::string proof;               ///< the verified 256-byte proof once proved in this instance (else in the journal)
  std::vector<U256> public_values; ///< the public signals (witness 1..nPublic, plain), for verification
  PartState state = PartState::kQueued;
  std::optional<shm::Slot> slot;   ///< held from SYNTH to PROVE_DONE
  std::string worker;              ///< worker id while synthesizing or proving
  unsigned attempts = 0;           ///< times it was handed to a worker
  unsigned crashes = 0;            ///< times a worker died holding it (max_attempts: then it fails)
  unsigned verify_failures = 0;    ///< proofs of it that did not verify
  bool delivered = false;          ///< done, and the write of its files finished (well or not)
  int64_t stage_start_ms = 0;      ///< when the current stage's message went out, then when its worker said STARTED
  int64_t queued_ms = 0;           ///< time it waited inside a worker's queue (SYNTH/PROVE sent → STARTED)
  int64_t synth_ms = 0, prove_ms = 0;  ///< time spent in synthesis and proving (last attempt)
  int64_t queued_since_ms = 0;     ///< monotonic: when it last became queued (queue wait for /metrics)
};

struct Job {
  uint64_t id = 0;
  Priority priority = Priority::kNormal;
  std::string zkey, out;           ///< absolute paths: zkey is the farm's private copy (inputs/keys/SHA256.zkey)
  std::string zkey_source;         ///< the path the client named, for people
  uint32_t owner_uid = 0, owner_gid = 0;  ///< who submitted it (control.sock's peer credentials); outputs are written as them
  std::string zkey_sha256;         ///< the key's content hash (hex)
  uint64_t slot_bytes = 0;         ///< witness_bytes(key): a slot carries the witness only
  uint32_t n_public = 0;
  JobState state = JobState::kQueued;
  std::string error;
  std::string delivery_error;      ///< first failure to write an output file; the job then ends failed
  int64_t submitted_ms = 0, finished_ms = 0;  ///< Unix ms; 0: not finished
  int64_t started_ms = 0;          ///< first partition handed to a worker; 0: not yet
  /// Its results are written by the client (`zkfarmctl wait`/`result`), not by
  /// zkfarmd: zkfarmd runs as another user and cannot take the submitter's
  /// rights, and writes nothing where only the submitter may (docs/security.md).
  bool client_delivery = false;
  /// A job of circom inputs (docs/witness.md): the circuit's name and its
  /// generator (STATE/circuits/HASH/generator); "" for a job of witnesses.
  std::string circuit, generator;
  bool inputs() const { return !generator.empty(); }
  std::vector<Partition> parts;

  size_t count(PartState s) const;
  bool terminal() const { return state == JobState::kDone || state == JobState::kFailed || state == JobState::kCancelled; }
  /// The job object of docs/protocol.md.
  nlohmann::json to_json() const;
};

/// (job id, partition index)
struct PartRef {
  uint64_t job;
  uint32_t index;
};

class JobTable {
 public:
  /// Adds a job with all partitions queued, with the id job.id if nonzero (the
  /// journal's), else the next free one; returns the id.
  uint64_t add(Job job);
  /// Puts back a job loaded from the journal as it is (states included).
  void restore(Job job);
  Job* find(uint64_t id);
  const Job* find(uint64_t id) const;
  Partition* find(const PartRef& ref);
  const std::map<uint64_t, Job>& all() const { return jobs_; }

  /// The first partition in state `s` by dispatch order: highest priority, then
  /// oldest job, then lowest partition index. Terminal jobs are skipped.
  std::optional<PartRef> next(PartState s) const;
  /// Partitions in state `s` over all live jobs.
  size_t count(PartState s) const;

  /// Marks a partition done (proved, verified); its files are written next.
  void mark_done(const PartRef& ref);
  /// Marks a done partition's files written (or their write failed: the job
  /// holds the error); the job becomes done when every partition is done and
  /// delivered. Returns true if this finished the job (never for a job that
  /// already ended: failed or cancelled meanwhile).
  bool mark_delivered(const PartRef& ref, int64_t now_ms);
  /// Fails the job: its queued and synthesized partitions become failed; the
  /// caller frees their slots (returned) first.
  std::vector<shm::Slot> fail(uint64_t id, const std::string& error, int64_t now_ms);
  /// Cancels the job likewise. Partitions in a worker's hands keep their slot
  /// until the worker answers (the answer is then dropped).
  std::vector<shm::Slot> cancel(uint64_t id, int64_t now_ms);
  /// Forgets terminal jobs that finished before `cutoff_ms` (wall clock);
  /// returns how many.
  size_t prune(int64_t cutoff_ms);

 private:
  std::vector<shm::Slot> end_job(Job& job, JobState state, PartState part_state, int64_t now_ms);
  std::map<uint64_t, Job> jobs_;
  uint64_t next_id_ = 1;
};

}  // namespace zkfarm::supervisor
