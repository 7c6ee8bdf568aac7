#pragma once
// The job table: jobs, their partitions' states, and the dispatch order
// (priority, then oldest job, then lowest partition). Pure bookkeeping, no I/O,
// so the order and the state rules are unit-tested on their own.
#include <cstdint>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "groth16/field.hpp"
#include "shm/slots.hpp"
#include "supervisor/model/partition_timing.hpp"

namespace zkfarm::supervisor {

enum class Priority { kLow = 0, kNormal = 1, kHigh = 2, kCritical = 3 };
/// "low", "normal", "high", "critical" → Priority; nullopt for anything else.
std::optional<Priority> parse_priority(const std::string& s);
const char* priority_name(Priority p);

/// A partition's life: queued → synthesizing → synthesized → proving → done.
/// A worker's death sends synthesizing/proving back to queued (the prove step
/// works in place, so its slot must be synthesized again). A job of a shared
/// queue (PostgreSQL, docs/cluster.md) has its partitions `elsewhere` until
/// this host claims one (then queued, held under a lease) and again when the
/// lease ends without a proof from this host.
enum class PartState { kQueued, kSynthesizing, kSynthesized, kProving, kDone, kFailed, kCancelled, kElsewhere };

enum class JobState { kQueued, kRunning, kDone, kFailed, kCancelled };
const char* job_state_name(JobState s);

struct Partition {
  uint32_t index = 0;
  std::string wtns;                ///< absolute path of the farm's private copy (inputs/jobs/…/K.wtns); "" for an input
  std::string input;               ///< a job of circom inputs: the private copy of its input (inputs/jobs/…/K.json)
  std::string input_source;        ///< …and the path the client named, for messages
  std::string wtns_sha256;         ///< a shared queue: the witness copy's SHA-256 (hex), checked before use
  /// The farm's private copy of what the client gave: the witness or the input.
  const std::string& private_copy() const { return wtns.empty() ? input : wtns; }
  std::string public_json;         ///< public.json's text, from the witness at submit
  std::string proof;               ///< the verified encoded proof (256 or 384 bytes) once proved in this instance (else in the journal)
  std::vector<U256> public_values; ///< the public signals (witness 1..nPublic, plain), for verification
  PartState state = PartState::kQueued;
  std::optional<shm::Slot> slot;   ///< held from SYNTH to PROVE_DONE
  std::string worker;              ///< worker id while synthesizing or proving
  unsigned attempts = 0;           ///< times it was handed to a worker
  /// Attempts that ended in a fault: a worker died holding it (a crash or a
  /// missed heartbeat's kill), its prove step faulted on the device, or the
  /// device's proof did not verify (max_attempts: then it fails).
  unsigned faults = 0;
  bool delivered = false;          ///< done, and the write of its files finished (well or not)
  int64_t stage_start_ms = 0;      ///< when the current stage's message went out, then when its worker said STARTED
  int64_t queued_ms = 0;           ///< time it waited inside a worker's queue (SYNTH/PROVE sent → STARTED)
  int64_t synth_ms = 0, prove_ms = 0;  ///< time spent in synthesis and proving (last attempt)
  int64_t queued_since_ms = 0;     ///< monotonic: when it last became queued (queue wait for /metrics)
  /// The last attempt's time waiting: for a synthesis worker (from
  /// queued_since_ms) and for the GPU (from synthesized_at_ms), each
  /// worker's own queue included (PartitionTiming::queue_ms).
  int64_t wait_ms = 0;
  int64_t synthesized_at_ms = 0;   ///< monotonic: its witness was in its slot (SYNTH_DONE)
  int64_t proved_at_ms = 0;        ///< monotonic: the prove step answered (PROVE_DONE)
  int64_t verified_at_ms = 0;      ///< monotonic: its proof verified (mark_done)
  int64_t verify_ms = 0;           ///< PROVE_DONE → the verdict
  std::optional<int64_t> delivery_ms;  ///< verified → its files written by zkfarmd; nullopt: not (yet), or the client writes them
  /// Its stages' times for `result` (this instance's attempt; a partition
  /// proved by an earlier instance has them in the journal instead).
  PartitionTiming timing() const {
    return {synth_ms, wait_ms, prove_ms, verify_ms, delivery_ms};
  }
  /// A shared queue: the lease this host holds it under (its fencing token;
  /// 0 = none, or lost while a worker still has it) and, monotonic, until
  /// when that lease is good by this host's own count (renewals extend it).
  uint64_t lease = 0;
  int64_t lease_until_ms = 0;
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
  /// The folder of its input copies (STATE/inputs/jobs/TOKEN; a shared
  /// queue's SHARED/jobs/TOKEN); "" when unknown (a restored job: derived
  /// from its partitions' paths).
  std::string files_dir;
  /// A shared queue: the host that took its submit.
  std::string submitted_host;
  /// A shared queue's job of inputs: its generator's files by SHA-256
  /// (SHARED/generators/SHA256), fetched by a host that has no build of it.
  std::string generator_exe_sha256, generator_dat_sha256;
  /// Its witness graph's file by SHA-256 and graph.slower's text ("": none).
  std::string generator_graph_sha256, generator_graph_slower;
  std::vector<Partition> parts;
  /// A job of a shared queue (docs/cluster.md): its row is the truth and
  /// this host mirrors it; progress as the queue counts it (every host's proofs).
  bool shared = false;
  uint32_t shared_done = 0;
  uint64_t shared_attempts = 0;
  int64_t shared_synth_ms = 0, shared_prove_ms = 0;

