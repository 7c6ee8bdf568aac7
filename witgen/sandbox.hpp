#pragma once
// Confinement of circuit code: the compilers that build a witness generator
// from a tenant's wasm, and the generators themselves (docs/witness.md,
// "Circuit code is confined"). Applied in the child between fork and exec
// (witgen/subprocess.cpp), in this order:
//   1. rlimits: CPU seconds (SIGXCPU at the limit, SIGKILL a second later),
//      processes (RLIMIT_NPROC, only when the uid is dropped: it counts every
//      process of the uid), open files; memory and file size are RunSpec's;
//   2. no network: a new, empty network namespace where zkfarmd may make one
//      (root); the seccomp filter refuses socket(2) anyway;
//   3. as root: every group dropped, then the gid and uid of the run: one
//      leased from the pool for this build or this generator run alone
//      (sandbox_uids.hpp), or the sandbox user's (zkfarm-sandbox) where the
//      pool is off; checked to have taken;
//   4. no_new_privs, then a seccomp filter (libseccomp) that answers EPERM to
//      socket, ptrace, process_vm_*, mount and namespace calls, module, kexec,
//      bpf, perf, keyring, userfaultfd and io_uring calls.
// The process also gets a fixed, minimal environment (sandbox_environment),
// not zkfarmd's. A build's lifetime is its leased uid's: every process of it
// is killed when the build ends (sandbox_uids.hpp), setsid or not. No
// cgroups: zkfarmd is often not allowed one (a container, a unit without
// Delegate=); per-process rlimits and the uid's RLIMIT_NPROC bound a build
// instead (docs/decisions.md, issue 45).
#include <sys/types.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace zkfarm::witgen {

/// The sandbox user cannot be used (root without the user, a bad name).
struct SandboxError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// How one child is confined. A default Sandbox confines nothing.
struct Sandbox {
  bool enabled = false;       ///< false: none of the below
  bool drop_uid = false;      ///< become uid/gid (zkfarmd is root)
  uid_t uid = 0;
  gid_t gid = 0;
  uint64_t cpu_seconds = 0;   ///< RLIMIT_CPU; 0: unchanged
  uint64_t processes = 256;   ///< RLIMIT_NPROC when drop_uid (compilers fork cc1, as, ld)
  uint64_t open_files = 1024; ///< RLIMIT_NOFILE
  /// The uid pool (sandbox_uids.hpp), used when drop_uid: uids
  /// pool_base .. pool_base + pool_count - 1, held through lock files in
  /// pool_lock_dir. pool_count 0: every run as `uid` (the sandbox user).
  uint32_t pool_base = 0;
  uint32_t pool_count = 0;
  std::string pool_lock_dir;
};

/// The uid pool of make_sandbox: zkfarmd's sandbox_uid_base and
/// sandbox_uid_count (count 0: no pool).
struct SandboxPool {
  uint32_t base = 0x70000000;  ///< above systemd's container ranges (0x80000..0x6FFF0000)
  uint32_t count = 0;          ///< 0: no pool (zkfarmd's default is 1024: sandbox_uid_count)
  std::string lock_dir = "/run/zkfarm-sandbox";
};

/// The sandbox for circuit code run by a process of this euid: as root, the
/// user `user` (its uid and primary gid; SandboxError naming the fix when it
/// does not exist or is root); otherwise the process's own uid (nothing to
/// drop to), with the other limits still applied. `cpu_seconds` as above.
/// As root with pool.count > 0, each run takes a uid of `pool` instead
/// (lease_sandbox_uid); the user must still exist (the fallback, and the
/// group nothing of zkfarmd's is readable by). SandboxError for a pool that
/// overlaps uid 0 or wraps past 2^32 - 2.
Sandbox make_sandbox(const std::string& user, uint64_t cpu_seconds, const SandboxPool& pool = {});

/// A pool of `count` uids from `base` (the configuration's numbers), locked
/// in the default folder. SandboxError when it does not lie within
/// 1 .. 4294967293 (the check make_sandbox applies too).
SandboxPool sandbox_pool(uint64_t base, uint64_t count);

/// The environment circuit code runs with: PATH (zkfarmd's, for the
/// operator's compilers; /usr/local/bin:/usr/bin:/bin without one),
/// LC_ALL=C, HOME and TMPDIR at `work` ("/nonexistent" and nothing when
/// empty). Nothing else of zkfarmd's (its sockets, its fault switches, a
/// NOTIFY_SOCKET) reaches it.
std::vector<std::string> sandbox_environment(const std::string& work);

/// The seccomp program (BPF, built once with libseccomp and kept): what the
/// child loads. Empty when libseccomp could not build it (the child then
/// runs without the filter; logged once by the caller via seccomp_status()).
const std::vector<unsigned char>& seccomp_program();
/// "" when the filter is built, else why not.
std::string seccomp_status();

/// In the child, after fork and before exec: applies `sb`. Async-signal-safe
/// (no allocation): returns nullptr, or the name of the step that failed.
const char* enter_sandbox(const Sandbox& sb);

}  // namespace zkfarm::witgen
