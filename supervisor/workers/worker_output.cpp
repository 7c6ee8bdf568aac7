#include "supervisor/workers/worker_output.hpp"

#include <errno.h>
#include <unistd.h>

#include <utility>

namespace zkfarm::supervisor {

WorkerOutput::WorkerOutput(int fd) : fd_(fd) {}

WorkerOutput::~WorkerOutput() {
  if (fd_ >= 0) ::close(fd_);
}

WorkerOutput::WorkerOutput(WorkerOutput&& o) noexcept { *this = std::move(o); }

WorkerOutput& WorkerOutput::operator=(WorkerOutput&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    partial_ = std::move(o.partial_);
    last_ = std::move(o.last_);
    window_start_ms_ = o.window_start_ms_;
    in_window_ = o.in_window_;
    suppressed_ = o.suppressed_;
  }
  return *this;
}

void WorkerOutput::emit(std::string_view line, int64_t now_ms, const LineFn& fn) {
  if (now_ms - window_start_ms_ >= 1000) {
    if (suppressed_) fn("(" + std::to_string(suppressed_) + " lines suppressed: more than " +
                        std::to_string(kMaxLinesPerSecond) + " a second)");
    suppressed_ = 0;
    in_window_ = 0;
    window_start_ms_ = now_ms;
  }
  last_.assign(line.substr(0, kMaxLine));
  if (++in_window_ > kMaxLinesPerSecond) {
    ++suppressed_;
    return;
  }
  if (line.size() > kMaxLine) {
    fn(std::string(line.substr(0, kMaxLine)) + " … (line cut at " + std::to_string(kMaxLine) + " bytes)");
  } else {
    fn(line);
  }
}

void WorkerOutput::pump(int64_t now_ms, const LineFn& fn) {
  if (fd_ < 0) return;
  char buf[8192];
  for (int reads = 0; reads < 64; ++reads) {  // bounded: the loop has other work
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // EAGAIN: nothing more now
    }
    if (n == 0) {  // the worker (and everything that held the pipe) is gone
      finish(now_ms, fn);
      return;
    }
    partial_.append(buf, size_t(n));
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string_view line(partial_.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      emit(line, now_ms, fn);
    }
    partial_.erase(0, start);
    if (partial_.size() > kMaxLine) {  // no newline in sight: pass on what there is
      emit(partial_, now_ms, fn);
      partial_.clear();
    }
  }
}

void WorkerOutput::finish(int64_t now_ms, const LineFn& fn) {
  if (!partial_.empty()) emit(partial_, now_ms, fn);
  partial_.clear();
  if (suppressed_) fn("(" + std::to_string(suppressed_) + " lines suppressed)");
  suppressed_ = 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void WorkerOutput::close(int64_t now_ms, const LineFn& fn) {
  pump(now_ms, fn);
  if (fd_ >= 0) finish(now_ms, fn);
}

}  // namespace zkfarm::supervisor
