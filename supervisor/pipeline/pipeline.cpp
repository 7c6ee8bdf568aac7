// Pipeline (pipeline.hpp): dispatch and the workers' answers.
#include "groth16/proof_json.hpp"
#include "groth16/proof_codec.hpp"
#include "protocol/worker_messages.hpp"
#include "supervisor/clock.hpp"
#include "supervisor/pipeline/pipeline.hpp"

#include <thread>

namespace zkfarm::supervisor {

namespace {
bool same_part(const PartRef& a, const PartRef& b) { return a.job == b.job && a.index == b.index; }

// What SYNTH, PROVE and ABORT name: the partition in its slot, as it is now.
protocol::WorkRef work_ref(const PartRef& ref, const shm::Slot& slot) {
  return {ref.job, ref.index, slot.id, slot.generation};
}

// verify_threads, 0: a quarter of the cores, at least one (the loop, the
// journal and the check pool keep theirs).
unsigned verify_threads(const Config& cfg) {
  if (cfg.verify_threads) return cfg.verify_threads;
  return std::max(1u, std::thread::hardware_concurrency() / 4);
}

// The most proofs verified in one batch: past ~64 the saving a proof is
// small (bench/kernels_bench.cpp --verifier) and a batch's verdicts wait longer.
constexpr size_t kMaxVerifyBatch = 64;
}  // namespace

Pipeline::Pipeline(const Config& cfg, std::shared_ptr<spdlog::logger> log, JobTable& jobs, shm::SlotAllocator& slots,
                   const shm::Arena& arena, WorkerTable& workers, const Lifecycle& lifecycle, Metrics& metrics,
                   JournalLane& journal, LoopInbox& inbox, EventBus& bus, Hooks hooks)
    : cfg_(cfg),
      log_(std::move(log)),
      jobs_(jobs),
      slots_(slots),
      arena_(arena),
      workers_(workers),
      lifecycle_(lifecycle),
      metrics_(metrics),
      journal_(journal),
      inbox_(inbox),
      bus_(bus),
      hooks_(std::move(hooks)),
      checks_(keys_, verify_threads(cfg_), kMaxVerifyBatch) {
  bus_.on<WorkerStarted>([this](const WorkerStarted& e) { on_started(e.worker, e.msg); });
  bus_.on<WorkerAnswered>([this](const WorkerAnswered& e) { on_done(e.worker, e.ref, e.result, e.synth); });
}

void Pipeline::free_slot(const std::optional<shm::Slot>& slot) {
  if (slot) slots_.free(slot->id);
}

void Pipeline::free_slots(const std::vector<shm::Slot>& slots) {
  for (const auto& s : slots) slots_.free(s.id);
}

void Pipeline::worker_gone(const Worker& w, bool crashed, const std::string& why) {
  for (const PartRef& ref : w.assigned) {
    const bool culprit = w.computing.empty() || std::any_of(w.computing.begin(), w.computing.end(), [&](const PartRef& c) {
                           return same_part(c, ref);
                         });
    requeue(ref, "worker " + w.id + " " + why, crashed && culprit);
  }
}

void Pipeline::requeue(const PartRef& ref, const std::string& why, bool crashed) {
  const Partition* p = jobs_.find(ref);
  const Job* job = jobs_.find(ref.job);
  if (!p || !job) return;
  if (crashed && !job->terminal() && jobs_.count_fault(ref) >= cfg_.max_attempts) {
    // A poison partition: its input takes down whichever worker gets it. It
    // fails (and with it its job) instead of crashing the farm's workers forever.
    fail_after_faults(ref, why);
    return;
  }
  // A GPU worker only reads its slots: the witness is intact, so the partition
  // goes back to the GPU queue in the same slot under a new generation (a
  // late answer about the old one is stale), never through synthesis again.
  if (p->state == PartState::kProving && p->slot && !job->terminal()) {
    if (auto renewed = slots_.renew(p->slot->id)) {
      jobs_.reprove_in_slot(ref, *renewed, steady_ms());
      ++metrics_.partitions_requeued_intact;
      log_->warn("job {} partition {}: back to the GPU queue, its witness kept in slot {} ({})", ref.job, ref.index,
                 renewed->id, why);
      return;
    }
  }
  const bool in_flight = p->state == PartState::kSynthesizing || p->state == PartState::kProving;
  // The slot's generation is bumped as it is freed, so a late answer about it is stale.
  free_slot(jobs_.back_to_queue(ref, steady_ms()));
  if (in_flight && !job->terminal()) log_->warn("job {} partition {}: back to the queue ({})", ref.job, ref.index, why);
}

void Pipeline::fail_after_faults(const PartRef& ref, const std::string& last) {
  const Partition* p = jobs_.find(ref);
  const unsigned faults = p ? p->faults : 0;
  free_slot(jobs_.fail_partition(ref));
  fail_job(ref.job, "partition " + std::to_string(ref.index) + ": " + std::to_string(faults) +
                        " attempts ended in a fault (max_attempts " + std::to_string(cfg_.max_attempts) + "); last: " +
                        last);
}

bool Pipeline::retry_after_device_fault(const PartRef& ref, const std::string& worker, const std::string& what) {
  ++metrics_.device_faults;
  const Partition* p = jobs_.find(ref);
  if (!p || jobs_.count_fault(ref) >= cfg_.max_attempts) return false;
  // From the same witness (a GPU worker never writes its slot), under a new
  // generation, so a late answer about this attempt is stale.
  if (auto renewed = p->slot ? slots_.renew(p->slot->id) : std::nullopt) {
    jobs_.reprove_in_slot(ref, *renewed, steady_ms());
    ++metrics_.partitions_requeued_intact;
  } else {
    free_slot(jobs_.back_to_queue(ref, steady_ms()));
  }
  log_->warn("job {} partition {}: proved again after a device fault on {} (attempt {} of max_attempts {} ended in "
             "a fault): {}", ref.job, ref.index, worker, p->faults, cfg_.max_attempts, what);
  return true;
}

void Pipeline::on_started(Worker& w, const protocol::Started& msg) {
  const PartRef ref{msg.ref.job, msg.ref.partition};
  if (!slots_.is_current(msg.ref.slot, msg.ref.generation) ||
      std::none_of(w.assigned.begin(), w.assigned.end(), [&](const PartRef& r) { return same_part(r, ref); }))
    return;  // stale: withdrawn or renewed meanwhile
  if (std::none_of(w.computing.begin(), w.computing.end(), [&](const PartRef& c) { return same_part(c, ref); }))
    w.computing.push_back(ref);
  jobs_.worker_started(ref, steady_ms());
}

void Pipeline::on_done(Worker& w, const protocol::WorkRef& work, const protocol::WorkResult& result, bool synth) {
  const PartRef ref{work.job, work.partition};
  const uint32_t slot = work.slot;
  const uint64_t generation = work.generation;
  auto held = std::find_if(w.assigned.begin(), w.assigned.end(), [&](const PartRef& r) { return same_part(r, ref); });
  if (!slots_.is_current(slot, generation) || held == w.assigned.end()) {
    log_->warn("worker {}: ignored a stale answer for job {} partition {} (slot {} generation {})", w.id, ref.job,
               ref.index, slot, generation);
    return;
  }
  w.assigned.erase(held);
  std::erase_if(w.computing, [&](const PartRef& c) { return same_part(c, ref); });
  if (w.assigned.empty()) w.state.on(WorkerEvent::kAllAnswered);  // refused unless busy (a stopping worker stays so)
  const Partition* p = jobs_.find(ref);
  const Job* job = jobs_.find(ref.job);
  if (!p || !job) return;
  if (job->terminal() || (job->shared && !p->lease)) {
    // Cancelled or failed meanwhile, or (a shared queue) its lease was
    // dropped: the work is dropped, the slot freed.
    free_slot(jobs_.back_to_queue(ref, steady_ms()));
    return;
  }
  if (!result.ok && !synth && result.device_fault) {  // the device's fault, not the partition's
    log_->error("job {} partition {}: the prove step faulted on {}'s device: {}", ref.job, ref.index, w.id,
                result.error);
    if (!retry_after_device_fault(ref, w.id, result.error))
      fail_after_faults(ref, "the prove step faulted on the device: " + result.error);
    return;
  }
  if (!result.ok) {
    const std::string& error = result.error;
    log_->error("job {} partition {}: {} failed in {}: {}", ref.job, ref.index, synth ? "synthesis" : "proving",
                w.id, error);
    ++metrics_.partitions_failed;
    free_slot(jobs_.fail_partition(ref));
    fail_job(ref.job, "partition " + std::to_string(ref.index) + ": " + error);
    return;
  }
  w.history.backoff_ms = cfg_.restart_backoff_ms;  // a worker that delivers is healthy again
  if (synth) {
    jobs_.synthesized(ref, steady_ms());
    // A witness made from circom inputs: its public signals (values 1..nPublic)
    // are in the slot now; public.json and the verification read them there.
    if (job->inputs() && p->slot) take_public_signals(*job, *p);
    log_->debug("job {} partition {}: synthesized by {}", ref.job, ref.index, w.id);
  } else {
    jobs_.proving_ended(ref, steady_ms());
    if (result.key_cached) ++metrics_.key_cache[{"worker", *result.key_cached ? "hit" : "miss"}];
    verify_partition(w, ref, result.proof);
  }
}

void Pipeline::verify_partition(const Worker& w, const PartRef& ref, std::string proof) {
  const Job* job = jobs_.find(ref.job);
  const Partition* p = jobs_.find(ref);
  // Nothing is journaled or published before it verifies against the key's
  // verification data taken at submit (verifying_keys.hpp): not a wrong result
  // of a faulty device, not a witness that does not satisfy its circuit. The
  // partition stays kProving, in its slot, until the verdict: a drain waits
  // for it, a cancel or a lost lease makes the verdict stale.
  if (!p->slot) {  // cannot happen (a PROVE names its slot); never published unverified
    free_slot(jobs_.back_to_queue(ref, steady_ms()));
    return;
  }
  Proved by{ref, *p->slot, w.id, w.backend};
  ProofChecks::Request r{.key_id = VerifyingKeys::key_id(*job),
                         .zkey = job->zkey,
                         .proof = std::move(proof),
                         .public_values = p->public_values,
                         .public_json = p->public_values.empty() ? p->public_json : std::string(),
                         .n_public = job->n_public};
  r.done = [this, by = std::move(by), proof = r.proof](std::string verdict) {
    inbox_.post([this, by, proof, verdict = std::move(verdict)] { on_verified(by, proof, verdict); });
  };
  checks_.submit(std::move(r));
}

void Pipeline::on_verified(const Proved& by, const std::string& proof_bytes, const std::string& bad) {
  const PartRef& ref = by.ref;
  const Job* job = jobs_.find(ref.job);
  const Partition* p = jobs_.find(ref);
  if (!job || !p) return;
  if (p->state != PartState::kProving || !p->worker.empty() || !p->slot || p->slot->id != by.slot.id ||
      p->slot->generation != by.slot.generation || !slots_.is_current(by.slot.id, by.slot.generation)) {
    log_->debug("job {} partition {}: a verdict about slot {} generation {} is stale", ref.job, ref.index, by.slot.id,
                by.slot.generation);
    return;
  }
  if (job->terminal()) {  // cancelled or failed meanwhile: the proof is dropped, the slot freed
    free_slot(jobs_.back_to_queue(ref, steady_ms()));
    return;
  }
  if (!bad.empty()) {
    ++metrics_.proofs_rejected;
    const bool device = by.backend != "cpu";
    log_->error("job {} partition {}: the proof from {} (backend {}) does not verify: {}{}", ref.job, ref.index,
                by.worker, by.backend, bad, device ? " (counted as a device fault)" : "");
    // A device's wrong result may not repeat: proved again, an attempt
    // counted, until max_attempts (then, as from the CPU, the job fails).
    if (device && retry_after_device_fault(ref, by.worker, "its proof does not verify: " + bad)) return;
    free_slot(jobs_.fail_partition(ref));
    fail_job(ref.job, "partition " + std::to_string(ref.index) +
                          ": the proof does not verify: the witness does not satisfy the circuit, the key is damaged, or the " +
                          (device ? "device" : "prover") + " computed a wrong result (" + bad + ")");
    return;
  }
  ++metrics_.partitions_proved;
  metrics_.synthesis.observe(double(p->synth_ms) / 1000.0);
  metrics_.proving.observe(double(p->prove_ms) / 1000.0);
  if (job->shared && !p->lease) {
    // A shared queue stores a proof only under the lease this host holds
    // (the queue refuses it otherwise).
    log_->warn("job {} partition {}: proved by {}, but its lease was dropped meanwhile; not stored", ref.job,
               ref.index, by.worker);
    free_slot(jobs_.back_to_queue(ref, steady_ms()));
    return;
  }
  free_slot(p->slot);
  jobs_.mark_done(ref, steady_ms(), proof_bytes);  // its verification time ends here
  log_->info("job {} partition {}: proved by {} and verified (witness {} ms, queued at the worker {} ms, proving {} ms)",
             ref.job, ref.index, by.worker, p->synth_ms, p->queued_ms, p->prove_ms);
  ProofRecord rec;
  rec.proof = p->proof;
  rec.proved_ms = wall_ms();
  rec.synth_ms = p->synth_ms;
  rec.prove_ms = p->prove_ms;
  rec.queue_ms = p->wait_ms;
  rec.verify_ms = p->verify_ms;
  if (job->inputs()) rec.public_json = p->public_json;
  if (job->shared) {
    // Stored under its lease by the cluster mirror; the job ends by its row,
    // and clients write the results (`zkfarmctl wait` or `result` on any host).
    rec.lease_token = p->lease;
    bus_.emit(SharedProofVerified{ref, std::move(rec)});
    return;
  }
  // Journaled on the journal thread: once it commits the proof survives
  // anything; a second proof of the same partition (re-proved after a crash)
  // is refused. A journal fault keeps the write for later and goes on: the
  // proof is verified, so publishing it before it is journaled is safe.
  journal_.add_proof(ref.job, ref.index, std::move(rec));
  bus_.emit(PartitionProved{*job, ref.index});  // the job is done once its files are written (on_published)
}

// The witness of a partition of circom inputs was made by its synthesis
// worker; the supervisor reads values 1..nPublic from the slot (its own
// arena) rather than trusting a copy in the worker's answer.
void Pipeline::take_public_signals(const Job& job, const Partition& p) {
  const uint64_t bytes = (uint64_t(job.n_public) + 1) * 32;
  const auto* w = reinterpret_cast<const U256*>(arena_.at(p.slot->offset, bytes));
  std::vector<U256> pub(w, w + job.n_public + 1);
  jobs_.set_public_signals({job.id, p.index}, public_to_json(pub.data(), job.n_public),
                           std::vector<U256>(pub.begin() + 1, pub.end()));
}

void Pipeline::fail_job(uint64_t id, const std::string& error) {
  const Job* before = jobs_.find(id);
  const bool was_live = before && !before->terminal();
  free_slots(jobs_.fail(id, error.substr(0, 2000), wall_ms()));
  if (const Job* job = jobs_.find(id)) {
    if (was_live) bus_.emit(JobEnded{*job});
    journal_.finish_job(id, JobState::kFailed, job->error, job->finished_ms);
  }
  log_->error("job {}: failed: {}", id, error.substr(0, 2000));
}

size_t Pipeline::synth_batch_size(const Job& job, size_t queued, size_t idle_workers) const {
  // Its share of what is queued, so a small job still spreads over the
  // workers; at most synth_batch, and 256 MiB of witness slots at once.
  const size_t share = (queued + idle_workers - 1) / std::max<size_t>(1, idle_workers);
  const size_t by_memory = std::max<uint64_t>(1, (uint64_t(256) << 20) / std::max<uint64_t>(1, job.slot_bytes));
  return std::clamp<size_t>(std::min(share, by_memory), 1, cfg_.synth_batch);
}

void Pipeline::dispatch() {
  size_t idle = 0;
  for (auto& [id, w] : workers_.all())
    idle += w.kind == WorkerKind::kSynth && w.state == WorkerState::kIdle && !w.retiring;
  // Counted once a pass (a walk over every live partition), then kept by hand.
  size_t queued = idle ? jobs_.count(PartState::kQueued) : 0;
  for (auto& [id, w] : workers_.all()) {
    if (w.kind != WorkerKind::kSynth || w.state != WorkerState::kIdle || w.retiring) continue;
    if (lifecycle_.stopping() || lifecycle_.draining()) continue;  // in-flight work finishes, none starts
    auto first = jobs_.next(PartState::kQueued);
    if (!first) break;
    // A batch of the job's queued partitions (synth_batch_size), each in a
    // slot of its own; the worker evaluates them together.
    std::vector<PartRef> batch{*first};
    const Job* job = jobs_.find(first->job);  // a queued partition's job is in the table
    auto more = jobs_.more_of_job(*first, PartState::kQueued, synth_batch_size(*job, queued, idle) - 1);
    batch.insert(batch.end(), more.begin(), more.end());
    --idle;
    // Slots first (the memory budget may hold fewer than the batch: the rest
    // wait), then the SYNTHs, each saying how many were sent together.
    std::vector<std::pair<PartRef, shm::Slot>> reserved;
    for (const PartRef& ref : batch) {
      auto slot = slots_.allocate(job->slot_bytes);
      if (!slot) break;
      reserved.emplace_back(ref, *slot);
    }
    if (reserved.empty()) break;
    for (const auto& [ref, slot] : reserved) send_synth(w, ref, slot, reserved.size());
    const size_t sent = reserved.size();
    queued -= std::min(queued, sent);
    workers_.move(w, WorkerEvent::kAssigned);
  }
  dispatch_gpu();
}

void Pipeline::send_synth(Worker& w, const PartRef& ref, const shm::Slot& slot, size_t batch_of) {
  const Job* job = jobs_.find(ref.job);
  const Partition* p = jobs_.find(ref);
  const int64_t queued_since = p->queued_since_ms;
  if (jobs_.start_synthesis(ref, slot, w.id, steady_ms(), wall_ms()))
    journal_.set_started(job->id, job->started_ms);
  if (queued_since) metrics_.queue_wait.observe(double(p->stage_start_ms - queued_since) / 1000.0);
  protocol::Synth m{.ref = work_ref(ref, slot), .span = {slot.offset, slot.size}, .zkey = job->zkey,
                    .witness = protocol::WitnessFile{p->wtns}, .batch_of = batch_of};
  if (job->inputs()) {  // circom inputs: the synthesis worker runs the circuit's generator
    m.witness = protocol::CircuitInput{.generator = job->generator,
                                       .input = p->input,
                                       .input_name = p->input_source,
                                       .witness_timeout_ms = cfg_.witness_timeout_ms,
                                       .witness_memory_mib = cfg_.witness_memory_mib,
                                       .witness_cpu_s = cfg_.witness_cpu_s,
                                       .sandbox_user = cfg_.sandbox_user,
                                       .sandbox_uid_base = cfg_.sandbox_uid_base,
                                       .sandbox_uid_count = cfg_.sandbox_uid_count,
                                       .witness_engine = cfg_.witness_engine};
    if (const CircuitRecord* c = hooks_.circuit_of ? hooks_.circuit_of(job->generator) : nullptr) {
      auto& in = std::get<protocol::CircuitInput>(m.witness);
      in.statement = c->inputs;
      in.graph_sha256 = c->graph_sha256;
    }
  }
  hooks_.send(w, protocol::encode(m));
  w.assigned.push_back(ref);
}

void Pipeline::dispatch_gpu() {
  // GPU workers: each holds up to gpu_queue_depth partitions, so the next is
  // already there when one finishes (no round trip between two proofs). The
  // least loaded worker is filled first.
  auto gpu_ready = [](const Worker& w) {
    return w.kind == WorkerKind::kGpu && !w.retiring &&
           (w.state == WorkerState::kIdle || w.state == WorkerState::kBusy);
  };
  // With lanes, every lane computing and one more waiting, at the least.
  const size_t max_depth = std::max<size_t>(cfg_.gpu_queue_depth, size_t(cfg_.gpu_lanes) + 1);
  for (size_t depth = 1; depth <= max_depth; ++depth) {
    for (auto& [id, w] : workers_.all()) {
      if (!gpu_ready(w) || w.assigned.size() >= depth) continue;
      auto ref = jobs_.next(PartState::kSynthesized);
      if (!ref) return;
      send_prove(w, *ref);
    }
  }
  // A partition of higher priority than everything a worker holds may go one
  // beyond the depth: the worker takes it next, so it overtakes what is only
  // queued there (never what is computing).
  for (auto& [id, w] : workers_.all()) {
    if (!gpu_ready(w) || w.assigned.size() != max_depth) continue;
    auto ref = jobs_.next(PartState::kSynthesized);
    if (!ref) return;
    const Priority top = jobs_.find(ref->job)->priority;
    const bool overtakes = std::all_of(w.assigned.begin(), w.assigned.end(), [&](const PartRef& r) {
      const Job* held = jobs_.find(r.job);
      return held && held->priority < top;
    });
    if (overtakes) send_prove(w, *ref);
  }
}

void Pipeline::send_prove(Worker& w, const PartRef& ref) {
  const Job* job = jobs_.find(ref.job);
  const Partition* p = jobs_.find(ref);
  jobs_.start_proving(ref, w.id, steady_ms());
  hooks_.send(w, protocol::encode(protocol::Prove{.ref = work_ref(ref, *p->slot),
                                                     .span = {p->slot->offset, p->slot->size},
                                                     .zkey = job->zkey,
                                                     .priority = uint64_t(job->priority)}));
  w.assigned.push_back(ref);
  workers_.move(w, WorkerEvent::kAssigned);
}

// Tells the workers holding the partitions `which` picks to abandon them
// (ABORT); each answers ok:false at its next stage boundary and the slot is
// freed then, never while a worker may still write into it.
void Pipeline::abort_where(const std::function<bool(const PartRef&)>& which) {
  for (auto& [id, w] : workers_.all()) {
    for (const PartRef& ref : w.assigned) {
      if (!which(ref)) continue;
      const Partition* p = jobs_.find(ref);
      if (p && p->slot) hooks_.send(w, protocol::encode(protocol::Abort{work_ref(ref, *p->slot)}));
    }
  }
}

void Pipeline::abort_in_flight(uint64_t job) {
  abort_where([job](const PartRef& r) { return r.job == job; });
}

void Pipeline::abort_partition(const PartRef& ref) {
  abort_where([&ref](const PartRef& r) { return same_part(r, ref); });
}

void Pipeline::cancel_job(uint64_t id, uint32_t by_uid) {
  const Job* job = jobs_.find(id);
  if (!job || job->terminal()) return;
  free_slots(jobs_.cancel(id, wall_ms()));
  bus_.emit(JobEnded{*job});
  journal_.finish_job(id, JobState::kCancelled, "", job->finished_ms);
  abort_in_flight(id);
  log_->info("job {}: cancelled by uid {}", id, by_uid);
}

}  // namespace zkfarm::supervisor
