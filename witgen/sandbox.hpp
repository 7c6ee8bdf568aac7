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
//   3. as root: every group dropped, then the gid and uid of the sandbox user
//      (zkfarm-sandbox), checked to have taken;
//   4. no_new_privs, then a seccomp filter (libseccomp) that answers EPERM to
//      socket, ptrace, process_vm_*, mount and namespace calls, module, kexec,
//      bpf, perf, keyring, userfaultfd and io_uring calls.
// No cgroups: zkfarmd is often not allowed one (a container, a unit without
// Delegate=), and the rlimits bound what the issue measured; docs/decisions.md.
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
};

/// The sandbox for circuit code run by a process of this euid: as root, the
/// user `user` (its uid and primary gid; SandboxError naming the fix when it
/// does not exist or is root); otherwise the process's own uid (nothing to
/// drop to), with the other limits still applied. `cpu_seconds` as above.
Sandbox make_sandbox(const std::string& user, uint64_t cpu_seconds);

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
