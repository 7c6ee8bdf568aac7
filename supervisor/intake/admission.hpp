#pragma once
// A submit on the loop (docs/protocol.md `submit`): refused at once when
// intake is closed (stopping, a journal or state-dir fault, the queue out of
// reach), else checked on intake's pool (submit.cpp: check_submission); a
// checked job is journaled on the journal lane (durable before the client
// hears "accepted"), then joins the job table, or the shared queue's mirror.
#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "shm/slots.hpp"
#include "supervisor/background.hpp"
#include "supervisor/config.hpp"
#include "supervisor/model/peer.hpp"
#include "supervisor/intake/circuit_registry.hpp"
#include "supervisor/intake/intake.hpp"
#include "supervisor/ledger/journal_lane.hpp"
#include "supervisor/ledger/ledger.hpp"
#include "supervisor/workers/lifecycle.hpp"
#include "supervisor/model/event_bus.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/model/loop_events.hpp"
#include "supervisor/pipeline/pipeline.hpp"
#include "supervisor/model/metrics.hpp"

namespace zkfarm::supervisor {

/// The loop's side of a submit, from the request to the reply that names
/// the job. Loop thread only; the check runs on Intake's pool, the journal
/// write on the journal lane.
///
/// Events (model/event_bus.hpp): emits ControlReply (the submit's answer).
class Admission {
 public:
  struct Hooks {
    /// Removes the copies a refused job's check made (housekeeping).
    std::function<void(const Job& job)> remove_inputs;
    /// Why a shared queue cannot take a job now ("" when it can, or on one host).
    std::function<std::string()> queue_fault;
    /// A job was added to the shared queue: sync and claim at the next pass.
    std::function<void()> queue_wake;
  };

  /// `slots`: read for the arena's capacity (a key whose partition cannot
  /// fit is refused). The job is journaled on `journal`'s thread.
  Admission(const Config& cfg, std::shared_ptr<spdlog::logger> log, Intake& intake, CircuitRegistry& circuits,
            const Lifecycle& lifecycle, JournalLane& journal, LoopInbox& inbox, JobTable& jobs,
            const shm::SlotAllocator& slots, Pipeline& pipeline, Metrics& metrics, EventBus& bus, Hooks hooks);

  /// `zkfarmctl submit` from `peer`: refused at once (a reply) when intake is
  /// closed or submit_queue checks are waiting, else its check is queued.
  void start(const std::string& identity, const protocol::Submit& req, const Peer& peer);
  /// Once a pass: every check that ended is accepted (journaled) or refused;
  /// one past submit_timeout_ms is refused.
  void finish_checks();

 private:
  void accept_checked(const std::string& identity, SubmitCheck c);
  /// The journal's answer to an accepted job's add_job: the job joins the
  /// table (or the mirror) and the client hears its id, or the refusal.
  void finish_accept(const std::string& identity, const std::shared_ptr<Job>& job,
                     const std::shared_ptr<const ProofVerifier>& vk, const std::string& token,
                     const std::string& checked, const std::string& error, bool storage_fault);
  void refuse(const std::string& identity, const std::string& why, RefusedReason reason);

  const Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  Intake& intake_;
  CircuitRegistry& circuits_;
  const Lifecycle& lifecycle_;
  JournalLane& journal_;
  LoopInbox& inbox_;
  JobTable& jobs_;
  const shm::SlotAllocator& slots_;
  Pipeline& pipeline_;
  Metrics& metrics_;
  EventBus& bus_;
  Hooks hooks_;
};

}  // namespace zkfarm::supervisor