  size_t count(PartState s) const;
  /// Partitions proved: this host's count, or the shared queue's.
  size_t done_count() const { return shared ? shared_done : count(PartState::kDone); }
  bool terminal() const { return state == JobState::kDone || state == JobState::kFailed || state == JobState::kCancelled; }
  /// The job object of docs/protocol.md.
  nlohmann::json to_json() const;
};

/// (job id, partition index)
struct PartRef {
  uint64_t job;
  uint32_t index;
};

/// The job table: the one owner of Job and Partition state once a job is in
/// it. Every change goes through a transition below (the supervisor reads
/// through const pointers), so each rule is in one place and unit-tested.
/// Times: `now` is monotonic ms (steady clock), `wall` Unix ms.
class JobTable {
 public:
  /// Adds a job with all partitions queued (queued since `now`), with the id
  /// job.id if nonzero (the ledger's), else the next free one; returns the id.
  uint64_t add(Job job, int64_t now = 0);
  /// Puts back a job loaded from the ledger as it is (states included).
  void restore(Job job);
  const Job* find(uint64_t id) const;
  const Partition* find(const PartRef& ref) const;
  const std::map<uint64_t, Job>& all() const { return jobs_; }

  /// The first partition in state `s` by dispatch order: highest priority, then
  /// oldest job, then lowest partition index. Terminal jobs are skipped.
  std::optional<PartRef> next(PartState s) const;
  /// Up to `n` more partitions of `first`'s job in state `s`, after it in
  /// index order (a synthesis worker's batch: one job, one circuit).
  std::vector<PartRef> more_of_job(const PartRef& first, PartState s, size_t n) const;
  /// Partitions in state `s` over all live jobs.
  size_t count(PartState s) const;
  /// How many jobs next() and count() walk now: the live ones, plus ended
  /// ones not yet met by a walk (for tests of that bound).
  size_t live_index_size() const { return live_.size(); }

