#pragma once
// A partition's way through the farm, as the loop drives it (design.md §3):
// dispatch() hands queued partitions to idle synthesis workers (a slot of the
// arena each), synthesized ones to GPU workers; the workers' answers move
// them on (on_started, on_done); a proof is verified, off the loop and in
// batches by key (ProofChecks), before it is journaled and published
// (on_verified); a worker's exit sends what it held back
// (worker_gone). Every state change is a JobTable transition (jobs.hpp);
// every time is monotonic except the journaled ones.
#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/worker_messages.hpp"
#include "shm/arena.hpp"
#include "shm/slots.hpp"
#include "supervisor/background.hpp"
#include "supervisor/config.hpp"
#include "supervisor/ledger/journal_lane.hpp"
#include "supervisor/ledger/ledger.hpp"
#include "supervisor/workers/lifecycle.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/pipeline/proof_checks.hpp"
#include "supervisor/pipeline/verifying_keys.hpp"
#include "supervisor/model/event_bus.hpp"
#include "supervisor/model/loop_events.hpp"
#include "supervisor/model/metrics.hpp"
#include "supervisor/workers/worker_link.hpp"
#include "supervisor/workers/worker_table.hpp"

namespace zkfarm::supervisor {

/// Partition `index` of `job` was proved, its proof verified and journaled:
/// its files are written next (delivery.hpp), and the job ends once every
/// partition is delivered. Handled by Delivery.
struct PartitionProved {
  const Job& job;
  uint32_t index;
};

/// A shared queue's partition was proved here and its proof verified: stored
/// under its lease. Handled by the cluster mirror.
struct SharedProofVerified {
  PartRef ref;
  ProofRecord rec;
};

/// The pipeline: jobs' partitions, their slots of the arena and their
/// dispatch, over the loop's JobTable and WorkerTable. Loop thread only.
///
/// Events (model/event_bus.hpp): handles WorkerStarted and WorkerAnswered
/// (worker_link.hpp); emits PartitionProved, SharedProofVerified and JobEnded
/// (a partition failed, a cancel).
class Pipeline {
 public:
  /// What the pipeline asks of the rest of the farm (a command and a query).
  struct Hooks {
    /// Sends `frame` (a protocol::encode of worker_messages.hpp) to worker `w`.
    std::function<void(const Worker& w, const std::string& frame)> send;
    /// The registered circuit whose generator is `generator` (a job's
    /// STATE/circuits/HASH/generator), nullptr when none is now: its input
    /// positions and graph hash go to the synthesis worker with the partition.
    std::function<const CircuitRecord*(const std::string& generator)> circuit_of;
  };

  /// `jobs`, `slots` (over `arena`) and `workers` are the loop's tables;
  /// `lifecycle` says whether new work may start; every ledger write goes
  /// through `journal` (the journal lane's thread), whose answers come back
  /// through `inbox`.
  Pipeline(const Config& cfg, std::shared_ptr<spdlog::logger> log, JobTable& jobs, shm::SlotAllocator& slots,
           const shm::Arena& arena, WorkerTable& workers, const Lifecycle& lifecycle, Metrics& metrics,
           JournalLane& journal, LoopInbox& inbox, EventBus& bus, Hooks hooks);

