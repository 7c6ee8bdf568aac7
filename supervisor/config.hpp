#pragma once
// zkfarmd's configuration: defaults, then the TOML file (--config), then flags.
// Every key is documented in docs/configuration.md with its default.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "supervisor/model/lease.hpp"

namespace zkfarm::supervisor {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The operators' group the Debian package creates (docs/operations.md).
inline constexpr const char* kDefaultAdminGroup = "zkfarm-admin";

struct Config {
  std::string state_dir;               ///< everything of the instance lives here
  std::string config_file;             ///< the TOML file it was read from (--config; "" for none): status shows it
  unsigned synth_workers = 0;          ///< 0: cores − 1, at least 1
  unsigned synth_threads = 1;          ///< threads per synthesis worker
  /// Partitions of one job a synthesis worker takes at once (1–64): their
  /// witness graph evaluated in one pass (docs/witness.md, "In the farm").
  unsigned synth_batch = 16;
  std::string gpu_devices = "auto";    ///< "auto", "none" or a list "0,1"
  std::string backend = "auto";        ///< "auto", "cpu" or "cuda"
  unsigned gpu_threads = 0;            ///< CPU backend threads per GPU worker; 0: all cores
  unsigned gpu_key_memory_percent = 60;  ///< CUDA backend: % of device memory resident keys may take (LRU beyond)
  /// CUDA backend: most precomputed copies of a key's MSM bases (1: none; 0:
  /// up to 16). Unset ("auto", the default): up to 16 for keys of domain
  /// 2^18 or less (those that run in lanes), none for larger ones
  /// (docs/decisions.md, issue 47, 2026-12-07 session 12).
  std::optional<unsigned> gpu_msm_copies;
  unsigned gpu_queue_depth = 2;        ///< partitions a GPU worker holds at once: one computing, the rest queued there
  unsigned gpu_lanes = 1;              ///< prove steps a GPU worker runs at once for small keys (1–32; large keys: one)
  unsigned verify_threads = 0;         ///< threads verifying proofs off the loop; 0: a quarter of the cores, at least 1
  uint64_t arena_mib = 1024;           ///< the arena (memory budget), MiB
  std::string synth_binary;            ///< default: zkfarm-synth beside zkfarmd
  std::string gpu_binary;              ///< default: zkfarm-gpu beside zkfarmd
  unsigned heartbeat_ms = 1000;        ///< heartbeat period, both ways
  unsigned heartbeat_timeout_ms = 10000;  ///< a worker silent this long is killed
  unsigned ready_timeout_ms = 30000;   ///< a worker must say READY within this
  unsigned drain_timeout_ms = 600000;  ///< stop: how long in-flight partitions may take
  unsigned stop_timeout_ms = 10000;    ///< a worker asked to exit gets this long before SIGKILL
  unsigned restart_backoff_ms = 500;   ///< first delay before replacing a crashed worker
  unsigned restart_backoff_max_ms = 30000;  ///< cap of the doubling delay
  unsigned flap_max_crashes = 5;       ///< more crashes than this within flap_window_ms: failed
  unsigned flap_window_ms = 60000;     ///< the flapping window
  unsigned release_timeout_ms = 120000;  ///< how long to wait for a dead GPU worker's memory
  std::string http_address;            ///< "HOST:PORT" for GET /status; empty: off
  unsigned retention_hours = 168;      ///< finished jobs stay in the journal this long
  std::string log_level = "info";      ///< trace, debug, info, warn, error
  /// The log file: relative paths under the state dir; "" turns it off (the
  /// journal, or stderr, keeps the only copy). Mode 0640, group admin_group.
  std::string log_file = "zkfarmd.log";
  // Faults and trust (docs/security.md).
  unsigned max_attempts = 3;           ///< a partition whose worker died this many times fails (poison partition)
  std::string control_group;           ///< group of control.sock (mode 0660); empty: zkfarmd's own group
  /// Members may stop, upgrade, restart, kill, cancel others' jobs and read
  /// the log; empty: root and zkfarmd's user only. The default group is the
  /// package's operators group; while it does not exist nobody is an admin by
  /// group (a group named in the file must exist: --check-config).
  std::string admin_group = kDefaultAdminGroup;
  std::string critical_group;          ///< members may submit with priority critical (besides admins); empty: admins only
  std::string upgrade_dir;             ///< `upgrade` takes binaries only from inside this folder; empty: upgrades refused
  unsigned control_max_connections = 256;  ///< open connections on control.sock; beyond, the socket is closed until some go
  unsigned http_max_connections = 64;  ///< open HTTP connections; beyond, the slowest incomplete request is dropped
  unsigned http_request_timeout_ms = 5000;  ///< a request's headers must arrive within this; idle keep-alive too
  bool http_status_detail = false;     ///< GET /status: false: counts only; true: the full status (paths, jobs)
  unsigned submit_checks = 2;          ///< submits checked at once (each copies and validates a key and witnesses)
  unsigned submit_copies = 4;          ///< witness copies at once over all submits (first submitted, first copied)
  unsigned submit_queue = 64;          ///< submits waiting for a check; beyond, refused with "busy"
  unsigned submit_timeout_ms = 600000; ///< a submit whose check takes longer is refused
  unsigned status_finished_jobs = 50;  ///< finished jobs `status` lists (newest first); `jobs` pages through all
  // Circuits and circom inputs (docs/witness.md).
  unsigned witness_timeout_ms = 600000;     ///< one partition's witness generation may take this long
  uint64_t witness_memory_mib = 4096;       ///< a generator's data memory (RLIMIT_DATA), MiB, also of its --info run; 0: unbounded
  uint64_t witness_cpu_s = 600;             ///< a generator's CPU time (RLIMIT_CPU), s; 0: unbounded
  /// How synthesis workers make witnesses from inputs (witgen/witness_engine.hpp):
  /// "auto" (the circuit's witness graph where it has one), "graph" (only
  /// circuits with a graph), "generator" (never the graph; none is built).
  std::string witness_engine = "auto";
  uint64_t witness_graph_max_nodes = 67108864;  ///< 2^26: a witness graph's nodes at most (its build is refused past it)
  std::string sandbox_user = "zkfarm-sandbox";  ///< as root: circuit code is built and run as this user (witgen/sandbox.hpp)
  /// As root: each build and each generator run takes a uid of its own from
  /// sandbox_uid_base .. + sandbox_uid_count - 1 (witgen/sandbox_uids.hpp);
  /// count 0: every one as sandbox_user.
  uint64_t sandbox_uid_base = 1879048192;  // 0x70000000: above systemd's container uid ranges
  uint64_t sandbox_uid_count = 1024;
  uint64_t circuit_build_memory_mib = 2048; ///< each compiler of a generator build (RLIMIT_DATA), MiB
  uint64_t circuit_build_cpu_s = 600;       ///< each compiler of a generator build (RLIMIT_CPU), s
  uint64_t circuit_wasm_max_mib = 64;       ///< largest circuit.wasm `circuit add` takes, MiB
  uint64_t input_max_bytes = 67108864;      ///< largest input.json taken at submit (64 MiB)
  uint64_t input_max_signals = 65536;       ///< distinct signal names in one input.json
  uint64_t input_max_values = 16777216;     ///< values in one input.json, arrays flattened (2^24)
  uint64_t job_input_max_bytes = 1073741824;  ///< all input.json files of one job together (1 GiB)
  unsigned generator_build_timeout_ms = 1800000;  ///< `circuit add`: building a generator may take this long
  unsigned generator_build_jobs = 0;        ///< compilers at once for a build; 0: the cores
  unsigned generator_builds = 2;            ///< builds at once (each may use generator_build_jobs compilers); one per submitter
  // Several hosts, one queue (docs/cluster.md).
  std::string queue_url;               ///< PostgreSQL connection (postgresql://…); empty: SQLite under the state dir
  std::string host_id;                 ///< this host's name in the queue; default: hostname + ":" + state dir
  std::string shared_dir;              ///< with queue_url: a folder every host mounts (keys, witness copies, generators)
  unsigned lease_seconds = kDefaultLeaseSeconds;  ///< a claim's lease; renewed every third of it while the host works
  unsigned claim_poll_ms = 2000;       ///< an idle host asks the queue this often (NOTIFY wakes it sooner)

  /// Reads a TOML file over the defaults. Throws ConfigError naming the file,
  /// the line, the key and the fault: a file that cannot be read (with its
  /// errno), a parse error, an unknown key (with the closest known key, "did
  /// you mean"), a wrong type, a value out of range.
  void load_toml(const std::string& path);
  /// Checks cross-key constraints and fills derived defaults (worker counts,
  /// binary paths from `self_dir`). Throws ConfigError.
  void finalize(const std::string& self_dir);
  /// What a finalized configuration names on this host and can be checked
  /// without starting: the groups (control_group, a non-default admin_group,
  /// critical_group) exist, the worker binaries are executable files. Throws
  /// ConfigError naming the key. `zkfarmd --check-config` and the start run it.
  void check_host() const;
  /// The log file's absolute path ("" when log_file is ""): log_file, under
  /// state_dir when relative.
  std::string log_path() const;
};

/// Whether a libpq connection string (URI or keyword form) carries a
/// password: such a URL may not come from the command line (every local user
/// reads it in the process list) nor from a config file others may read.
bool pg_url_has_password(const std::string& url);

}  // namespace zkfarm::supervisor