  // -- A partition's way through the pipeline (design.md §3).
  /// queued → synthesizing in `slot` by `worker`: an attempt. Returns true
  /// when it is the job's first partition to start (started_ms = wall; the
  /// job becomes running).
  bool start_synthesis(const PartRef& ref, const shm::Slot& slot, const std::string& worker, int64_t now, int64_t wall);
  /// The worker said STARTED: the time in its queue ends, compute time begins.
  void worker_started(const PartRef& ref, int64_t now);
  /// synthesizing → synthesized (its witness is in its slot).
  void synthesized(const PartRef& ref, int64_t now);
  /// A partition of circom inputs: public.json and the public values, read
  /// from the witness its synthesis made.
  void set_public_signals(const PartRef& ref, std::string public_json, std::vector<U256> values);
  /// synthesized → proving by `worker`.
  void start_proving(const PartRef& ref, const std::string& worker, int64_t now);
  /// The prove step answered (its time, whatever the proof is worth).
  void proving_ended(const PartRef& ref, int64_t now);
  /// Back to the GPU queue in the same slot, renewed (a new generation): the
  /// witness is intact (a GPU worker died holding it, or its proof is proved
  /// again after a device fault). From `now` (monotonic) it waits for a GPU
  /// worker again; the prove step that ended is not counted as waiting.
  void reprove_in_slot(const PartRef& ref, const shm::Slot& renewed, int64_t now);
  /// Back to the queue from wherever it was in flight; returns its slot for
  /// the caller to free. For a partition of a job that ended meanwhile, it
  /// takes the job's end instead (failed or cancelled).
  std::optional<shm::Slot> back_to_queue(const PartRef& ref, int64_t now);
  /// A faulted attempt (Partition::faults) counted against it; returns the count so far.
  unsigned count_fault(const PartRef& ref);
  /// The partition fails (the caller fails its job); returns its slot to free.
  std::optional<shm::Slot> fail_partition(const PartRef& ref);
  /// Marks a partition done at `now` with its verified encoded proof (its
  /// verification time ends); its files are written next.
  void mark_done(const PartRef& ref, int64_t now, std::string proof = {});
  /// Marks a done partition's files written, or their write failed (`error`,
  /// the job then ends failed with it); the job becomes done when every
  /// partition is done and delivered. Returns true if this ended the job
  /// (never for a job that already ended: failed or cancelled meanwhile).
  /// `now` (monotonic) ends its delivery time, unless the client writes the
  /// files (client_delivery) or the write failed.
  bool mark_delivered(const PartRef& ref, int64_t now, int64_t wall, const std::string& error = {});
  /// Fails the job: its queued and synthesized partitions become failed; the
  /// caller frees their slots (returned) first.
  std::vector<shm::Slot> fail(uint64_t id, const std::string& error, int64_t wall);
  /// Cancels the job likewise. Partitions in a worker's hands keep their slot
  /// until the worker answers (the answer is then dropped).
  std::vector<shm::Slot> cancel(uint64_t id, int64_t wall);
  /// Forgets terminal jobs that finished before `cutoff_ms` (wall clock);
  /// returns how many.
  size_t prune(int64_t cutoff_ms);

  // -- A shared queue (docs/cluster.md): the jobs are mirrored from the
  // queue's rows; only the partitions this host holds a lease on move here.
  /// Adds or updates a job from its row (`row.shared`; parts sized k): header
  /// and progress; an ended row ends the job here (its queued and
  /// synthesized partitions with it: their slots are returned to free).
  /// Returns the slots to free.
  std::vector<shm::Slot> mirror(const Job& row);
  /// elsewhere → queued: this host holds it under `lease` until `until`
  /// (monotonic), with its files at `wtns` or `input` (local copies) and, for
  /// a witness, its public signals.
  /// False when the job is unknown or ended, or the partition not elsewhere.
  bool hold(const PartRef& ref, uint64_t lease, int64_t until, const std::string& wtns, const std::string& input,
            const std::string& input_name, std::string public_json, std::vector<U256> public_values, int64_t now);
  /// Renewed leases: good until `until` (monotonic).
  void renewed(const std::vector<uint64_t>& leases, int64_t until);
  /// The lease on `ref` is gone (expired, taken over, its job ended, or its
  /// proof refused): a partition not in a worker's hands (queued,
  /// synthesized, or proved here but not stored) is elsewhere again, its slot
  /// returned to free; one in a worker's hands keeps its slot until the
  /// answer, which is then dropped (lease 0).
  std::optional<shm::Slot> lose_lease(const PartRef& ref);
  /// The partition's proof is stored under its lease: the lease is spent.
  void lease_spent(const PartRef& ref);
  /// Leases held on partitions still queued here (not started): a drain or
  /// stop hands them back. Each becomes elsewhere.
  std::vector<uint64_t> release_queued();
  /// Every lease this host holds on a partition not yet proved here (ref and token).
  std::vector<std::pair<PartRef, uint64_t>> leases() const;

 private:
  Job* find_mut(uint64_t id);
  Partition* find_mut(const PartRef& ref);
  std::vector<shm::Slot> end_job(Job& job, JobState state, PartState part_state, int64_t now_ms);
  std::map<uint64_t, Job> jobs_;
  /// Ids of the jobs not known to have ended, ascending: what next() and
  /// count() walk on every loop pass, so that the loop's cost follows the
  /// live jobs, not the retained ones (a job never leaves a terminal state;
  /// an id whose job ended or was pruned is dropped when a walk meets it).
  mutable std::set<uint64_t> live_;
  uint64_t next_id_ = 1;
};

}  // namespace zkfarm::supervisor
