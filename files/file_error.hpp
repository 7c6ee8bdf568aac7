#pragma once
// FileError: every fault of the safe file operations (files/), naming the path
// and the fault, e.g. "/out/0.proof.json: cannot write: No space left on device".
#include <stdexcept>
#include <string>

namespace zkfarm::files {

/// A file operation failed. what() names the path and the fault; path() is the
/// file or folder concerned; code() is the errno behind it (ENOSPC, EROFS,
/// EDQUOT, EACCES, EIO, …), or 0 for a fault the kernel did not report (a FIFO
/// where a regular file was wanted, a source that changed while it was read).
/// Messages never contain file contents.
class FileError : public std::runtime_error {
 public:
  /// `message` is the whole text of what(); it should start with `path`.
  FileError(std::string path, int code, const std::string& message)
      : std::runtime_error(message), path_(std::move(path)), code_(code) {}

  const std::string& path() const noexcept { return path_; }
  int code() const noexcept { return code_; }

 private:
  std::string path_;
  int code_;
};

/// Throws FileError "<path>: cannot <action>: <strerror(err)>" with code `err`.
[[noreturn]] void throw_errno(const std::string& path, const std::string& action, int err);

/// `dir` + "/" + `name` for messages ("name" alone when dir is empty).
std::string join_path(const std::string& dir, const std::string& name);

}  // namespace zkfarm::files
