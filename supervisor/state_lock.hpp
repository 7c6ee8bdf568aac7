#pragma once
// The exclusive lock an instance holds on its state dir for its whole life:
// flock(2) on STATE/zkfarmd.lock, which holds the owner's pid. The kernel
// drops the lock when the process dies, so a stale file never blocks a start.
#include <stdexcept>
#include <string>

namespace zkfarm::supervisor {

class StateLockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StateLock {
 public:
  /// Creates the state dir (mode 0750) if needed and takes the lock. Throws
  /// StateLockError "another zkfarmd (pid N) is running with state dir DIR" when
  /// it is held, or naming the path and errno on any other failure.
  explicit StateLock(const std::string& state_dir);
  ~StateLock();
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace zkfarm::supervisor
