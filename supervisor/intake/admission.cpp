// Admission (admission.hpp): a submit from the request to its reply.
#include "supervisor/intake/admission.hpp"

#include <spdlog/fmt/fmt.h>

#include "protocol/messages.hpp"
#include "supervisor/clock.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

Admission::Admission(const Config& cfg, std::shared_ptr<spdlog::logger> log, Intake& intake, CircuitRegistry& circuits,
                     const Lifecycle& lifecycle, JournalLane& journal, LoopInbox& inbox, JobTable& jobs,
                     const shm::SlotAllocator& slots, Pipeline& pipeline, Metrics& metrics, EventBus& bus, Hooks hooks)
    : cfg_(cfg),
      log_(std::move(log)),
      intake_(intake),
      circuits_(circuits),
      lifecycle_(lifecycle),
      journal_(journal),
      inbox_(inbox),
      jobs_(jobs),
      slots_(slots),
      pipeline_(pipeline),
      metrics_(metrics),
      bus_(bus),
      hooks_(std::move(hooks)) {}

void Admission::refuse(const std::string& identity, const std::string& why, RefusedReason reason) {
  ++metrics_.jobs_refused[refused_reason_name(reason)];
  if (reason == RefusedReason::kBusy)  // not the request's fault: zkfarmctl retries it (exit 75 if it gives up)
    return bus_.emit(ControlReply{identity, {{"ok", false}, {"error", why}, {"busy", true}, {"retry_after_ms", 200}}});
  bus_.emit(ControlReply{identity, {{"ok", false}, {"error", why}}});
}

void Admission::start(const std::string& identity, const protocol::Submit& req, const Peer& peer) {
  if (lifecycle_.stopping())
    return refuse(identity, "zkfarmd is stopping: not accepting jobs", RefusedReason::kStopping);
  // The queue first, as status names it (Supervisor::intake_fault).
  if (const std::string fault = hooks_.queue_fault(); !fault.empty())
    return refuse(identity, "the queue is unreachable (" + fault + "); retry later", RefusedReason::kIntakeFault);
  if (!journal_.intake_fault().empty())
    return refuse(identity, "zkfarmd is not accepting jobs: " + journal_.intake_fault(), RefusedReason::kIntakeFault);
  SubmitContext ctx = intake_.context();
  if (req.circuit) ctx.circuit = circuits_.for_submit(*req.circuit);
  if (!intake_.start(identity, req, peer, std::move(ctx), steady_ms()))
    return refuse(identity,
                  "zkfarmd is busy: " + std::to_string(cfg_.submit_queue) +
                      " submits are waiting for their check; retry later",
                  RefusedReason::kBusy);
}

void Admission::finish_checks() {
  auto timed_out = [this](const std::string& identity) {
    refuse(identity,
           "the check of the job's files took longer than submit_timeout_ms (" +
               std::to_string(cfg_.submit_timeout_ms) + " ms); refused",
           RefusedReason::kTimeout);
  };
  for (auto& f : intake_.take_finished(steady_ms(), timed_out)) {
    if (f.answered) {
      if (f.check.job) hooks_.remove_inputs(*f.check.job);
      continue;
    }
    accept_checked(f.identity, std::move(f.check));
  }
}

