#pragma once
// UniqueFd: sole owner of one file descriptor, closed when it goes out of scope.
// Move-only, so a descriptor can neither leak on an exception nor be closed twice.
#include <unistd.h>

#include <utility>

namespace zkfarm::files {

/// Owns a file descriptor (or none: -1). The destructor closes it and ignores
/// close(2)'s result; a caller that must know whether buffered data reached the
/// file (NFS reports write errors at close) calls close_checked() instead.
class UniqueFd {
 public:
  UniqueFd() = default;
  /// Takes ownership of `fd` (-1: owns nothing).
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  /// The descriptor, still owned here (-1 when empty).
  int get() const noexcept { return fd_; }
  /// True when a descriptor is owned.
  explicit operator bool() const noexcept { return fd_ >= 0; }
  /// Gives the descriptor up without closing it; the caller now owns it.
  int release() noexcept { return std::exchange(fd_, -1); }
  /// Closes the owned descriptor (if any) and takes `fd` instead.
  void reset(int fd = -1) noexcept {
    int old = std::exchange(fd_, fd);
    if (old >= 0) ::close(old);
  }
  /// Closes the descriptor and returns close(2)'s result (0, or -1 with errno
  /// set); empty afterwards either way, since Linux frees the number even when
  /// close fails (close(2), "Dealing with error returns from close()").
  int close_checked() noexcept {
    int old = std::exchange(fd_, -1);
    return old >= 0 ? ::close(old) : 0;
  }

 private:
  int fd_ = -1;
};

}  // namespace zkfarm::files
