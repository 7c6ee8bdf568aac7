#include "witgen/sandbox_uids.hpp"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "witgen/subprocess.hpp"

namespace zkfarm::witgen {

namespace fs = std::filesystem;

namespace {

// A uid's lock file holds one byte: kWiped once its last holder killed its
// processes and removed its files, kInUse while held (also what a holder that
// died leaves: the next one wipes it first).
constexpr char kWiped = 'w', kInUse = 'u';

// The lock folder: made 0700 by root when missing; refused when it is a link,
// not a folder, not root's, or writable by anyone else (a planted lock file
// could hold a uid, or a link redirect the lock's creation).
int open_lock_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw SandboxError(dir + ": cannot create the sandbox uids' lock folder: " + std::strerror(errno));
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st{};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    throw SandboxError(dir + ": cannot open the sandbox uids' lock folder (a link, or not a folder): " +
                       std::strerror(e));
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    ::close(fd);
    throw SandboxError(dir + ": the sandbox uids' lock folder must be root's and writable by nobody else "
                       "(remove it; zkfarmd makes it anew)");
  }
  return fd;
}

unsigned pick_start(uint32_t count) {
  static std::mutex m;
  static std::minstd_rand rng{std::random_device{}()};
  std::lock_guard<std::mutex> lock(m);
  return unsigned(rng() % count);
}

// Folders deeper than this under a temporary folder's entry are not walked
// (the walk recurses: a tree made millions deep must not overflow the stack).
constexpr int kMaxDepth = 64;

// Removes `name` in folder `dir` (its fd) and what is below it, following no
// link, at most kMaxDepth folders down. False when something was left.
bool remove_below(int dir, const char* name, int depth = 0) {
  struct stat st{};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return true;
  if (!S_ISDIR(st.st_mode)) return ::unlinkat(dir, name, 0) == 0;
  if (depth >= kMaxDepth) return false;
  const int fd = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return false;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  bool all = true;
  for (const auto& n : names) all = remove_below(::dirfd(d), n.c_str(), depth + 1) && all;
  ::closedir(d);
  return ::unlinkat(dir, name, AT_REMOVEDIR) == 0 && all;
}

// What could not be removed is made root's and closed to everyone else, so
// the uid's next holder cannot reach it.
void seal(int dir, const char* name) {
  const int fd = ::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  struct stat st{};
  if (::fstat(fd, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
    (void)!::fchown(fd, 0, 0);
    (void)!::fchmod(fd, 0700);
  }
  ::close(fd);
}

}  // namespace

UidLease& UidLease::operator=(UidLease&& o) noexcept {
  if (this != &o) {
    release();
    lock_fd_ = o.lock_fd_;
    uid_ = o.uid_;
    o.lock_fd_ = -1;
  }
  return *this;
}

void UidLease::release() {
  if (lock_fd_ < 0) return;
  // Killed and swept while still held: nobody else gets the uid until both
  // are done. Then the lock file says so, and the next holder need not again.
  kill_uid_processes(uid_);
  remove_uid_temporary_files(uid_);
  (void)!::pwrite(lock_fd_, &kWiped, 1, 0);
  ::close(lock_fd_);
  lock_fd_ = -1;
}

void kill_uid_processes(uid_t uid) {
  if (::geteuid() != 0 || uid == 0) return;
  pid_t pid;
  {
    std::lock_guard<std::mutex> lock(ChildRegistry::mutex());  // a subreaper's loop leaves it to us
    pid = ::fork();
    if (pid > 0) ChildRegistry::pids().insert(pid);
  }
  if (pid < 0) return;
  if (pid == 0) {
    // Raw system calls: only this thread, no library state after the fork.
    if (::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setresgid, uid, uid, uid) != 0 ||
        ::syscall(SYS_setresuid, uid, uid, uid) != 0)
      _exit(1);
    // kill(-1) as the uid: every process it may signal (real or saved uid
    // the same), itself aside. A fork racing with it fails (a fatal signal
    // is pending in the parent). Zombies still count as signalled, so a
    // bounded number of rounds, until nothing is left.
    for (int round = 0; round < 20; ++round) {
      if (::kill(-1, SIGKILL) != 0) break;
      struct timespec pause{0, 1000 * 1000};
      ::nanosleep(&pause, nullptr);
    }
    _exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::lock_guard<std::mutex> lock(ChildRegistry::mutex());
  ChildRegistry::pids().erase(pid);
}

void remove_uid_temporary_files(uid_t uid) {
  if (::geteuid() != 0 || uid == 0) return;
  for (const char* dir : {"/tmp", "/var/tmp", "/dev/shm"}) {
    const int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    DIR* d = ::fdopendir(fd);
    if (!d) {
      ::close(fd);
      continue;
    }
    std::vector<std::string> owned;
    while (dirent* e = ::readdir(d)) {
      struct stat st{};
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == uid)
        owned.emplace_back(e->d_name);
    }
    for (const auto& n : owned)
      if (!remove_below(::dirfd(d), n.c_str())) seal(::dirfd(d), n.c_str());
    ::closedir(d);
  }
}

UidLease lease_sandbox_uid(Sandbox& sb, std::chrono::milliseconds wait) {
  if (!sb.enabled || !sb.drop_uid || sb.pool_count == 0) return {};
  const int dir = open_lock_dir(sb.pool_lock_dir);
  struct CloseDir {
    int fd;
    ~CloseDir() { ::close(fd); }
  } close_dir{dir};
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    const unsigned start = pick_start(sb.pool_count);
    for (uint32_t k = 0; k < sb.pool_count; ++k) {
      const uid_t uid = sb.pool_base + (start + k) % sb.pool_count;
      const std::string name = std::to_string(uid);
      const int fd = ::openat(dir, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0)
        throw SandboxError(sb.pool_lock_dir + "/" + name + ": cannot open the sandbox uid's lock: " +
                           std::strerror(errno));
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        continue;
      }
      // What an earlier holder that died (SIGKILL) before wiping the uid left
      // behind goes first; "in use" is written before the uid is used.
      char state = 0;
      if (::pread(fd, &state, 1, 0) != 1 || state != kWiped) {
        kill_uid_processes(uid);
        remove_uid_temporary_files(uid);
      }
      if (::pwrite(fd, &kInUse, 1, 0) != 1) {
        const int e = errno;
        ::close(fd);
        throw SandboxError(sb.pool_lock_dir + "/" + name + ": cannot mark the sandbox uid in use: " + std::strerror(e));
      }
      sb.uid = uid;
      sb.gid = gid_t(uid);
      return UidLease(fd, uid);
    }
    if (std::chrono::steady_clock::now() >= deadline)
      throw SandboxError("every one of the " + std::to_string(sb.pool_count) + " sandbox uids from " +
                         std::to_string(sb.pool_base) + " is in use; raise sandbox_uid_count");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace zkfarm::witgen
