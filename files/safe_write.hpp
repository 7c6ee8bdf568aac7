#pragma once
// Writing results into folders that clients name, so that neither a planted
// symlink nor a full or read-only filesystem can make zkfarm damage another
// file or lose an error: the output is built in a TempFile (no predictable
// name), fsync'ed, and renamed over the final name (a symlink there is
// replaced, never followed); every fault is a FileError.
//
// The folder itself is never a symlink (create_dir_safe refuses one as its
// last component). Earlier components are followed where the client names a
// path (submit, under FsCredentials of the client (fs_credentials.hpp), so a
// client reaches only folders it could write itself; a root supervisor that
// skipped that would let any client write proof JSON into /etc), and refused
// where zkfarm walks a path again later (delivery: resolved at submit by
// resolved_dir_path, then walked with LinksOnTheWay::kRefuse), so a folder on
// the way swapped for a symlink after submit cannot redirect the write.
#include <sys/types.h>

#include <string>
#include <string_view>

#include "files/temp_file.hpp"
#include "files/unique_fd.hpp"

namespace zkfarm::files {

/// Opens folder `dir` (following symlinks) with O_RDONLY|O_DIRECTORY|O_CLOEXEC;
/// a folder the caller may write and enter but not list (mode 0333, 0733) is
/// opened O_PATH instead. FileError naming `dir` if it cannot be opened or is
/// not a folder.
UniqueFd open_dir(const std::string& dir);

/// Writes `content` as file `name` (one path component) in folder `dir`,
/// atomically and durably: a new file (O_TMPFILE, or an unguessable random
/// name made with O_CREAT|O_EXCL|O_NOFOLLOW; see TempMethod) gets all the
/// bytes, fsync(2), then linkat(2)/renameat(2) onto `name`, then the folder is
/// fsync'ed. An existing entry at `name` — an old result, a file, a symlink —
/// is replaced and never followed; readers see the old file or the whole new
/// one. The new file gets exactly the permission bits `mode` (not less the umask), and belongs to
/// the filesystem uid/gid in force (the client's, under FsCredentials).
///
/// Throws FileError "<dir>/<name>: cannot <step>: <strerror>" with code() the
/// errno (ENOSPC, EDQUOT, EROFS, EACCES, EIO, ENOENT, ENOTDIR, EISDIR when
/// `name` is a folder, EINVAL for a bad name) and leaves no temporary file;
/// the one exception is a failure to fsync the folder after the rename, where
/// the new file is in place and FileError still reports it.
void write_file_safe(const std::string& dir, const std::string& name, std::string_view content, mode_t mode = 0644,
                     TempMethod method = TempMethod::kAuto);

/// The same into a folder already open at `dir_fd` (from open_dir or
/// create_dir_safe: several files into the very folder that was checked, with
/// no second path lookup). `dir_path` is for messages only.
void write_file_safe(int dir_fd, const std::string& dir_path, const std::string& name, std::string_view content,
                     mode_t mode = 0644, TempMethod method = TempMethod::kAuto);

/// Whether folder `dir` holds an entry `name`, of any type, without following
/// it: fstatat(2) with AT_SYMLINK_NOFOLLOW. A symlink counts as present (it is
/// not followed, so a dangling one counts too). False when `name` or `dir` does
/// not exist; FileError for other faults (EACCES, ENOTDIR, EIO). For "rewrite
/// only missing outputs".
bool exists_nofollow(const std::string& dir, const std::string& name);
/// The same in a folder open at `dir_fd`; `dir_path` is for messages.
bool exists_nofollow(int dir_fd, const std::string& dir_path, const std::string& name);

/// How create_dir_safe treats symlinks in the components before the last.
enum class LinksOnTheWay {
  /// Followed, like any path (the caller's own resolution, e.g. at submit,
  /// under the client's FsCredentials).
  kFollow,
  /// Refused: every component is opened with O_NOFOLLOW, so a folder that
  /// was swapped for a symlink anywhere on the path since it was named
  /// cannot redirect the write (delivery, which walks the path again later).
  kRefuse,
};

/// mkdir -p `path` with exactly the permission bits `mode` for the folders
/// it creates (the umask does not apply), as the filesystem credentials in force (run it under the
/// client's FsCredentials); existing folders are kept as they are. The walk
/// goes one component at a time, each relative to the folder just opened.
/// Components before the last are followed or refused as `links` says; the
/// LAST one must always be a real folder: a symlink there is refused (FileError
/// "<path>: is a symbolic link, not a folder"), so the folder written into is
/// the one the client named, not one a symlink swapped in. With kRefuse an
/// earlier symlink is FileError (ELOOP) "<path>: <component> is a symbolic
/// link; results are written only through real folders". Returns the final
/// folder open as open_dir would, for write_file_safe(int, …). FileError
/// naming the path and the fault for everything else (EACCES, ENOTDIR, EROFS,
/// ENOSPC).
UniqueFd create_dir_safe(const std::string& path, mode_t mode = 0755, LinksOnTheWay links = LinksOnTheWay::kFollow);

/// The absolute path of the folder open at `dir_fd`, as the kernel resolved
/// it (readlink of /proc/self/fd/N): every symlink of the path it was opened
/// by is resolved, so walking this path again with LinksOnTheWay::kRefuse
/// reaches the same folder unless someone moved or replaced a component.
/// FileError (naming `what`) when /proc cannot tell or the folder was removed.
std::string resolved_dir_path(int dir_fd, const std::string& what);

}  // namespace zkfarm::files
