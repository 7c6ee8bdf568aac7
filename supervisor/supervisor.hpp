#pragma once
// zkfarmd's event loop. One thread owns all state; each pass runs in a fixed
// order: take signals (signalfd), reap children, read worker and control
// messages, kill workers past their heartbeat or READY deadline, restart those
// whose backoff has passed, dispatch partitions, advance a stop in progress.
#include <spdlog/logger.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "shm/arena.hpp"
#include "shm/slots.hpp"
#include "files/input_file.hpp"
#include "protocol/worker_messages.hpp"
#include "supervisor/pipeline/proof_verifier.hpp"
#include "supervisor/background.hpp"
#include "supervisor/check_pool.hpp"
#include "supervisor/workers/children.hpp"
#include "supervisor/config.hpp"
#include "supervisor/control/control_api.hpp"
#include "supervisor/workers/device_monitor.hpp"
#include "supervisor/intake/intake.hpp"
#include "supervisor/pipeline/jobs.hpp"
#include "supervisor/ledger/journal_lane.hpp"
#include "supervisor/intake/key_cache.hpp"
#include "supervisor/lifecycle.hpp"
#include "supervisor/cluster/claim_prep.hpp"
#include "supervisor/ledger/ledger.hpp"
#include "supervisor/ledger/pg_listener.hpp"
#include "supervisor/listener_cap.hpp"
#include "supervisor/log_limiter.hpp"
#include "supervisor/status/metrics.hpp"
#include "supervisor/status/published_view.hpp"
#include "supervisor/control/peer.hpp"
#include "supervisor/workers/release.hpp"
#include "supervisor/status/status_view.hpp"
#include "supervisor/intake/submission.hpp"
#include "supervisor/intake/circuit_registry.hpp"
#include "supervisor/workers/worker_socket.hpp"
#include "supervisor/workers/worker_table.hpp"
#include "witgen/generator_run.hpp"
#include "witgen/sandbox.hpp"

#include <deque>
#include <set>
#include <functional>
#include <future>
#include <optional>

#include <atomic>

namespace zkfarm::supervisor {

/// zkfarmd's version (status, READY checks, --version).
inline constexpr const char* kZkfarmVersion = "0.1.0";

class Supervisor {
 public:
  /// Sets up the instance: creates the arena, an anonymous memfd (removing a
  /// named /dev/shm segment of this state dir an older version left: the
  /// caller holds the state lock), binds the worker and control
  /// sockets (mode 0660), blocks SIGTERM/SIGINT/SIGCHLD for the signalfd, makes
  /// this process a child subreaper. Throws std::runtime_error naming the fault.
  Supervisor(Config cfg, std::shared_ptr<spdlog::logger> log);
  ~Supervisor();

  /// Starts the workers and runs until stopped (zkfarmctl stop, SIGTERM,
  /// SIGINT); then the workers are stopped and reaped; the arena's memory goes with the last of them.
  /// Returns the exit code (0 after a clean stop).
  int run();

  /// The status object of docs/protocol.md (also served at GET /status),
  /// bounded in size: a FarmView of this loop rendered by status_view.hpp. With `only_owner`, the job lists and
  /// counts cover that uid's jobs only (a non-admin peer's view).
  nlohmann::json status(std::optional<uint32_t> only_owner = std::nullopt) const;
  /// A copy of the latest status, safe to read from another thread (HTTP).
  std::string status_snapshot() const;
  /// The latest /metrics text (Prometheus exposition format 0.0.4), thread-safe.
  std::string metrics_snapshot() const;
  /// Healthy: the loop ran within the last 5 s. Thread-safe.
  bool healthy() const;
  /// Ready: intake open and every worker READY. Thread-safe.
  bool ready() const { return published_.ready(); }
  /// Whether zkfarmd can write files with the rights of `uid` (it is root, or
  /// runs as that user); if not, the client writes that user's results.
  static bool can_act_as(uint32_t uid);

