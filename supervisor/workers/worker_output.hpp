#pragma once
// A worker's stdout and stderr, captured through a pipe so that its lines land
// in zkfarmd's log with the worker's id (a worker's own words — a CUDA error,
// "cannot map the arena" — are what an operator needs when it dies).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace zkfarm::supervisor {

/// The read end of one worker's output pipe (non-blocking, close-on-exec).
/// Lines are split on '\n'; a line longer than kMaxLine is cut (and said so);
/// at most kMaxLinesPerSecond lines a second are passed on, the rest counted
/// and reported once the second is over, so a worker printing in a loop
/// cannot flood the log.
class WorkerOutput {
 public:
  static constexpr size_t kMaxLine = 2000;
  static constexpr unsigned kMaxLinesPerSecond = 50;
  using LineFn = std::function<void(std::string_view line)>;

  WorkerOutput() = default;
  /// Takes ownership of `fd` (the pipe's read end).
  explicit WorkerOutput(int fd);
  ~WorkerOutput();
  WorkerOutput(WorkerOutput&& o) noexcept;
  WorkerOutput& operator=(WorkerOutput&& o) noexcept;
  WorkerOutput(const WorkerOutput&) = delete;
  WorkerOutput& operator=(const WorkerOutput&) = delete;

  int fd() const { return fd_; }
  /// Reads what is there without blocking and calls `fn` for each complete
  /// line (and a summary line for suppressed ones). `now_ms` is monotonic.
  /// At end of file the partial last line is flushed and the pipe closed.
  void pump(int64_t now_ms, const LineFn& fn);
  /// Reads what is left, flushes the partial line and closes the pipe.
  void close(int64_t now_ms, const LineFn& fn);
  /// The last line passed on (for status and failure reasons).
  const std::string& last_line() const { return last_; }

 private:
  void emit(std::string_view line, int64_t now_ms, const LineFn& fn);
  /// End of the pipe: the partial line, the count of suppressed lines, close.
  void finish(int64_t now_ms, const LineFn& fn);
  int fd_ = -1;
  std::string partial_, last_;
  int64_t window_start_ms_ = 0;
  unsigned in_window_ = 0;
  size_t suppressed_ = 0;
};

}  // namespace zkfarm::supervisor
