#include "witgen/sandbox.hpp"

#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace zkfarm::witgen {

namespace {

struct Program {
  std::vector<unsigned char> bpf;
  std::string status;
};

Program build_program() {
  Program p;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    p.status = "seccomp_init failed";
    return p;
  }
  // Nothing circuit code needs: a compiler and a generator read files,
  // write files and pipes, fork and exec (the compilers), map memory.
  const char* denied[] = {"socket", "socketpair", "ptrace", "process_vm_readv", "process_vm_writev", "mount",
                          "umount2", "pivot_root", "chroot", "reboot", "kexec_load", "kexec_file_load",
                          "init_module", "finit_module", "delete_module", "bpf", "perf_event_open", "keyctl",
                          "add_key", "request_key", "unshare", "setns", "userfaultfd", "io_uring_setup",
                          "io_uring_enter", "io_uring_register", "open_by_handle_at", "name_to_handle_at",
                          "fanotify_init", "quotactl", "swapon", "swapoff", "acct", "settimeofday",
                          "clock_settime", "clock_adjtime", "adjtimex", "syslog"};
  for (const char* name : denied) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) != 0) {
      p.status = std::string("seccomp_rule_add(") + name + ") failed";
      seccomp_release(ctx);
      return p;
    }
  }
  // The program as the kernel takes it, through a memfd (libseccomp 2.5 exports to a descriptor).
  const int fd = ::memfd_create("zkfarm-seccomp", MFD_CLOEXEC);
  if (fd < 0 || seccomp_export_bpf(ctx, fd) != 0) {
    p.status = "seccomp_export_bpf failed";
  } else {
    const off_t size = ::lseek(fd, 0, SEEK_END);
    p.bpf.resize(size > 0 ? size_t(size) : 0);
    if (size <= 0 || ::pread(fd, p.bpf.data(), p.bpf.size(), 0) != ssize_t(size) || size % sizeof(sock_filter) != 0) {
      p.bpf.clear();
      p.status = "cannot read the exported seccomp program";
    }
  }
  if (fd >= 0) ::close(fd);
  seccomp_release(ctx);
  return p;
}

const Program& program() {
  static const Program p = build_program();
  return p;
}

}  // namespace

const std::vector<unsigned char>& seccomp_program() { return program().bpf; }
std::string seccomp_status() { return program().status; }

namespace {

// The pool's one range check: uids 1 .. 2^32 - 3, never root's; (uid_t)-1
// means "unchanged" to setresuid and -2 is nfsnobody's.
void check_pool_range(uint64_t base, uint64_t count) {
  if (count > 0 && (base == 0 || base + count > 0xfffffffeull))
    throw SandboxError("sandbox_uid_base " + std::to_string(base) + " and sandbox_uid_count " + std::to_string(count) +
                       ": the pool must lie within 1 .. 4294967293");
}

}  // namespace

SandboxPool sandbox_pool(uint64_t base, uint64_t count) {
  check_pool_range(base, count);
  SandboxPool p;
  p.base = uint32_t(base);
  p.count = uint32_t(count);
  return p;
}

std::vector<std::string> sandbox_environment(const std::string& work) {
  const char* path = std::getenv("PATH");
  std::vector<std::string> env{std::string("PATH=") + (path && *path ? path : "/usr/local/bin:/usr/bin:/bin"),
                               "LC_ALL=C", "HOME=" + (work.empty() ? std::string("/nonexistent") : work)};
  if (!work.empty()) env.push_back("TMPDIR=" + work);
  return env;
}

Sandbox make_sandbox(const std::string& user, uint64_t cpu_seconds, const SandboxPool& pool) {
  Sandbox sb;
  sb.enabled = true;
  sb.cpu_seconds = cpu_seconds;
  (void)seccomp_program();  // built now, in the parent, never after a fork
  if (::geteuid() != 0) {
    sb.uid = ::getuid();
    sb.gid = ::getgid();
    return sb;
  }
  if (user.empty())
    throw SandboxError("sandbox_user is empty: zkfarmd runs as root and will not run circuit code as root; "
                       "name an unprivileged user (default zkfarm-sandbox)");
  std::vector<char> buf(16384);
  passwd pw{}, *out = nullptr;
  if (::getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &out) != 0 || !out)
    throw SandboxError("the sandbox user " + user + " does not exist: zkfarmd runs as root and builds and runs "
                       "circuit code only as that user; create it (adduser --system --group --no-create-home " +
                       user + ") or set sandbox_user");
  if (out->pw_uid == 0 || out->pw_gid == 0)
    throw SandboxError("the sandbox user " + user + " is root (uid or gid 0); name an unprivileged user");
  sb.drop_uid = true;
  sb.uid = out->pw_uid;
  sb.gid = out->pw_gid;
  if (pool.count > 0) {
    check_pool_range(pool.base, pool.count);
    if (pool.lock_dir.empty() || pool.lock_dir[0] != '/')
      throw SandboxError("the sandbox uids' lock folder must be an absolute path");
    sb.pool_base = pool.base;
    sb.pool_count = pool.count;
    sb.pool_lock_dir = pool.lock_dir;
  }
  return sb;
}

const char* enter_sandbox(const Sandbox& sb) {
  if (!sb.enabled) return nullptr;
  if (sb.cpu_seconds) {
    struct rlimit r{sb.cpu_seconds, sb.cpu_seconds + 1};
    if (::setrlimit(RLIMIT_CPU, &r) != 0) return "setrlimit(RLIMIT_CPU)";
  }
  if (sb.open_files) {
    struct rlimit r{sb.open_files, sb.open_files};
    ::setrlimit(RLIMIT_NOFILE, &r);  // may only lower: a lower limit already set stays
  }
  if (::geteuid() == 0) ::unshare(CLONE_NEWNET);  // refused in some containers: socket(2) is filtered anyway
  if (sb.drop_uid) {
    if (sb.processes) {
      struct rlimit r{sb.processes, sb.processes};
      if (::setrlimit(RLIMIT_NPROC, &r) != 0) return "setrlimit(RLIMIT_NPROC)";
    }
    if (::setgroups(0, nullptr) != 0) return "setgroups";
    if (::setresgid(sb.gid, sb.gid, sb.gid) != 0) return "setresgid";
    if (::setresuid(sb.uid, sb.uid, sb.uid) != 0) return "setresuid";
    if (::getuid() != sb.uid || ::geteuid() != sb.uid || ::getegid() != sb.gid) return "the uid change";
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "prctl(PR_SET_NO_NEW_PRIVS)";
  const auto& bpf = seccomp_program();
  if (!bpf.empty()) {
    sock_fprog prog{static_cast<unsigned short>(bpf.size() / sizeof(sock_filter)),
                    reinterpret_cast<sock_filter*>(const_cast<unsigned char*>(bpf.data()))};
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return "prctl(PR_SET_SECCOMP)";
  }
  return nullptr;
}

}  // namespace zkfarm::witgen
