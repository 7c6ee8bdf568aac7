#include "ctl/exit_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

namespace zkfarm::ctl {

namespace {
using Clock = std::chrono::steady_clock;

// The last pid of the NSpid line of /proc/PID/status: the pid as the
// process itself sees it (its innermost pid namespace); 0 when unreadable.
int innermost_pid(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream in(line.substr(6));
    int p = 0, last = 0;
    while (in >> p) last = p;
    return last;
  }
  return 0;
}

int pidfd_open(int pid) {
#ifdef SYS_pidfd_open
  return int(::syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}
}  // namespace

ExitWatch::ExitWatch(int pid, const std::string& state_dir) {
  std::string pid_why = "zkfarmd's pid is not known here (another pid namespace?)";
  if (pid > 0) {
    pid_ = pid;
    pidfd_ = pidfd_open(pid);
    // Read after the pidfd is open, so both are of the same process.
    if (pidfd_ >= 0) inner_pid_ = innermost_pid(pid);
    if (pidfd_ < 0) {
      if (errno == ESRCH) exited_ = true;  // gone already: nothing left to watch of it
      pid_why = "pidfd_open(" + std::to_string(pid) + "): " + std::strerror(errno);
    }
  }
  // O_NONBLOCK: a FIFO planted under the name is never waited on; flock
  // works on a descriptor opened for reading.
  const std::string lock = state_dir + "/zkfarmd.lock";
  lock_fd_ = ::open(lock.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  std::string lock_why;
  if (lock_fd_ < 0) lock_why = lock + ": " + std::strerror(errno);
  if (pidfd_ < 0 && lock_fd_ < 0 && !exited_) why_not_ = pid_why + "; " + lock_why;
}

ExitWatch::~ExitWatch() {
  if (pidfd_ >= 0) ::close(pidfd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void ExitWatch::answered_by(int reply_pid) {
  const int own = inner_pid_ > 0 ? inner_pid_ : pid_;
  if (pidfd_ >= 0 && own != reply_pid) {
    ::close(pidfd_);
    pidfd_ = -1;
    if (lock_fd_ < 0)
      why_not_ = "the socket's peer (pid " + std::to_string(pid_) + ") is not the zkfarmd that answered (pid " +
                 std::to_string(reply_pid) + "), and its state lock cannot be opened";
  }
}

std::string ExitWatch::how() const {
  if (pidfd_ >= 0 && lock_fd_ >= 0) return "process and state lock";
  if (pidfd_ >= 0) return "process";
  if (lock_fd_ >= 0) return "state lock";
  return "";
}

bool ExitWatch::lock_free() {
  // A shared lock taken and dropped at once: it is granted only while no
  // zkfarmd holds its exclusive one, and never blocks a zkfarmd starting now
  // for longer than this call.
  if (::flock(lock_fd_, LOCK_SH | LOCK_NB) != 0) return false;
  ::flock(lock_fd_, LOCK_UN);
  return true;
}

ExitWatch::Result ExitWatch::wait(int64_t wait_ms) {
  if (pidfd_ < 0 && lock_fd_ < 0) return exited_ ? Result::kGone : Result::kUnwatchable;
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max<int64_t>(wait_ms, 0));
  auto left_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  };
  bool process_gone = pidfd_ < 0;
  Clock::time_point gone_at{};
  for (;;) {
    if (!process_gone) {
      // A pidfd is readable once its process has exited.
      pollfd p{pidfd_, POLLIN, 0};
      const int slice = wait_ms < 0 ? 1000 : int(std::clamp<int64_t>(left_ms(), 0, 1000));
      if (::poll(&p, 1, slice) > 0) {
        process_gone = true;
        gone_at = Clock::now();
      }
    }
    if (process_gone && (lock_fd_ < 0 || lock_free())) return Result::kGone;
    // The kernel drops an exiting process's flock before its pidfd turns
    // readable: a lock still held a moment later is another holder's (a
    // zkfarmd started since), not ours to wait for.
    if (pidfd_ >= 0 && process_gone && Clock::now() - gone_at > std::chrono::seconds(1)) return Result::kGone;
    if (wait_ms >= 0 && left_ms() <= 0) return Result::kTimeout;
    if (process_gone) ::poll(nullptr, 0, int(std::clamp<int64_t>(wait_ms < 0 ? 20 : left_ms(), 1, 20)));
  }
}

}  // namespace zkfarm::ctl
