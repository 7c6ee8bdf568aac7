#pragma once
// zkfarmd's log file as an spdlog sink that can be reopened: logrotate moves
// STATE/zkfarmd.log aside and sends SIGHUP (or SIGUSR1, nginx's habit); the
// loop then calls reopen() and new lines go to a new file of the old name.
#include <spdlog/details/file_helper.h>
#include <spdlog/sinks/base_sink.h>

#include <mutex>
#include <string>

namespace zkfarm::supervisor {

/// An append-only file sink whose file can be reopened by name. Thread-safe
/// (spdlog's base_sink holds the mutex around sink_it_ and flush_).
class ReopenableFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  /// Opens (creates, appends to) `path`. Throws spdlog::spdlog_ex naming the
  /// file when it cannot be opened.
  explicit ReopenableFileSink(std::string path) : path_(std::move(path)) { file_.open(path_, false); }
  ReopenableFileSink(const ReopenableFileSink&) = delete;
  ReopenableFileSink& operator=(const ReopenableFileSink&) = delete;

  /// Closes the file and opens `path` again (a new file if it was moved away).
  /// Throws spdlog::spdlog_ex when it cannot be opened; the sink then keeps
  /// no file until the next successful reopen (lines go to the other sinks).
  void reopen() {
    std::lock_guard<std::mutex> lock(this->mutex_);
    file_.close();
    open_ = false;
    file_.open(path_, false);
    open_ = true;
  }

  const std::string& path() const { return path_; }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    if (!open_) return;
    this->formatter_->format(msg, formatted);
    file_.write(formatted);  // a full disk throws; spdlog's error handler reports it on stderr
  }
  void flush_() override {
    if (open_) file_.flush();
  }

 private:
  std::string path_;
  spdlog::details::file_helper file_;
  bool open_ = true;
};

}  // namespace zkfarm::supervisor
