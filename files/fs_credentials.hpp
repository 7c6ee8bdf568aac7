#pragma once
// FsCredentials: the calling thread touches the filesystem as another user, so
// a root supervisor opens a client's key and writes its results with exactly
// the client's rights (uid, gid, supplementary groups), while its other threads
// keep root's.
#include <sys/types.h>

#include <vector>

namespace zkfarm::files {

/// An RAII scope: from construction to destruction, the CALLING THREAD's
/// filesystem accesses (open, mkdir, link, rename, stat, …) are checked as
/// `uid`, `gid` and uid's supplementary groups; other threads are unaffected.
/// It uses the raw syscalls SYS_setfsuid, SYS_setfsgid and SYS_setgroups, which
/// change only the calling thread's credentials (glibc's setgroups() wrapper
/// would change every thread of the process; see nptl(7), "setxid"). Setting a
/// non-zero fsuid also drops the filesystem capabilities (CAP_DAC_OVERRIDE,
/// CAP_FOWNER, …) from the thread's effective set, and restoring fsuid 0 brings
/// them back (capabilities(7), "Effect of user ID changes on capabilities").
/// Files created in the scope belong to uid:gid.
///
/// Only when the process runs as root (euid 0) is anything changed; otherwise
/// the scope is a no-op (active() is false) and the process can reach only what
/// its own user can. The caller must then itself make sure the client is that
/// same user (its uid from SO_PEERCRED equals geteuid()) or refuse the request:
/// without that, one user could use the farm to read or write another's files.
///
/// The scope must end on the thread that began it (not movable). Nothing
/// inside it may call glibc's setuid/setgid/setgroups family, whose broadcast
/// to all threads would overwrite it, nor start threads: a thread created in
/// the scope inherits its credentials (clone(2) copies the creating thread's)
/// and keeps them for good, so a thread pool that grows lazily must not grow
/// here. Construction throws std::system_error
/// when the kernel refuses a change (the thread is back to its old credentials
/// first); a failure to restore at destruction aborts the process, since the
/// thread would otherwise go on with the client's rights or lose root's.
class FsCredentials {
 public:
  /// Supplementary groups from getgrouplist(3) for the user name of `uid`
  /// (getpwuid_r(3)), which include `gid`; a uid with no passwd entry gets {gid}.
  FsCredentials(uid_t uid, gid_t gid);
  /// The same with the supplementary groups given (tests, or a caller that
  /// already resolved them); `groups` may be empty (then: none).
  FsCredentials(uid_t uid, gid_t gid, std::vector<gid_t> groups);
  FsCredentials(const FsCredentials&) = delete;
  FsCredentials& operator=(const FsCredentials&) = delete;
  ~FsCredentials();

  /// True when the credentials were switched (the process is root).
  bool active() const noexcept { return active_; }

  /// The supplementary groups the (uid, gid) constructor uses.
  static std::vector<gid_t> supplementary_groups(uid_t uid, gid_t gid);

 private:
  void enter(uid_t uid, gid_t gid, const std::vector<gid_t>& groups);
  void restore() noexcept;

  bool active_ = false;
  uid_t old_fsuid_ = 0;
  gid_t old_fsgid_ = 0;
  std::vector<gid_t> old_groups_;
  bool groups_set_ = false, fsgid_set_ = false, fsuid_set_ = false;
};

/// Whether this process can act with the filesystem rights of `uid`: it is
/// root (FsCredentials can take them) or already runs as that user. When
/// not, zkfarmd writes nothing as that user and the client writes its results.
bool can_act_as(uid_t uid);

}  // namespace zkfarm::files
