#include "supervisor/log_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace zkfarm::supervisor {

ReopenableFileSink::ReopenableFileSink(std::string path, std::optional<gid_t> group)
    : path_(std::move(path)), group_(group) {
  open_file();
}

ReopenableFileSink::~ReopenableFileSink() {
  if (fd_ >= 0) ::close(fd_);
}

void ReopenableFileSink::open_file() {
  // O_EXCL first, to know whether this open created the file: only a file
  // zkfarmd made gets its mode and group set (an operator's chmod stays).
  bool created = true;
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
  if (fd < 0 && errno == EEXIST) {
    created = false;
    fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  }
  if (fd < 0) {
    const int e = errno;
    throw spdlog::spdlog_ex("cannot open the log file " + path_ + ": " +
                            (e == ELOOP ? std::string("it is a symbolic link") : std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw spdlog::spdlog_ex("cannot open the log file " + path_ + ": not a regular file");
  }
  // O_NONBLOCK was only for the open (a FIFO planted there must not hang it).
  ::fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);
  group_error_.clear();
  if (created) {
    // The group first, then the mode: the file is never readable by
    // zkfarmd's own group (the submitters' control_group by default), not even
    // for a moment; without an admin group it stays 0600 (the umask's).
    if (group_) {
      if (::fchown(fd, uid_t(-1), *group_) == 0)
        ::fchmod(fd, 0640);
      else
        group_error_ = std::string("cannot give the log file ") + path_ +
                       " to the admin group (it stays 0600, for zkfarmd's user only): " + std::strerror(errno);
    }
  }
  fd_ = fd;
}

void ReopenableFileSink::reopen() {
  std::lock_guard<std::mutex> lock(this->mutex_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  open_file();
}

void ReopenableFileSink::sink_it_(const spdlog::details::log_msg& msg) {
  if (fd_ < 0) return;
  spdlog::memory_buf_t formatted;
  this->formatter_->format(msg, formatted);
  const char* p = formatted.data();
  size_t left = formatted.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    // A full disk: spdlog's error handler reports it on stderr (the line
    // still reaches the other sinks).
    if (n <= 0) throw spdlog::spdlog_ex("cannot write the log file " + path_, n < 0 ? errno : ENOSPC);
    p += n;
    left -= size_t(n);
  }
}

}  // namespace zkfarm::supervisor
