#pragma once
// A host of a shared queue (docs/cluster.md). With queue_url set, the
// ledger is a PostgreSQL queue several zkfarmd share, and each pass of the
// loop runs ClusterMirror::tick():
//   sync    the job rows that changed (Ledger::changes_since) → the mirror
//           in the job table: every host shows every job, and ends its own
//           work on a job another host failed or a client cancelled;
//   renew   every third of lease_seconds: the leases this host holds, with
//           its heartbeat; a lease not renewed is dropped here;
//   expire  every half lease: expired leases of any host go back (or fail),
//           done by the one host holding the maintenance turn (docs/cluster.md);
//   claim   while this host has room: partitions into leases, then their
//           files are made ready (claim_prep.hpp) and they join the local
//           queue, where the pipeline dispatches them as on one host;
//   view    every few seconds: hosts and queue counts for status.
// A NOTIFY (PgListener) makes sync and claim run at once. Every queue call
// runs on the journal lane's thread; what comes back is applied on the loop.
// While the queue cannot be reached, held work goes on, nothing is claimed,
// and status says so. Times: monotonic.
#include <spdlog/logger.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "supervisor/background.hpp"
#include "supervisor/check_pool.hpp"
#include "supervisor/cluster/claim_prep.hpp"
#include "supervisor/config.hpp"
#include "supervisor/intake/circuit_registry.hpp"
#include "supervisor/intake/intake.hpp"
#include "supervisor/ledger/journal_lane.hpp"
#include "supervisor/ledger/ledger.hpp"
#include "supervisor/ledger/pg_listener.hpp"
#include "supervisor/workers/lifecycle.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/pipeline/pipeline.hpp"
#include "supervisor/workers/worker_table.hpp"

namespace zkfarm::supervisor {

/// This host's side of a shared queue: the mirror of the queue's jobs in the
/// loop's JobTable, the leases this host holds, and its claims. Exists only
/// when the ledger is shared; loop thread only, but for the listener's
/// wake-ups.
///
/// Events (model/event_bus.hpp): handles LedgerReach (journal_lane.hpp),
/// ClaimsToHandBack (lifecycle.hpp) and SharedProofVerified (pipeline.hpp);
/// emits JobEnded (a job the queue ended: failed or cancelled elsewhere).
class ClusterMirror {
 public:
  /// The host is registered already (Supervisor's start); this starts the
  /// claim preparation threads and LISTENs on a connection of its own.
  /// `where`: the queue as logs and status name it (Ledger::where). The queue
  /// is reached only on `journal`'s thread, through its tasks (on_queue).
  ClusterMirror(const Config& cfg, std::shared_ptr<spdlog::logger> log, std::string where, JournalLane& journal,
                LoopInbox& inbox, JobTable& jobs, const WorkerTable& workers, const Lifecycle& lifecycle,
                Pipeline& pipeline, CircuitRegistry& circuits, const Intake& intake, EventBus& bus);

  /// One pass: sync, renew, expire, claim, view, each when it is due and not
  /// already on its way.
  void tick();
  /// Whether the last queue call reached the queue (any of them reports here).
  void reached(bool ok, const std::string& why);
  bool reachable() const { return reach_.reachable; }
  /// Why not, while unreachable.
  const std::string& fault() const { return reach_.fault; }
  /// The mirror is current: the queue answers and a sync reached it within
  /// the last 10 s (`now`: steady ms).
  bool fresh(int64_t now) const { return reach_.reachable && now - feed_.last_sync_ms < 10000; }
  /// The first sync is done: every job of the queue is mirrored here, so
  /// `zkfarmctl wait`/`status` on this host see jobs submitted elsewhere.
  bool synced() const { return feed_.synced; }
  /// Sync and claim at the next pass (a job was just added here).
  void wake() { notified_.any = true; }
  /// Claims being made ready now (their files are in inputs/claims already).
  size_t preparing() const { return claim_.preparing; }
  /// Hands back the leases of partitions not yet started (drain, stop).
  void release_queued_claims(const std::string& why);
  /// Stores a verified proof under its lease (or drops it: its lease is over).
  void store_proof(const PartRef& ref, ProofRecord rec);
  /// The "cluster" object of status (docs/protocol.md).
  nlohmann::json status() const;
  /// At exit: what is still held goes back at once rather than after its
  /// lease, the host says it stopped, and the listener ends.
  void leave();

 private:
  void apply_changes(Changes changes);  ///< the queue's changed job rows → the mirror
  void on_claimed(std::vector<ClaimedPartition> claims);
  void on_prepared(PreparedClaim prepared);
  void on_renewed(const std::vector<uint64_t>& sent, const std::vector<uint64_t>& held, int64_t sent_ms);
  /// A lease this host held is gone: drop the partition (abort it in a worker).
  void drop_lease(const PartRef& ref, const std::string& why);
  /// Gives a lease back without counting it against its partition; a failure is ignored (it expires).
  void release_quietly(uint64_t token);
  ClaimDirs claim_dirs() const;
  /// Runs `task` on the journal lane's thread with the record and its shared queue.
  void on_queue(std::function<void(Ledger&, SharedQueue&)> task);

  const Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  const std::string where_;  ///< the queue, as logs and status name it
  JournalLane& journal_;
  LoopInbox& inbox_;
  JobTable& jobs_;
  const WorkerTable& workers_;
  const Lifecycle& lifecycle_;
  Pipeline& pipeline_;
  CircuitRegistry& circuits_;
  const Intake& intake_;
  EventBus& bus_;

  /// One of the periodic queue calls: whether it is on its way, and when it is next due (steady ms).
  struct Step {
    bool in_flight = false;
    int64_t next_ms = 0;
  };
  /// Claims: a step, paused for a while after a host fault of the shared
  /// mount, and the claims being made ready (claim_prep.hpp).
  struct ClaimStep : Step {
    int64_t paused_until_ms = 0;
    size_t preparing = 0;
  };
  /// The change feed: its cursor (Ledger::changes_since), whether the first
  /// sync is done (every job mirrored), when a sync last reached the queue and
  /// when the circuits table is next read (steady ms).
  struct Feed {
    std::string cursor;
    bool synced = false;
    int64_t last_sync_ms = 0, next_circuits_ms = 0;
  };
  /// Set by the listener's thread: a NOTIFY arrived (…'circuit': the circuits changed).
  struct Notified {
    std::atomic<bool> any{false}, circuits{false};
  };
  /// Whether the last call reached the queue; why not and since when (Unix ms).
  struct Reach {
    bool reachable = true;
    std::string fault;
    int64_t since_wall_ms = 0;
  };
  /// Hosts and queue counts for status, and when they were read (Unix ms).
  struct View {
    ClusterView rows;
    int64_t wall_ms = 0;
  };
  /// Proofs stored / dropped (fenced); leases released / lost, by this host.
  struct Counts {
    uint64_t stored = 0, fenced = 0, released = 0, lost = 0;
  };

  Step sync_, renew_, expire_, view_step_;
  ClaimStep claim_;
  Feed feed_;
  Notified notified_;
  Reach reach_;
  View view_;
  Counts counts_;
  std::unique_ptr<CheckPool> prep_pool_;  ///< claim preparation (hash checks, copies)
  std::unique_ptr<PgListener> listener_;  ///< LISTEN zkfarm on a connection of its own
};

}  // namespace zkfarm::supervisor
