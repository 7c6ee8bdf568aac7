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
#include "supervisor/proof_verifier.hpp"
#include "supervisor/background.hpp"
#include "supervisor/check_pool.hpp"
#include "supervisor/children.hpp"
#include "supervisor/config.hpp"
#include "supervisor/control_channel.hpp"
#include "supervisor/jobs.hpp"
#include "supervisor/key_cache.hpp"
#include "supervisor/journal.hpp"
#include "supervisor/claim_prep.hpp"
#include "supervisor/pg_listener.hpp"
#include "supervisor/pg_queue.hpp"
#include "supervisor/listener_cap.hpp"
#include "supervisor/log_limiter.hpp"
#include "supervisor/metrics.hpp"
#include "supervisor/peer.hpp"
#include "supervisor/release.hpp"
#include "supervisor/status_view.hpp"
#include "supervisor/worker_table.hpp"
#include "witgen/generator_run.hpp"
#include "witgen/sandbox.hpp"

#include <deque>
#include <set>
#include <functional>
#include <future>
#include <optional>

#include <atomic>

namespace zkfarm::supervisor {

/// What checking a submitted job's files gives: the job (not yet journaled, no
/// id) with its key's verification data, or the error that refuses it.
struct SubmitCheck {
  std::optional<Job> job;
  std::string error;
  std::shared_ptr<const ProofVerifier> vk;
  std::string storage_fault;  ///< non-empty: the state dir could not take the copies (closes intake)
  std::string token;          ///< the job's folder under inputs/jobs
  double key_ms = 0, witness_ms = 0;  ///< time to take the key, then the witnesses
  uint64_t witness_bytes = 0;         ///< bytes of witnesses copied
  std::optional<bool> key_cached;     ///< the key was checked before (CheckedKeys), once it was looked up
};

/// A registered circuit as a submit of inputs needs it (looked up on the
/// loop when the submit starts, so the check reads no shared table).
struct CircuitForSubmit {
  CircuitRecord record;
  std::string generator;  ///< its generator's executable (STATE/circuits/HASH/generator)
  std::string zkey;       ///< its key's private copy (STATE/inputs/keys/SHA256.zkey)
};

/// What a submit's check needs besides the request: where inputs are kept
/// (STATE/inputs, or a shared queue's shared dir), the job's own folder name
/// under inputs/jobs, the caches.
struct SubmitContext {
  std::string inputs_dir;
  std::string token;
  std::shared_ptr<KeyHashCache> key_hashes;
  std::shared_ptr<CheckedKeys> checked_keys;
  /// Witness copies of every submit, submit_copies at once, first submitted first.
  std::shared_ptr<CheckPool> copy_pool;
  /// A submit of inputs: the circuit it names (nullopt when there is none by that name).
  std::optional<CircuitForSubmit> circuit;
  uint64_t input_max_bytes = 64ull << 20;
  uint64_t input_max_signals = 65536;        ///< distinct names in one input.json
  uint64_t input_max_values = 1ull << 24;    ///< values in one input.json
  uint64_t job_input_max_bytes = 1ull << 30;  ///< all input.json files of the job together
  /// A shared queue: witness copies are hashed (their SHA-256 goes in the
  /// queue, and every host checks it before use).
  bool shared = false;
  /// Set by the loop when the submit's deadline (submit_timeout_ms) passes:
  /// the check stops at its next copy chunk, file or few thousand JSON tokens
  /// instead of running on after its client was told "refused".
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
};

/// A proving key taken from a client's file (take_key): its private copy
/// (STATE/inputs/keys/SHA256.zkey), the hash, what a submit needs of it.
struct TakenKey {
  std::string path, sha256;
  KeyFacts facts;
  bool cached = false;  ///< checked before (CheckedKeys)
  double ms = 0;        ///< time taken
};

/// A random 96-bit name in hex (folders of submits and circuit builds).
std::string random_token();

/// Opens a file a client names, with the client's rights (files/fs_credentials:
/// when zkfarmd is root; otherwise the file's mode bits must let the client
/// read it), refusing anything but a regular file without blocking. Throws
/// files::FileError naming `path`.
files::UniqueFd open_client_file(const std::string& path, const Peer& peer);

/// What `circuit add` made on a build thread (circuits.cpp): the circuit, or why not.
struct CircuitBuild {
  std::optional<CircuitRecord> circuit;
  std::string error;
  std::shared_ptr<const ProofVerifier> vk;
};

/// Where and how `circuit add` builds generators.
struct CircuitBuildContext {
  std::string circuits_dir;  ///< STATE/circuits: HASH/generator, by content hash
  std::string witgen_root;   ///< the generator hosts' sources (witgen::find_witgen_root)
  unsigned jobs = 1;         ///< compilers at once
  std::chrono::milliseconds timeout{0};
  /// A shared queue's shared dir: the build is published under
  /// SHARED/generators by the SHA-256 of each file ("" on one host).
  std::string shared_dir;
  witgen::Sandbox build_sandbox;     ///< the compilers' (circuit_build_cpu_s; witgen/sandbox.hpp)
  uint64_t build_memory_bytes = 0;   ///< each compiler's RLIMIT_DATA (circuit_build_memory_mib)
  uint64_t wasm_max_bytes = 0;       ///< circuit_wasm_max_mib
  bool graph = true;                 ///< build a witness graph (witness_engine != "generator")
  uint64_t graph_max_nodes = 0;      ///< witness_graph_max_nodes
  witgen::GenerateOptions info_run;  ///< the built generator's --info run (witness limits)
};

/// `circuit add` on a build thread: takes the key and the generator sources
/// with `peer`'s rights, builds (or finds) the generator, checks it against
/// the key. Never throws.
CircuitBuild build_circuit(const nlohmann::json& req, const Peer& peer, const SubmitContext& ctx,
                           const CircuitBuildContext& bc);

/// A circuit as `circuit list` and `circuit add` answer it (docs/protocol.md).
/// A circuit as `circuit add|list` answer it; `witness`: how its witnesses
/// are made ("graph", "native (REASON)": witgen::witness_engine_line).
nlohmann::json circuit_json(const CircuitRecord& c, const std::string& witness);

/// Opens `source` with `peer`'s rights, stores its content once under
/// ctx.inputs_dir/keys (not read again while the file is unchanged), and
/// checks it (stored_key_facts). Throws InputError naming `source` for a bad
/// key, files::FileError for a file that cannot be taken.
TakenKey take_key(const std::string& source, const Peer& peer, const SubmitContext& ctx);

/// What a submit needs of the stored key at `path` (content `sha`): from
/// `checked` if it was checked before (then *cached = true), else by a full
/// Zkey::open, remembered. Throws InputError naming `source` (the client's name).
KeyFacts stored_key_facts(const std::string& path, const std::string& source, const std::string& sha,
                          CheckedKeys& checked, bool* cached = nullptr);

/// Checks a submit request on a CheckPool thread (submit.cpp): opens the
/// client's files with `peer`'s rights, copies them into the state dir by
/// content, validates the copies. Never throws; the error names the client's file.
SubmitCheck check_submission(const nlohmann::json& req, const Peer& peer, const SubmitContext& ctx);

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
  bool ready() const { return ready_.load(); }
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
  void on_control_frame(const std::string& identity, const std::string& frame, const std::optional<Peer>& peer);
  // circuits.cpp: the registered circuits (zkfarmctl circuit add/list/remove).
  void load_circuits();
  void start_circuit_add(const std::string& identity, const nlohmann::json& req, const Peer& peer, Role role);
  void finish_circuit_adds();
  nlohmann::json circuit_request(const std::string& type, const nlohmann::json& req, const Peer& peer, Role role);
  std::optional<CircuitForSubmit> circuit_for_submit(const std::string& name) const;
  std::string generator_path(const std::string& hash) const;  ///< STATE/circuits/HASH/generator
  /// One control request; a null reply means it is held (answer_held answers it).
  nlohmann::json handle_request(const std::string& identity, const nlohmann::json& req, const Peer& peer, Role role);
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
  void free_slots(const std::vector<shm::Slot>& slots);
  void free_slot(const std::optional<shm::Slot>& slot);
  void finish_partition(Worker& w, const PartRef& ref, const std::string& proof);
  // verification.cpp: "" when the 256-byte proof verifies against the job's
  // verification key and the partition's public signals, else why not.
  std::string check_proof(const Job& job, const Partition& p, const std::string& proof_bytes);
  void restore_from_journal();
  void abort_in_flight(uint64_t job);
  /// What worker `w` is doing in the rolling operation ("" when not its turn).
  std::string rolling_step(const Worker& w) const;
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
  // journal_faults.cpp: a journal write, run in order on the journal thread;
  // when it fails (disk full, I/O error) intake stops with the reason in
  // status, and the write is retried (with every later one behind it) until
  // it works. In-flight work goes on meanwhile.
  void journal_write(std::function<void()> write);
  void run_journal_write(const std::function<void()>& write);  ///< on the journal thread
  void on_journal_fault(const std::string& why);
  void on_journal_recovered();
  void retry_intake();       ///< a state-dir fault of a submit's copies: probe until writes work
  void finish_background();  ///< at exit: every queued write done (a failing journal write tried once more)
  // submit.cpp: the journal's answer to an accepted job's add_job.
  void finish_accept(const std::string& identity, const std::shared_ptr<Job>& job,
                     const std::shared_ptr<const ProofVerifier>& vk, const std::string& token,
                     const std::string& checked, const std::string& error, bool storage_fault);
  void begin_stop(const std::string& reason);
  // lifecycle.cpp: stop and drain, rolling restarts and upgrades, sd_notify.
  nlohmann::json lifecycle_request(const std::string& type, const nlohmann::json& req);
  void advance_rolling();
  void start_rolling(const std::vector<std::string>& ids, const std::optional<std::string>& synth_binary,
                     const std::optional<std::string>& gpu_binary, const std::string& what);
  void notify(const std::string& state);
  void notify_progress();
  size_t in_flight() const;
  bool advance_stop();
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
  /// PostgreSQL queue several hosts share; used on journal_thread_ only.
  std::unique_ptr<Ledger> ledger_;
  Journal* sqlite_ = nullptr;  ///< ledger_ when it is the SQLite journal
  PgQueue* pg_ = nullptr;      ///< ledger_ when it is a shared queue (cluster.cpp)
  zmq::context_t ctx_;
  zmq::socket_t workers_sock_;
  std::unique_ptr<ListenerCap> workers_cap_;  // workers.sock's connection cap (listener_cap.hpp)
  std::unique_ptr<ControlChannel> control_;   // control.sock (control_channel.hpp)
  LogLimiter bad_frames_;  // bad frames and requests: a few log lines a second at most
  std::string workers_endpoint_, workers_path_;
  int sigfd_ = -1;
  shm::Arena arena_;
  shm::SlotAllocator slots_;
  JobTable jobs_;
  std::unique_ptr<WorkerTable> workers_;  // every worker by id, and their lives
  bool stopping_ = false, shutdown_sent_ = false, draining_ = false, notified_ready_ = false;
  std::unique_ptr<ReleaseCheck> release_check_;
  // A rolling restart or upgrade: workers replaced one at a time.
  struct RollingStep {
    std::string worker;
    std::string binary;      ///< binary to start (the new one for an upgrade)
    std::string old_binary;  ///< to fall back to when the new one fails READY
    bool started = false;    ///< the (new) binary was started for this step
  };
  std::deque<RollingStep> rolling_;
  std::optional<RollingStep> rolling_current_;
  /// The last (or current) rolling restart or upgrade, kept once it ends so
  /// that `status` and `restart|upgrade --wait` see its result.
  struct RollingOp {
    uint64_t id = 0;          ///< 1, 2, …: the reply to restart/upgrade names it; 0: none yet
    std::string what;         ///< "restart" or "upgrade"
    std::string result;       ///< "running", "done" or "failed"
    std::string error;        ///< why it failed (the worker, the binary, what was kept)
    size_t total = 0, replaced = 0;           ///< workers to replace, replaced so far
    int64_t started_ms = 0, finished_ms = 0;  ///< Unix ms (for people)
  };
  RollingOp rolling_op_;
  /// Ends the rolling operation in progress with `error` ("" = done).
  void end_rolling(const std::string& error);
  // Replies held until something changes (a long-polled `job`) or until the
  // supervisor exits (`stop` with wait). Every one is answered before exit.
  struct HeldReply {
    std::string identity;
    bool stop = false;            ///< a `stop` with wait: answered with the outcome at exit
    uint64_t job = 0;             ///< a long-polled `job`: answered when it differs from `seen`
    std::string seen_state;
    uint64_t seen_done = 0;
    std::optional<uint32_t> owner;  ///< a user's view (only its own job)
    int64_t deadline_ms = 0;        ///< monotonic; a job poll is answered then at the latest
  };
  std::vector<HeldReply> held_;
  /// Answers held `job` polls whose job changed or whose deadline passed.
  void answer_held(bool at_exit, int exit_code, const std::string& exit_error);
  nlohmann::json held_job_reply(const HeldReply& h, bool at_exit) const;
  int64_t next_watchdog_ms_ = 0;
  uint64_t watchdog_usec_ = 0;
  std::string last_status_line_;
  struct PendingSubmit {
    std::string identity;                  ///< the client to answer
    std::future<SubmitCheck> check;        ///< the job, or why it is refused
    int64_t deadline_ms = 0;               ///< submit_timeout_ms from the request (monotonic)
    std::string token;                     ///< its folder under inputs/jobs
    bool answered = false;                 ///< refused on timeout; the check is told to stop
    std::shared_ptr<std::atomic<bool>> cancel;  ///< the check's stop flag (SubmitContext::cancel)
  };
  std::unique_ptr<CheckPool> submit_pool_;
  std::shared_ptr<KeyHashCache> key_hashes_ = std::make_shared<KeyHashCache>();
  std::shared_ptr<CheckedKeys> checked_keys_ = std::make_shared<CheckedKeys>();
  std::shared_ptr<CheckPool> copy_pool_;
  std::map<std::string, std::shared_ptr<const ProofVerifier>> verifying_keys_;  ///< by key SHA-256
  int64_t next_housekeeping_ms_ = 0;
  std::vector<PendingSubmit> pending_submits_;
  std::map<std::string, CircuitRecord> circuits_;  ///< by name (journaled)
  std::unique_ptr<CheckPool> build_pool_;          ///< generator builds, generator_builds at once
  struct PendingBuild {
    std::string identity;
    std::future<CircuitBuild> result;
    std::string name;
    uint32_t owner_uid = 0;
    std::string submitter;  ///< whose build slot it holds: "uid N", or "tenant T" (zkfarm-api)
  };
  std::vector<PendingBuild> pending_builds_;
  std::set<std::string> building_;  ///< names whose add is in progress
  std::string witgen_root_;         ///< the generator hosts' sources
  int64_t drain_deadline_ms_ = 0;
  int64_t next_heartbeat_ms_ = 0;
  mutable std::mutex snapshot_mutex_;
  std::string snapshot_, metrics_text_;
  Metrics metrics_;
  int64_t started_wall_ms_ = 0, started_steady_ms_ = 0;  ///< when this instance started
  /// GPU memory and utilization per device entry (NVML), sampled every few
  /// seconds for /metrics; empty without NVML.
  std::map<std::string, DeviceUsage> gpu_usage_;
  int64_t next_gpu_sample_ms_ = 0;
  void sample_gpu_usage();
  // cluster.cpp: a shared queue (docs/cluster.md). Every call to the queue
  // runs on journal_thread_ in order; what comes back is applied on the loop.
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
    std::string snapshot;              ///< the change feed's cursor (PgQueue::changes_since)
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
  };
  Cluster cluster_;
  std::unique_ptr<CheckPool> prep_pool_;     ///< claim preparation (hash checks, copies)
  std::unique_ptr<PgListener> listener_;     ///< LISTEN zkfarm
  void queue_call_failed(const std::string& what);
  void queue_call_worked();

  /// A job that ended in this instance (done, failed, cancelled): counted
  /// and its latency observed for /metrics.
  void count_job_end(const Job& job);

  std::atomic<int64_t> loop_ms_{0};
  std::atomic<bool> ready_{false};
  int64_t last_render_ms_ = 0;
  std::string intake_fault_;  ///< non-empty: intake refused for this reason (a journal fault)
  int64_t next_journal_retry_ms_ = 0;
  // Disk work off the loop (background.hpp). Once the loop runs, the journal
  // is used only on journal_thread_ (writes, prune, reads of old proofs) and
  // output files are written only on delivery_thread_. Declared after
  // journal_, so the threads end before what their tasks use.
  LoopInbox inbox_;
  std::unique_ptr<SerialWorker> journal_thread_, delivery_thread_;
  std::atomic<bool> journal_giving_up_{false};  ///< at exit: a failing write is tried once more, then dropped
  std::atomic<size_t> journal_dropped_{0};      ///< writes dropped that way (logged at exit)
  bool journal_faulted_ = false;  ///< the journal thread holds a write that failed (intake closed)
  bool intake_probe_in_flight_ = false;
  size_t deliveries_in_flight_ = 0;
  std::set<std::string> accepting_tokens_;  ///< inputs/jobs/TOKEN of jobs whose add_job is in flight
  std::string render_metrics() const;
};

}  // namespace zkfarm::supervisor
