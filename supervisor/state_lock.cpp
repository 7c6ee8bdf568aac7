#include "supervisor/state_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace zkfarm::supervisor {

StateLock::StateLock(const std::string& state_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(state_dir, ec);
  if (ec) throw StateLockError("cannot create state dir " + state_dir + ": " + ec.message());
  // The state dir holds the sockets, the journal and the copies of every
  // input: it must be ours, not a folder another user made for us to fill
  // (or a symlink to one). It is group-searchable for control.sock's group.
  struct stat st {};
  if (::lstat(state_dir.c_str(), &st) != 0)
    throw StateLockError("cannot stat state dir " + state_dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw StateLockError("state dir " + state_dir + " is not a directory (a symlink?)");
  if (st.st_uid != ::geteuid())
    throw StateLockError("state dir " + state_dir + " belongs to uid " + std::to_string(st.st_uid) +
                         ", not to zkfarmd's user (uid " + std::to_string(::geteuid()) + ")");
  fs::permissions(state_dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec, ec);
  const std::string path = state_dir + "/zkfarmd.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0) throw StateLockError("cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char buf[32] = {0};
    ssize_t k = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      std::string pid = k > 0 ? std::string(buf, size_t(k)) : std::string("unknown");
      while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
      throw StateLockError("another zkfarmd (pid " + pid + ") is running with state dir " + state_dir);
    }
    throw StateLockError("cannot lock " + path + ": " + std::strerror(err));
  }
  std::string pid = std::to_string(getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
    throw StateLockError("cannot write " + path + ": " + std::strerror(errno));
  }
}

StateLock::~StateLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the flock
}

}  // namespace zkfarm::supervisor
