#pragma once
// Waiting for a zkfarmd to be gone, not only to have said so: `stop --wait`
// gets its reply as zkfarmd begins to exit, and the process (with the state
// lock a new zkfarmd must take) lives on while it closes the journal and the
// arena. A script that starts zkfarmd again right after needs both gone.
//
// Two ways, both set up before the stop is asked for, while zkfarmd surely
// lives (so a pid reused later is never mistaken for it):
//   - a pidfd (pidfd_open(2)) on the pid the kernel gives for the control
//     connection's peer (SO_PEERCRED, in this pid namespace; any process,
//     not only a child), readable once the process has exited;
//   - the state lock, STATE/zkfarmd.lock (supervisor/state_lock.hpp): free
//     once no zkfarmd holds it, which is exactly what the next start checks.
//     It also works across pid namespaces (a zkfarmd in a container whose
//     state dir is mounted here), but needs read access to the file
//     (zkfarmd's user or root).
// With both, the wait ends when the process is gone and the lock is free.
#include <cstdint>
#include <string>

namespace zkfarm::ctl {

class ExitWatch {
 public:
  /// `pid`: zkfarmd's pid in this namespace (0: unknown, no pidfd);
  /// `state_dir`: where its lock file is. Never throws: what cannot be
  /// watched is left out (how() says what is left).
  ExitWatch(int pid, const std::string& state_dir);
  ~ExitWatch();
  ExitWatch(const ExitWatch&) = delete;
  ExitWatch& operator=(const ExitWatch&) = delete;

  /// The pid zkfarmd answered with (its getpid(), in its own namespace):
  /// the pidfd is kept only if it is of that process (the last NSpid of
  /// /proc/PID/status, or the pid itself where that cannot be read), so that
  /// whatever else holds the socket's other end (a test's fake, a proxy) is
  /// never waited for.
  void answered_by(int reply_pid);

  /// How the exit is watched: "process and state lock", "process",
  /// "state lock", or "" when neither could be set up (then why_not()).
  std::string how() const;
  /// Why nothing can be watched, for people ("" when something can).
  const std::string& why_not() const { return why_not_; }

  enum class Result {
    kGone,        ///< the process has exited and the state lock is free
    kTimeout,     ///< `wait_ms` passed first
    kUnwatchable  ///< neither a pidfd nor the lock: nothing to wait on
  };
  /// Waits up to `wait_ms` (< 0: for ever), polling the lock every 20 ms.
  Result wait(int64_t wait_ms);

 private:
  bool lock_free();
  int pidfd_ = -1;
  int inner_pid_ = 0;  ///< the peer's pid in its own namespace (0: not read)
  int pid_ = 0;
  int lock_fd_ = -1;
  bool exited_ = false;  ///< the pid had gone already when the watch began
  std::string why_not_;
};

}  // namespace zkfarm::ctl