  /// Queued partitions to idle synthesis workers (one slot each, while the
  /// arena has room; a batch of one job's partitions each: synth_batch_size), synthesized ones to GPU workers (up to gpu_queue_depth
  /// each, at least gpu_lanes + 1; one more for a partition of higher priority). Nothing starts while
  /// the farm drains or stops.
  void dispatch();
  /// A worker's STARTED: the partition it computes now (a stale one is ignored).
  void on_started(Worker& w, const protocol::Started& msg);
  /// A worker's SYNTH_DONE (`synth`) or PROVE_DONE for `ref`: the partition
  /// moves on, or fails with its job; a stale answer (slot renewed, withdrawn)
  /// is logged and ignored. A proof is verified before anything is journaled.
  void on_done(Worker& w, const protocol::WorkRef& ref, const protocol::WorkResult& result, bool synth);
  /// A worker's process is gone: every partition it held goes back to a
  /// queue. A crash counts (max_attempts) against those it was computing, or
  /// against all it held when no STARTED came.
  void worker_gone(const Worker& w, bool crashed, const std::string& why);
  /// `zkfarmctl cancel`: the live job `id` ends cancelled (slots freed,
  /// journaled, aborted in the workers that hold its partitions).
  void cancel_job(uint64_t id, uint32_t by_uid);
  /// Tells the workers busy with `job`'s partitions to abandon them (ABORT);
  /// each answers at its next stage boundary and the slot is freed then.
  void abort_in_flight(uint64_t job);
  /// ABORT to the worker that holds partition `ref` (its lease is gone).
  void abort_partition(const PartRef& ref);
  /// Frees slots a JobTable transition gave back (their generations move on).
  void free_slots(const std::vector<shm::Slot>& slots);
  void free_slot(const std::optional<shm::Slot>& slot);
  /// The verification data of every key proved for.
  VerifyingKeys& keys() { return keys_; }
  /// The proof checks (for /metrics: proofs and batches verified, waiting).
  const ProofChecks& checks() const { return checks_; }

 private:
  void requeue(const PartRef& ref, const std::string& why, bool crashed);
  /// A fault of the device, not of the partition (a prove step that faulted
  /// on a device still usable, or a device's proof that did not verify),
  /// counted against the partition (Partition::faults). Below max_attempts
  /// it goes back to the GPU queue in its slot (renewed) and this returns
  /// true; at max_attempts it returns false and the caller fails it.
  bool retry_after_device_fault(const PartRef& ref, const std::string& worker, const std::string& what);
  /// Fails the partition (and its job) whose attempts up to max_attempts all
  /// ended in a fault, naming the count and the `last` fault.
  void fail_after_faults(const PartRef& ref, const std::string& last);
  /// ABORT for every partition a worker holds that `which` picks.
  void abort_where(const std::function<bool(const PartRef&)>& which);
  void send_prove(Worker& w, const PartRef& ref);
  /// Queued → synthesizing in `slot` (allocated for it), SYNTH sent to `w`
  /// saying it is one of `batch_of` sent together.
  void send_synth(Worker& w, const PartRef& ref, const shm::Slot& slot, size_t batch_of);
  /// GPU workers' share of dispatch().
  void dispatch_gpu();
  /// Partitions of `job` one idle synthesis worker takes at once: its share
  /// of the `queued` partitions over `idle_workers`, at most synth_batch and
  /// 256 MiB of witness slots, at least 1.
  size_t synth_batch_size(const Job& job, size_t queued, size_t idle_workers) const;
  /// A partition of circom inputs just synthesized: its public signals, read
  /// from the witness in its slot, for public.json and the verification.
  void take_public_signals(const Job& job, const Partition& p);
  /// A proof from worker `w` for `ref`: to the proof checks, with the slot
  /// it was proved from; on_verified takes it from there on the loop.
  void verify_partition(const Worker& w, const PartRef& ref, std::string proof);
  /// Who proved a proof being verified, and from which slot (generation
  /// included): a verdict about a slot renewed or freed meanwhile is stale.
  struct Proved {
    PartRef ref;
    shm::Slot slot;
    std::string worker, backend;
  };
  /// The verdict on `proof` ("" verified): journaled and published, proved
  /// again (a device fault), or the job fails; nothing when stale.
  void on_verified(const Proved& by, const std::string& proof, const std::string& verdict);
  void fail_job(uint64_t job, const std::string& error);

  const Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  JobTable& jobs_;
  shm::SlotAllocator& slots_;
  const shm::Arena& arena_;
  WorkerTable& workers_;
  const Lifecycle& lifecycle_;
  Metrics& metrics_;
  JournalLane& journal_;
  LoopInbox& inbox_;
  EventBus& bus_;
  Hooks hooks_;
  VerifyingKeys keys_;
  ProofChecks checks_;  // last: its threads use keys_, and stop before it goes
};

}  // namespace zkfarm::supervisor
