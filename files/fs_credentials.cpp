#include "files/fs_credentials.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>

namespace zkfarm::files {

namespace {

// Raw syscalls: they change the calling thread only (see the header).
long sys_setfsuid(uid_t uid) { return ::syscall(SYS_setfsuid, uid); }
long sys_setfsgid(gid_t gid) { return ::syscall(SYS_setfsgid, gid); }
long sys_setgroups(const std::vector<gid_t>& g) { return ::syscall(SYS_setgroups, g.size(), g.data()); }

// The calling thread's supplementary groups, sorted (the kernel keeps them
// sorted; sorting again makes the comparison independent of that).
bool thread_groups(std::vector<gid_t>& out) {
  long n = ::syscall(SYS_getgroups, 0, nullptr);
  if (n < 0) return false;
  out.resize(size_t(n));
  n = ::syscall(SYS_getgroups, out.size(), out.data());
  if (n < 0) return false;
  out.resize(size_t(n));
  std::sort(out.begin(), out.end());
  return true;
}

bool groups_are(std::vector<gid_t> want) {
  std::vector<gid_t> now;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  if (!thread_groups(now)) return false;
  now.erase(std::unique(now.begin(), now.end()), now.end());
  return now == want;
}

// setfsuid/setfsgid return the previous value whether or not they changed
// anything (setfsuid(2)); a second call with the same id returns the value now
// in force, which tells whether the first was accepted.
bool set_fsuid(uid_t uid) {
  sys_setfsuid(uid);
  return uid_t(sys_setfsuid(uid)) == uid;
}
bool set_fsgid(gid_t gid) {
  sys_setfsgid(gid);
  return gid_t(sys_setfsgid(gid)) == gid;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "zkfarm: FsCredentials: cannot restore the thread's %s; aborting\n", what);
  std::abort();
}

}  // namespace

std::vector<gid_t> FsCredentials::supplementary_groups(uid_t uid, gid_t gid) {
  long hint = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(hint > 0 ? size_t(hint) : 16384);
  struct passwd pw {};
  struct passwd* found = nullptr;
  int rc;
  while ((rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found)) == ERANGE && buf.size() < (size_t(1) << 24))
    buf.resize(buf.size() * 2);
  if (rc != 0 || found == nullptr) return {gid};
  std::vector<gid_t> groups(32);
  for (;;) {
    int count = int(groups.size());
    if (::getgrouplist(pw.pw_name, gid, groups.data(), &count) >= 0) {
      groups.resize(size_t(count));
      return groups;
    }
    // -1: too small; count now holds the number needed (getgrouplist(3)).
    groups.resize(std::max(size_t(count), groups.size() * 2));
  }
}

FsCredentials::FsCredentials(uid_t uid, gid_t gid) {
  if (::geteuid() != 0) return;
  enter(uid, gid, supplementary_groups(uid, gid));
}

FsCredentials::FsCredentials(uid_t uid, gid_t gid, std::vector<gid_t> groups) {
  if (::geteuid() != 0) return;
  enter(uid, gid, groups);
}

void FsCredentials::enter(uid_t uid, gid_t gid, const std::vector<gid_t>& groups) {
  auto fail = [&](const char* what) {
    const int err = errno ? errno : EPERM;
    restore();
    throw std::system_error(err, std::generic_category(),
                            "FsCredentials: cannot set the thread's " + std::string(what) + " for uid " +
                                std::to_string(uid) + " gid " + std::to_string(gid));
  };
  if (!thread_groups(old_groups_)) fail("groups (getgroups)");
  // Groups and gid first, uid last, so the fsuid switch (which drops the
  // filesystem capabilities) is the final step; restore() goes in reverse.
  errno = 0;
  if (sys_setgroups(groups) != 0) fail("supplementary groups");
  groups_set_ = true;
  if (!groups_are(groups)) fail("supplementary groups (read back)");
  old_fsgid_ = gid_t(sys_setfsgid(gid));
  fsgid_set_ = true;
  if (!set_fsgid(gid)) fail("filesystem gid");
  old_fsuid_ = uid_t(sys_setfsuid(uid));
  fsuid_set_ = true;
  if (!set_fsuid(uid)) fail("filesystem uid");
  active_ = true;
}

void FsCredentials::restore() noexcept {
  if (fsuid_set_ && !set_fsuid(old_fsuid_)) die("filesystem uid");
  if (fsgid_set_ && !set_fsgid(old_fsgid_)) die("filesystem gid");
  if (groups_set_ && (sys_setgroups(old_groups_) != 0 || !groups_are(old_groups_))) die("supplementary groups");
  fsuid_set_ = fsgid_set_ = groups_set_ = false;
}

FsCredentials::~FsCredentials() {
  if (active_) restore();
}

bool can_act_as(uid_t uid) { return ::geteuid() == 0 || ::geteuid() == uid; }

}  // namespace zkfarm::files
