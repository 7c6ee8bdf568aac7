#pragma once
// The registered circuits (docs/witness.md): `zkfarmctl circuit add|list|remove`
// and what a submit of inputs needs of a circuit by name. It owns the table
// of circuits (journaled), the builds in progress (on a pool of their own,
// one per submitter at a time) and where built generators live
// (STATE/circuits/HASH/generator). The build itself runs in build_circuit
// (supervisor.hpp, circuits.cpp); journal writes and replies go through the
// hooks, on the loop's thread.
#include <spdlog/logger.h>

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "protocol/control_requests.hpp"
#include "supervisor/check_pool.hpp"
#include "supervisor/config.hpp"
#include "supervisor/ledger/ledger.hpp"
#include "supervisor/model/event_bus.hpp"
#include "supervisor/model/loop_events.hpp"
#include "supervisor/intake/submission.hpp"

namespace zkfarm::supervisor {

/// Events (model/event_bus.hpp): emits ControlReply (a held `circuit add`'s answer).
class CircuitRegistry {
 public:
  /// What the registry asks of the rest of the farm (all called on the loop).
  struct Hooks {
    /// Where a build's copies go, and the caches it uses (a submit's context).
    std::function<SubmitContext()> submit_context;
    /// Journals a new circuit on the journal thread; `done` runs on the loop
    /// with "" or the journal's error.
    std::function<void(std::shared_ptr<const CircuitRecord>, std::function<void(const std::string& error)> done)>
        put;
    /// Journals a removal (in order with every other write).
    std::function<void(const std::string& name)> remove;
    /// Remembers a key's prepared verification data by its SHA-256.
    std::function<void(const std::string& zkey_sha256, std::shared_ptr<const ProofVerifier> vk)> remember_vk;
  };

  /// `shared`: a shared queue (circuits' keys and generators are published
  /// under cfg.shared_dir). `witgen_root`: the generator hosts' sources.
  CircuitRegistry(const Config& cfg, std::shared_ptr<spdlog::logger> log, bool shared, std::string witgen_root,
                  EventBus& bus, Hooks hooks);

  /// Every circuit journaled (at start), or the queue's current set (a
  /// shared queue's sync): replaces the table.
  void replace_all(std::vector<CircuitRecord> circuits);
  const std::map<std::string, CircuitRecord>& all() const { return circuits_; }
  /// A circuit whose built generator is `exe` (generator_path of its
  /// record's hash), nullptr when none: a job's circuit by its generator.
  const CircuitRecord* by_generator(const std::string& exe) const;
  /// A circuit as a submit of inputs needs it; nullopt when there is none by that name.
  std::optional<CircuitForSubmit> for_submit(const std::string& name) const;
  /// STATE/circuits/HASH/generator.
  std::string generator_path(const std::string& hash) const;
  /// Whether an add is in progress, from its build until its journal write
  /// has put the circuit in the table: housekeeping then leaves cached builds
  /// and keys alone (a finished build's key copy is used by no job and no
  /// circuit yet until that write returns).
  bool building() const { return !building_.empty(); }

  /// `circuit add`: refused at once (replied through the hook), or built on
  /// the pool and answered by finish_adds(). `stopping`: zkfarmd is stopping.
  void start_add(const std::string& identity, const protocol::CircuitAdd& req, const Peer& peer, Role role, bool stopping);
  /// Answers the adds whose build finished (journaled first).
  void finish_adds();
  /// `circuit list`: every name; where another user's files came from only
  /// for admins and the owner.
  nlohmann::json list(const Peer& peer, Role role) const;
  /// `circuit remove`: by its owner or an admin; the reply.
  nlohmann::json remove(const protocol::CircuitRemove& req, const Peer& peer, Role role);

 private:
  struct PendingBuild {
    std::string identity;
    std::future<CircuitBuild> result;
    std::string name;
    uint32_t owner_uid = 0;
    std::string submitter;  ///< whose build slot it holds: "uid N", or "tenant T" (zkfarm-api)
  };
  const Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  bool shared_;
  std::string witgen_root_;
  /// Answers a held `circuit add` request (a ControlReply event).
  void reply(const std::string& identity, nlohmann::json r) { bus_.emit(ControlReply{identity, std::move(r)}); }

  EventBus& bus_;
  Hooks hooks_;
  std::map<std::string, CircuitRecord> circuits_;  ///< by name (journaled)
  CheckPool build_pool_;                           ///< generator builds, generator_builds at once
  std::vector<PendingBuild> pending_builds_;
  std::set<std::string> building_;  ///< names whose add is in progress: built, or journaled, or being so
};

}  // namespace zkfarm::supervisor
