#pragma once
// Reading files that clients name (proving keys, witnesses) without letting the
// file wedge, crash or fool the reader: open_regular_file refuses FIFOs, devices,
// folders and sockets without blocking; copy_into copies with read(2), never
// mmap (a file truncated under a mapping raises SIGBUS), hashes as it goes, and
// refuses a source that changed while it was read.
//
// Paths are followed (symlinks included): run these under FsCredentials of the
// client (fs_credentials.hpp), so a client can only name what it could read
// itself. Without that, a root supervisor would read /etc/shadow for anyone.
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "files/temp_file.hpp"
#include "files/unique_fd.hpp"

namespace zkfarm::files {

/// What identifies a file's contents for a cache: "this file, unchanged, has
/// hash H". Any write to a file changes its mtime and ctime; ctime cannot be set
/// by users (utimensat(2) sets mtime and atime only), so a rewrite in place that
/// keeps size and mtime still changes ctime. Caveat: timestamps have the
/// kernel's coarse clock granularity (a jiffy, 1–10 ms) except where the
/// filesystem has multigrain timestamps (Linux ≥ 6.13: ext4, xfs, btrfs,
/// tmpfs), so on older kernels a rewrite within one tick of the file's previous
/// change, keeping its size, can go unseen.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;          // bytes
  int64_t mtime_ns = 0;    // ns since the epoch
  int64_t ctime_ns = 0;    // ns since the epoch
  bool operator==(const FileIdentity&) const = default;

  /// The identity in a stat result.
  static FileIdentity of(const struct stat& st);
  /// fstat(2)s `fd`; FileError naming `path` if that fails.
  static FileIdentity of(int fd, const std::string& path);
};

/// Opens `path` for reading: O_RDONLY|O_NOCTTY|O_NONBLOCK|O_CLOEXEC (so opening a
/// FIFO returns at once instead of waiting for a writer, and a terminal does not
/// become the controlling one), fstat(2)s it and refuses anything but a regular
/// file, then clears O_NONBLOCK. Throws FileError naming the path and the fault:
/// "<path>: is a FIFO, not a regular file" (likewise "is a character device",
/// "is a block device", "is a directory", "is a socket"; code 0), or
/// "<path>: cannot open: <strerror>" (code errno).
UniqueFd open_regular_file(const std::string& path);

/// Whether copy_into hashes what it copies.
enum class CopyHash { kSha256, kNone };

/// What copy_into made.
struct CopyResult {
  std::string sha256_hex;  // SHA-256 (FIPS 180-4) of the bytes copied: 64 lowercase hex digits ("" with kNone)
  uint64_t bytes = 0;      // bytes copied (= source.size)
  FileIdentity source;     // the source's identity, unchanged from start to end of the copy
};

/// Called after each chunk (1 MiB) with the bytes copied so far. It may throw to
/// abort the copy (a cancelled job); the partial copy is then removed.
using CopyProgress = std::function<void(uint64_t bytes_copied)>;

/// Copies the regular file open at `src_fd` (from offset 0, with pread(2); the
/// descriptor's offset is untouched) into a new file `name` in the folder open
/// at `dir_fd`, with exactly the permission bits `mode`, hashing it with
/// SHA-256 (OpenSSL EVP) as it goes unless `hash` is kNone (a witness: about
/// 1.2 GB/s a core with SHA-NI, for a name nobody needs). The copy is built in
/// a TempFile (O_TMPFILE,
/// or a random name: see TempMethod), fsync'ed, and only then given `name`,
/// replacing whatever entry was there (a symlink is replaced, not followed).
///
/// The source must not change while it is read: reading fewer bytes than the
/// first fstat's size, more (at most size + 1 bytes are read, so a file that
/// keeps growing cannot fill the disk), or a second fstat at the end showing
/// another size, mtime or ctime throws FileError "<src_path>: changed while it
/// was read (...)", and the partial copy is removed. Every other fault throws
/// FileError naming the source (read errors) or the destination (ENOSPC,
/// EDQUOT, EROFS, EACCES, EIO), also leaving nothing behind. `src_path` is for
/// messages only; the destination is named by its folder's path as
/// /proc/self/fd shows it.
CopyResult copy_into(int src_fd, const std::string& src_path, int dir_fd, const std::string& name, mode_t mode,
                     const CopyProgress& progress = {}, TempMethod method = TempMethod::kAuto,
                     CopyHash hash = CopyHash::kSha256);

}  // namespace zkfarm::files