 private:
  void handle_signals();
  /// A warning a client can cause at will (a bad frame, a bad request): at most
  /// a few lines a second, with a count of the rest (bad_frames_).
  void warn_limited(const std::string& line);
  /// SIGHUP/SIGUSR1: every ReopenableFileSink of the logger reopens its file.
  void reopen_logs(const char* why);
  /// Reaps exited workers (the worker table's exit handler) and handles each exit.
  void reap_children();
  /// A worker's process is gone: what it held goes back (requeue), a failed
  /// upgrade puts the old binary back, then the worker table decides its respawn.
  void on_worker_exit(Worker& w, bool crashed, const std::string& why, bool no_respawn);
  /// Passes the workers' output lines to the log, each with its worker's id.
  void pump_worker_output();
  /// Decodes a worker's frame once (protocol::from_worker) and hands its struct on.
  void on_worker_frame(const std::string& identity, const std::string& frame, const std::optional<Peer>& peer);
  /// SYNTH_DONE (`synth`) or PROVE_DONE of the request under `ref`.
  void on_worker_done(Worker& w, const protocol::WorkRef& ref, const protocol::WorkResult& result, bool synth);
  void on_worker_started(Worker& w, const protocol::Started& msg);
  /// Sends `w` the PROVE of synthesized partition `ref` (dispatch()).
  void send_prove(Worker& w, const PartRef& ref);
  /// A partition of circom inputs just synthesized: its public signals from
  /// the witness in its slot, as public.json and for verification.
  void take_public_signals(const Job& job, const Partition& p);
  // submit.cpp: a job's files are checked on a thread of their own (a large key
  // takes seconds), the reply goes out from the loop once the check is done.
  void start_submit(const std::string& identity, const nlohmann::json& req, const Peer& peer);
  /// Where a submit's (or circuit add's) copies go, and the caches it uses.
  SubmitContext submit_context();
  void finish_submits();
  void accept_checked(const std::string& identity, SubmitCheck c);
  // housekeeping.cpp: hourly pruning of the journal past retention_hours, and
  // removal of input copies no live job or pending submit uses.
  void housekeeping(bool at_start);
  void remove_job_inputs(const Job& job);
  void send_reply(const std::string& identity, nlohmann::json reply);
  void check_deadlines();
  void dispatch();
  /// `frame`: one message from a protocol::encode overload (worker_messages.hpp).
  void send_to_worker(const Worker& w, const std::string& frame);
  void requeue(const PartRef& ref, const std::string& why, bool crashed = false);
  void fail_job(uint64_t job, const std::string& error);
  /// `zkfarmctl cancel`: the live job `id` ends cancelled (slots freed,
  /// journaled, aborted in the workers that hold its partitions).
  void cancel_job(uint64_t id, uint32_t by_uid);
  void free_slots(const std::vector<shm::Slot>& slots);
  void free_slot(const std::optional<shm::Slot>& slot);
  void finish_partition(Worker& w, const PartRef& ref, const std::string& proof);
  // verification.cpp: "" when the 256-byte proof verifies against the job's
  // verification key and the partition's public signals, else why not.
  std::string check_proof(const Job& job, const Partition& p, const std::string& proof_bytes);
  void restore_from_journal();
  void abort_in_flight(uint64_t job);
  // delivery.cpp: proof.json/public.json of proved partitions into `out`, as
  // `as` (its filesystem rights); with only_missing, files already there are
  // left alone. deliver() at start (restored jobs, on the loop's thread
  // before it runs); publish() for a partition just proved (on the delivery
  // thread; on_published() then, on the loop, may finish the job; a job
  // the client delivers is marked at once); start_result() for `zkfarmctl
  // result` (the journal thread reads a page of proofs; the reply carries
  // their texts and the client writes them).
  size_t deliver(const Job& job, const std::string& out, const Peer& as, bool only_missing, std::string* error);
  void publish(const Job& job, uint32_t index);
  void on_published(const PartRef& ref, const std::string& error);
  void start_result(const std::string& identity, const nlohmann::json& req, const Peer& peer, Role role);
  /// A ledger write on the journal lane (journal_lane.hpp), in order, retried while storage fails.
  void journal_write(std::function<void()> write) { journal_->write(std::move(write)); }
  void finish_background();  ///< at exit: every queued write done (a failing journal write tried once more)
  // submit.cpp: the journal's answer to an accepted job's add_job.
  void finish_accept(const std::string& identity, const std::shared_ptr<Job>& job,
                     const std::shared_ptr<const ProofVerifier>& vk, const std::string& token,
                     const std::string& checked, const std::string& error, bool storage_fault);
  void update_snapshot();
  /// Monotonic milliseconds (steady_clock): every deadline, heartbeat, backoff
  /// and duration. Never compared with wall_ms().
  int64_t now_ms() const;
  /// Unix milliseconds (system_clock): only timestamps shown to people and
  /// journaled (submitted, started, finished, proved; retention).
  int64_t wall_ms() const;