void Admission::accept_checked(const std::string& identity, SubmitCheck c) {
  auto refuse = [&](const std::string& why, RefusedReason reason = RefusedReason::kInvalid) {
    if (c.job) hooks_.remove_inputs(*c.job);
    this->refuse(identity, why, reason);
  };
  if (!c.storage_fault.empty() && journal_.intake_fault().empty()) {
    journal_.close_intake("state dir write failed: " + c.storage_fault, steady_ms());
    log_->error("{}; intake is closed until it works again", journal_.intake_fault());
  }
  if (c.key_cached) ++metrics_.key_cache[{"submit", *c.key_cached ? "hit" : "miss"}];
  if (!c.job) return refuse(c.error, c.storage_fault.empty() ? RefusedReason::kInvalid : RefusedReason::kIntakeFault);
  Job& job = *c.job;
  if (lifecycle_.stopping()) return refuse("zkfarmd is stopping: not accepting jobs", RefusedReason::kStopping);
  if (!journal_.intake_fault().empty()) return refuse("zkfarmd is not accepting jobs: " + journal_.intake_fault(), RefusedReason::kIntakeFault);
  if (job.slot_bytes > slots_.capacity()) {
    return refuse(job.zkey_source + ": a partition of this key needs " + std::to_string(job.slot_bytes) +
                  " bytes of arena, the arena has " + std::to_string(slots_.capacity()) + " (raise arena_mib)");
  }
  job.submitted_ms = wall_ms();
  // Journaled on the journal thread (durable before the client hears
  // "accepted"); the job joins the table when that commit returns.
  auto pending = std::make_shared<Job>(std::move(job));
  intake_.journaling(c.token);
  const std::string checked = fmt::format("key {:.0f} ms, witnesses {:.1f} MB in {:.0f} ms", c.key_ms,
                                          double(c.witness_bytes) / 1e6, c.witness_ms);
  journal_.post([this, identity, pending, vk = c.vk, token = c.token, checked](Ledger& ledger) {
    std::string error, mark;
    bool storage = false;
    try {
      pending->id = ledger.add_job(*pending);
      if (const std::string notice = ledger.take_acknowledgement_notice(); !notice.empty())
        log_->warn("job {}: {}", pending->id, notice);
      mark = ledger.acknowledgement_fault();
    } catch (const JournalError& e) {
      error = e.what();
      storage = e.storage_fault();
    }
    inbox_.post([this, identity, pending, vk, token, checked, error, storage, mark] {
      // The mark took its probe before the commit but not the new number
      // after it (a fault in between): no more submits until it works again.
      if (error.empty() && !mark.empty() && journal_.intake_fault().empty()) {
        journal_.close_intake("acknowledged mark write failed: " + mark, steady_ms());
        log_->error("job {}: journaled, but {}; intake is closed until the mark takes a write", pending->id, mark);
      }
      finish_accept(identity, pending, vk, token, checked, error, storage);
    });
  });
}

void Admission::finish_accept(const std::string& identity, const std::shared_ptr<Job>& pending,
                              const std::shared_ptr<const ProofVerifier>& vk, const std::string& token,
                              const std::string& checked, const std::string& error, bool storage_fault) {
  intake_.journaled(token);
  if (!error.empty()) {
    log_->error("submit refused: {}", error);
    if (storage_fault && journal_.intake_fault().empty()) {
      journal_.close_intake("journal write failed: " + error, steady_ms());
    }
    hooks_.remove_inputs(*pending);
    return refuse(identity, "cannot journal the job: " + error, RefusedReason::kIntakeFault);
  }
  Job& job = *pending;
  if (vk) pipeline_.keys().remember(job.zkey_sha256, vk);
  const size_t k = job.parts.size();
  const std::string prio = priority_name(job.priority);
  const uint32_t owner = job.owner_uid;
  const bool client = job.client_delivery;
  const bool no_out = job.out.empty();
  uint64_t id = job.id;
  if (intake_.shared()) {
    // Mirrored like every job of the queue; its partitions are claimed from
    // the queue by whichever host has room (this one included).
    job.shared = true;
    job.submitted_host = cfg_.host_id;
    job.zkey = cfg_.state_dir + "/inputs/keys/" + job.zkey_sha256 + ".zkey";
    pipeline_.free_slots(jobs_.mirror(job));
    hooks_.queue_wake();  // sync and claim at the next pass
  } else {
    id = jobs_.add(std::move(job), steady_ms());
  }
  ++metrics_.jobs_accepted;
  log_->info("job {}: accepted from uid {}, {} partitions, priority {} ({}){}", id, owner, k, prio, checked,
             !client   ? ""
             : intake_.shared() ? "; into the shared queue, results written by clients"
             : no_out  ? "; no output folder: the client reads the results"
                       : "; results written by the client (zkfarmd cannot act as that user)");
  json reply = {{"ok", true}, {"job", id}, {"delivery", client ? "client" : "zkfarmd"}};
  if (client) reply["delivery_reason"] = intake_.shared() ? "queue" : no_out ? "none" : "user";
  bus_.emit(ControlReply{identity, reply});
}

}  // namespace zkfarm::supervisor
