#pragma once
// A uid of its own for each build and each generator run (issue 45): circuit
// code of one tenant never shares a uid with another's, at the same time or
// later, so it can neither read nor write another build's folders nor reach
// another generator through /proc/PID/mem or signals.
//
// The pool is `count` uids from `base` (gid = uid: each its own group; no
// passwd entries are needed for setresuid). A uid is held by an flock on
// LOCK_DIR/UID, which the kernel drops when the holder dies, so zkfarmd, its
// synthesis workers and a second zkfarmd on the host share one pool. When a
// uid is given back (and when handed out after a holder that died first),
// every process it still has is killed (a child takes the uid and sends SIGKILL to -1: what a build
// left behind, setsid or not, goes with it) and what it left in the shared
// temporary folders (/tmp, /var/tmp, /dev/shm) is removed. Root only: a
// zkfarmd that is not root runs circuit code as its own uid (docs/security.md).
#include <sys/types.h>

#include <chrono>
#include <string>

#include "witgen/sandbox.hpp"

namespace zkfarm::witgen {

/// One leased uid; given back (its processes killed, its temporary files
/// removed, the lock released) when destroyed. Move-only. An empty lease
/// (nothing leased: no pool, or not root) gives back nothing.
class UidLease {
 public:
  UidLease() = default;
  UidLease(int lock_fd, uid_t uid) : lock_fd_(lock_fd), uid_(uid) {}
  UidLease(UidLease&& o) noexcept : lock_fd_(o.lock_fd_), uid_(o.uid_) { o.lock_fd_ = -1; }
  UidLease& operator=(UidLease&& o) noexcept;
  UidLease(const UidLease&) = delete;
  UidLease& operator=(const UidLease&) = delete;
  ~UidLease() { release(); }

  bool held() const { return lock_fd_ >= 0; }
  uid_t uid() const { return uid_; }
  /// Gives the uid back now (as the destructor does).
  void release();

 private:
  int lock_fd_ = -1;
  uid_t uid_ = 0;
};

/// When `sb` drops the uid and has a pool (Sandbox::pool_count > 0): leases a
/// free uid of the pool, waiting up to `wait` for one, and sets sb.uid and
/// sb.gid to it. Otherwise returns an empty lease and leaves `sb` as it is.
/// Throws SandboxError naming the lock folder when it is unusable (not a
/// folder of root's, writable by others) or every uid stayed taken for `wait`.
UidLease lease_sandbox_uid(Sandbox& sb, std::chrono::milliseconds wait = std::chrono::minutes(10));

/// Kills every process whose real or saved uid is `uid` (root only; a child
/// process takes the uid and signals -1). Zombies are left to their parents.
void kill_uid_processes(uid_t uid);

/// Removes the entries of /tmp, /var/tmp and /dev/shm that `uid` owns, with
/// what is below them (links removed, never followed; at most 64 folders
/// deep). An entry that cannot be removed whole is given to root, mode 0700,
/// so that the uid's next holder cannot reach what is left in it.
void remove_uid_temporary_files(uid_t uid);

}  // namespace zkfarm::witgen