  Config cfg_;
  std::shared_ptr<spdlog::logger> log_;
  /// The ledger (ledger.hpp): the SQLite journal of this host, or the
  /// PostgreSQL queue several hosts share; used on the journal lane's thread only (journal_lane.hpp).
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<WorkerSocket> worker_socket_;  // workers.sock (worker_socket.hpp)
  LogLimiter bad_frames_;  // bad frames and requests: a few log lines a second at most
  int sigfd_ = -1;
  shm::Arena arena_;
  shm::SlotAllocator slots_;
  JobTable jobs_;
  DeviceMonitor devices_;  // release checks and GPU usage samples (device_monitor.hpp); outlives workers_
  std::unique_ptr<WorkerTable> workers_;  // every worker by id, and their lives
  std::unique_ptr<Lifecycle> lifecycle_;  // run state (running, draining, stopping), rolling operations
  std::unique_ptr<Intake> intake_;  // submits being checked and journaled (intake.hpp)
  std::map<std::string, std::shared_ptr<const ProofVerifier>> verifying_keys_;  ///< by key SHA-256
  int64_t next_housekeeping_ms_ = 0;
  std::unique_ptr<CircuitRegistry> circuits_;  ///< circuit add/list/remove (circuit_registry.hpp)
  std::unique_ptr<ControlApi> control_;        ///< control.sock's requests (control_api.hpp)
  int64_t next_heartbeat_ms_ = 0;
  PublishedView published_;  ///< status and metrics texts, health, for the HTTP thread
  Metrics metrics_;
  /// GPU memory and utilization per device entry (NVML), sampled every few
  /// seconds for /metrics; empty without NVML.
  // cluster.cpp: a shared queue (docs/cluster.md). Every call to the queue
  // runs on the journal lane's thread in order; what comes back is applied on the loop.
  void cluster_tick();                       ///< one pass: sync, renew, expire, claim, view
  void apply_changes(Changes changes);       ///< the queue's changed job rows → the mirror
  void on_claimed(std::vector<ClaimedPartition> claims);
  void on_prepared(PreparedClaim prepared);
  void on_renewed(const std::vector<uint64_t>& sent, const std::vector<uint64_t>& held, int64_t sent_ms);
  /// A lease this host held is gone: drop the partition (abort it in a worker).
  void drop_lease(const PartRef& ref, const std::string& why);
  /// Hands back the leases of partitions not yet started (drain, stop).
  void release_queued_claims(const std::string& why);
  /// Stores a verified proof under its lease (or drops it: its lease is over).
  void store_shared_proof(const PartRef& ref, ProofRecord rec);
  nlohmann::json cluster_status() const;
  ClaimDirs claim_dirs() const;
  struct Cluster {
    std::string snapshot;              ///< the change feed's cursor (Ledger::changes_since)
    bool synced = false;               ///< the first sync is done (every job mirrored)
    int64_t last_sync_ms = 0;          ///< when a sync last reached the queue (steady ms)
    bool sync_in_flight = false, claim_in_flight = false, renew_in_flight = false, expire_in_flight = false,
         view_in_flight = false;
    int64_t next_sync_ms = 0, next_claim_ms = 0, next_renew_ms = 0, next_expire_ms = 0, next_view_ms = 0;
    int64_t claim_paused_until_ms = 0;  ///< after a host fault of the shared mount
    size_t preparing = 0;              ///< claims being made ready (claim_prep.hpp)
    std::atomic<bool> woken{false};    ///< a NOTIFY arrived (set by the listener's thread)
    std::atomic<bool> circuits_changed{false};  ///< …a NOTIFY 'circuit'
    int64_t next_circuits_ms = 0;
    bool reachable = true;             ///< the last call reached the queue
    std::string fault;                 ///< why not, while unreachable
    int64_t unreachable_since_ms = 0;  ///< Unix ms
    ClusterView view;                  ///< hosts and counts, every few seconds
    int64_t view_wall_ms = 0;
    uint64_t stored = 0, fenced = 0, released = 0, lost = 0;  ///< proofs stored / dropped; leases released / lost
    std::unique_ptr<CheckPool> prep_pool;  ///< claim preparation (hash checks, copies)
    std::unique_ptr<PgListener> listener;  ///< LISTEN zkfarm on a connection of its own
  };
  Cluster cluster_;
  void queue_call_failed(const std::string& what);
  void queue_call_worked();

  /// A job that ended in this instance (done, failed, cancelled): counted
  /// and its latency observed for /metrics.
  void count_job_end(const Job& job);

  // Disk work off the loop (background.hpp). Once the loop runs, the journal
  // is used only on the journal lane's thread (writes, prune, reads of old proofs) and
  // output files are written only on delivery_thread_. Declared after
  // journal_, so the threads end before what their tasks use.
  LoopInbox inbox_;
  std::unique_ptr<SerialWorker> delivery_thread_;
  std::unique_ptr<JournalLane> journal_;  // the ledger's thread, its write order and faults (journal_lane.hpp)
  size_t deliveries_in_flight_ = 0;
  std::string render_metrics() const;
};

}  // namespace zkfarm::supervisor
