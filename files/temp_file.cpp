#include "files/temp_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "files/file_error.hpp"

namespace zkfarm::files {

namespace {

// linkat(2) of an O_TMPFILE file goes through /proc/self/fd (open(2), the
// O_TMPFILE example); without /proc mounted, only named temporaries work.
bool proc_fd_usable() {
  static const bool usable = ::access("/proc/self/fd", F_OK) == 0;
  return usable;
}

// O_TMPFILE is refused with these when the kernel or the filesystem lacks it
// (open(2), ERRORS: EISDIR and EOPNOTSUPP; EINVAL from some older kernels).
bool tmpfile_unsupported(int err) { return err == EOPNOTSUPP || err == EISDIR || err == EINVAL; }

void check_name(const std::string& target, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos || name.size() > NAME_MAX)
    throw FileError(target, EINVAL, target + ": cannot write: the file name must be one path component");
}

}  // namespace

std::string random_temp_name() {
  uint8_t bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t k = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (k < 0) {
      if (errno == EINTR) continue;
      throw_errno("getrandom", "draw a random file name", errno);
    }
    got += size_t(k);
  }
  static const char* hex = "0123456789abcdef";
  std::string name = ".zkfarm-";
  for (uint8_t b : bytes) {
    name += hex[b >> 4];
    name += hex[b & 15];
  }
  return name + ".tmp";
}

// The file gets exactly `mode`, whatever the process umask: zkfarmd runs with
// umask 077 (its own files are private) yet hands clients 0644 results.
void TempFile::exact_mode(mode_t mode) {
  if (::fchmod(fd_.get(), mode) != 0) throw_errno(target_, "set the mode of a temporary file", errno);
}

TempFile::TempFile(int dir_fd, std::string dir_path, std::string name, mode_t mode, TempMethod method)
    : dir_fd_(dir_fd), target_(join_path(dir_path, name)), name_(std::move(name)) {
  check_name(target_, name_);
  if (method == TempMethod::kAuto && proc_fd_usable()) {
    int fd = ::openat(dir_fd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
    if (fd >= 0) {
      fd_.reset(fd);
      unnamed_ = true;
      exact_mode(mode);
      return;
    }
    if (!tmpfile_unsupported(errno)) throw_errno(target_, "create a temporary file", errno);
  }
  for (int attempt = 0;; ++attempt) {
    std::string temp = random_temp_name();
    int fd = ::openat(dir_fd_, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) {
      fd_.reset(fd);
      temp_name_ = std::move(temp);
      exact_mode(mode);
      return;
    }
    // EEXIST from 128 random bits means someone is replaying our names: a few
    // retries, then give up rather than loop.
    if (errno != EEXIST || attempt == 4) throw_errno(target_, "create a temporary file", errno);
  }
}

TempFile::~TempFile() {
  if (!committed_) discard();
}

void TempFile::discard() noexcept {
  fd_.reset();
  if (!temp_name_.empty()) ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
  temp_name_.clear();
}

void TempFile::write_all(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t k = ::write(fd_.get(), p, size);
    if (k < 0) {
      if (errno == EINTR) continue;
      throw_errno(target_, "write", errno);
    }
    p += k;
    size -= size_t(k);
    written_ += uint64_t(k);
  }
  // Streaming writeback. Both calls are hints as far as correctness goes
  // (commit() fsyncs whatever is left); an error here shows again there.
  while (written_ - flushed_ >= kWritebackWindow) {
    ::sync_file_range(fd_.get(), off_t(flushed_), off_t(kWritebackWindow), SYNC_FILE_RANGE_WRITE);
    if (flushed_ >= kWritebackWindow)
      ::sync_file_range(fd_.get(), off_t(flushed_ - kWritebackWindow), off_t(kWritebackWindow),
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    flushed_ += kWritebackWindow;
  }
}

void TempFile::commit() {
  if (committed_ || !fd_) throw FileError(target_, EINVAL, target_ + ": cannot write: committed twice");
  if (::fsync(fd_.get()) != 0) throw_errno(target_, "write (fsync)", errno);

  if (unnamed_) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd_.get());
    if (::linkat(AT_FDCWD, self.c_str(), dir_fd_, name_.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      if (errno != EEXIST) throw_errno(target_, "link the new file", errno);
      // `name` is taken (an old result, or anything planted there): link under
      // a random name, then rename over it. link(2) never follows a symlink
      // at its new path, and rename(2) replaces the entry itself.
      for (int attempt = 0;; ++attempt) {
        std::string temp = random_temp_name();
        if (::linkat(AT_FDCWD, self.c_str(), dir_fd_, temp.c_str(), AT_SYMLINK_FOLLOW) == 0) {
          temp_name_ = std::move(temp);
          break;
        }
        if (errno != EEXIST || attempt == 4) throw_errno(target_, "link the new file", errno);
      }
    }
  }
  if (!temp_name_.empty()) {
    if (::renameat(dir_fd_, temp_name_.c_str(), dir_fd_, name_.c_str()) != 0) throw_errno(target_, "rename", errno);
    temp_name_.clear();  // now the final name: never unlinked from here on
  }
  committed_ = true;

  // The new entry is durable only once its folder is (fsync(2), NOTES).
  const int flags = ::fcntl(dir_fd_, F_GETFL);
  const int rc = (flags >= 0 && (flags & O_PATH)) ? ::syncfs(fd_.get()) : ::fsync(dir_fd_);
  // EINVAL: a filesystem that cannot sync folders at all (fsync(2), ERRORS).
  if (rc != 0 && errno != EINVAL) {
    const int err = errno;
    fd_.reset();
    throw_errno(target_, "sync its folder", err);
  }
  if (fd_.close_checked() != 0) throw_errno(target_, "write (close)", errno);
}

}  // namespace zkfarm::files
