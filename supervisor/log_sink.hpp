#pragma once
// zkfarmd's log file as an spdlog sink that can be reopened: logrotate moves
// the file (STATE/zkfarmd.log unless log_file says otherwise) aside and sends
// SIGHUP (or SIGUSR1, nginx's habit); the loop then calls reopen() and new
// lines go to a new file of the old name.
#include <spdlog/sinks/base_sink.h>

#include <mutex>
#include <optional>
#include <string>
#include <sys/types.h>

namespace zkfarm::supervisor {

/// An append-only file sink whose file can be reopened by name. Thread-safe
/// (spdlog's base_sink holds the mutex around sink_it_ and flush_).
///
/// The file is opened with O_NOFOLLOW (a link planted at the log's name is
/// refused, never written through) and O_NONBLOCK (a FIFO cannot hang it).
/// A file it creates is given to `group` (the operators' admin_group: they
/// read the log without root) and then made 0640, when zkfarmd may (root, or
/// a member of the group); otherwise, or without `group`, it stays 0600.
/// An existing file keeps its mode and owner.
class ReopenableFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  /// Opens (creates, appends to) `path`. Throws spdlog::spdlog_ex naming the
  /// file and the errno when it cannot be opened (or is a link).
  explicit ReopenableFileSink(std::string path, std::optional<gid_t> group = std::nullopt);
  ~ReopenableFileSink() override;
  ReopenableFileSink(const ReopenableFileSink&) = delete;
  ReopenableFileSink& operator=(const ReopenableFileSink&) = delete;

  /// Closes the file and opens `path` again (a new file if it was moved away).
  /// Throws spdlog::spdlog_ex when it cannot be opened; the sink then keeps
  /// no file until the next successful reopen (lines go to the other sinks).
  void reopen();

  const std::string& path() const { return path_; }
  /// Why the file could not be given to `group` at its last creation ("" when
  /// it was, or when it already existed): logged once by the caller.
  const std::string& group_error() const { return group_error_; }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}  // every line is one write(2): nothing is buffered here

 private:
  void open_file();

  std::string path_;
  std::optional<gid_t> group_;
  int fd_ = -1;
  std::string group_error_;
};

}  // namespace zkfarm::supervisor
