#pragma once
// TempFile: a new file that becomes visible under its final name only when it is
// complete and on disk. The writer (safe_write) and the copier (input_file) both
// build their output in one, so neither ever leaves a partial file behind.
#include <sys/types.h>

#include <string>

#include "files/unique_fd.hpp"

namespace zkfarm::files {

/// How the temporary file is made. kAuto: O_TMPFILE (no name at all until it is
/// complete; needs Linux ≥ 3.11, a filesystem that supports it and /proc for
/// linkat), else kNamed. kNamed: a random name ".zkfarm-<32 hex digits>.tmp"
/// (128 bits from getrandom(2)) created with O_CREAT|O_EXCL|O_NOFOLLOW, so a
/// planted file or symlink can never be opened in its place. Tests use kNamed to
/// cover the fallback on filesystems that have O_TMPFILE.
enum class TempMethod { kAuto, kNamed };

/// A temporary file in an open folder, destined for `name` there. Create it,
/// write through fd(), then commit(). Destroyed without commit (an exception,
/// a cancelled copy), it leaves nothing: an O_TMPFILE file is freed on close,
/// a named one is unlinked. Faults throw FileError naming `dir_path/name`.
///
/// The folder descriptor is borrowed: it must stay open until the TempFile is
/// gone. It may be an O_PATH descriptor (a folder the caller may write but not
/// list); the folder is then made durable with syncfs(2) instead of fsync(2).
class TempFile {
 public:
  /// Creates the temporary file with exactly the permission bits `mode`
  /// (fchmod after open(2): the umask does not apply). `name` must be a single path component: not empty, not
  /// "." or "..", no '/', at most NAME_MAX bytes (else FileError, code EINVAL).
  /// `dir_path` is used in messages only.
  TempFile(int dir_fd, std::string dir_path, std::string name, mode_t mode, TempMethod method = TempMethod::kAuto);
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile();

  /// The descriptor to write to (O_WRONLY).
  int fd() const noexcept { return fd_.get(); }
  /// "dir_path/name", for messages.
  const std::string& target() const noexcept { return target_; }

  /// Writes all of `size` bytes at `data` (retrying short writes and EINTR).
  /// A large file is sent to the disk as it grows: every kWritebackWindow
  /// bytes, writeback of that window starts (sync_file_range(2)) and the one
  /// before it is waited for, so at most two windows per file are dirty in
  /// the page cache. commit()'s fsync then has little left to write, and other
  /// writers' fsyncs on the same filesystem (ext4 commits every dirty inode's
  /// data in ordered mode) do not wait behind gigabytes of copies.
  void write_all(const void* data, size_t size);
  static constexpr uint64_t kWritebackWindow = uint64_t(8) << 20;

  /// fsync(2)s the file, gives it its final name atomically — linkat(2) when
  /// `name` is free, else a link under a random name and renameat(2) over
  /// `name` — then fsyncs the folder and closes the file. An existing entry at
  /// `name` (a file, a symlink) is replaced, never followed or written through;
  /// a folder at `name` is an error (EISDIR). Called at most once. If the
  /// folder cannot be synced after the rename, the new file is in place but
  /// FileError is still thrown: its durability is not known.
  void commit();

 private:
  void exact_mode(mode_t mode);
  void discard() noexcept;

  int dir_fd_;
  std::string target_;
  std::string name_;
  UniqueFd fd_;
  std::string temp_name_;  // a name of ours currently linked in the folder ("" when none)
  bool unnamed_ = false;   // made with O_TMPFILE
  bool committed_ = false;
  uint64_t written_ = 0;  // bytes written so far
  uint64_t flushed_ = 0;  // bytes whose writeback was started
};

/// A fresh random file name ".zkfarm-<32 hex digits>.tmp" (getrandom(2)).
std::string random_temp_name();

}  // namespace zkfarm::files
