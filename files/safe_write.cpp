#include "files/safe_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "files/file_error.hpp"

namespace zkfarm::files {

namespace {

// Opens `name` under `at` as a folder, readable if we may read it, else O_PATH
// (enough for the *at calls and for syncfs through the file written there).
int open_dir_at(int at, const char* name, int extra_flags) {
  int fd = ::openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | extra_flags);
  if (fd < 0 && errno == EACCES) fd = ::openat(at, name, O_PATH | O_DIRECTORY | O_CLOEXEC | extra_flags);
  return fd;
}

}  // namespace

UniqueFd open_dir(const std::string& dir) {
  UniqueFd fd(open_dir_at(AT_FDCWD, dir.empty() ? "." : dir.c_str(), 0));
  if (!fd) throw_errno(dir, "open the folder", errno);
  return fd;
}

void write_file_safe(int dir_fd, const std::string& dir_path, const std::string& name, std::string_view content,
                     mode_t mode, TempMethod method) {
  TempFile out(dir_fd, dir_path, name, mode, method);
  out.write_all(content.data(), content.size());
  out.commit();
}

void write_file_safe(const std::string& dir, const std::string& name, std::string_view content, mode_t mode,
                     TempMethod method) {
  UniqueFd fd(open_dir_at(AT_FDCWD, dir.empty() ? "." : dir.c_str(), 0));
  if (!fd) throw_errno(join_path(dir, name), "write (open its folder)", errno);
  write_file_safe(fd.get(), dir, name, content, mode, method);
}

bool exists_nofollow(int dir_fd, const std::string& dir_path, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return true;
  if (errno == ENOENT) return false;
  throw_errno(join_path(dir_path, name), "stat", errno);
}

bool exists_nofollow(const std::string& dir, const std::string& name) {
  UniqueFd fd(::open(dir.empty() ? "." : dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return false;
    throw_errno(dir, "open the folder", errno);
  }
  return exists_nofollow(fd.get(), dir, name);
}

UniqueFd create_dir_safe(const std::string& path, mode_t mode, LinksOnTheWay links) {
  if (path.empty()) throw FileError(path, EINVAL, "(empty path): cannot create a folder");
  // Walk from "/" or the working folder, one component at a time, holding the
  // parent open so each step is relative to the folder just checked.
  UniqueFd cur(::open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur) throw_errno(path, "create the folder (open its start)", errno);
  size_t pos = 0;
  for (;;) {
    while (pos < path.size() && path[pos] == '/') ++pos;
    size_t end = path.find('/', pos);
    if (end == std::string::npos) end = path.size();
    const std::string comp = path.substr(pos, end - pos);
    size_t next = end;
    while (next < path.size() && path[next] == '/') ++next;
    const bool last = next >= path.size();
    if (comp.empty()) return open_dir(path);  // the path was "/" (or only slashes)
    const std::string so_far = path.substr(0, end);

    if (::mkdirat(cur.get(), comp.c_str(), mode) == 0) {
      // Exactly `mode`, whatever the umask (zkfarmd's is 077), through a
      // descriptor: fchmodat would follow a link swapped in meanwhile.
      UniqueFd made(::openat(cur.get(), comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!made) throw_errno(so_far, "open the folder just created", errno);
      if (::fchmod(made.get(), mode) != 0) throw_errno(so_far, "set the folder's mode", errno);
    } else if (errno != EEXIST) {
      throw_errno(so_far, "create the folder", errno);
    }
    if (!last) {
      const int nofollow = links == LinksOnTheWay::kRefuse ? O_NOFOLLOW : 0;
      UniqueFd sub(::openat(cur.get(), comp.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC | nofollow));
      if (!sub) {
        const int err = errno;
        struct stat st {};
        // O_PATH|O_NOFOLLOW on a symlink opens the link itself, which
        // O_DIRECTORY then refuses with ENOTDIR: tell the two apart.
        if (nofollow && ::fstatat(cur.get(), comp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
          throw FileError(path, ELOOP, path + ": " + so_far + " is a symbolic link; results are written only through "
                                                                "real folders");
        throw_errno(so_far, "create the folder (enter it)", err);
      }
      cur = std::move(sub);
      pos = next;
      continue;
    }
    UniqueFd fin(open_dir_at(cur.get(), comp.c_str(), O_NOFOLLOW));
    if (fin) return fin;
    const int err = errno;
    struct stat st {};
    if (::fstatat(cur.get(), comp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(st.st_mode)) throw FileError(path, ELOOP, path + ": is a symbolic link, not a folder");
      if (!S_ISDIR(st.st_mode)) throw FileError(path, ENOTDIR, path + ": exists and is not a folder");
    }
    throw_errno(path, "open the folder", err);
  }
}

std::string resolved_dir_path(int dir_fd, const std::string& what) {
  const std::string link = "/proc/self/fd/" + std::to_string(dir_fd);
  std::string buf(4096, '\0');
  const ssize_t n = ::readlink(link.c_str(), buf.data(), buf.size());
  if (n < 0) throw_errno(what, "resolve the folder's path (/proc/self/fd)", errno);
  if (size_t(n) >= buf.size()) throw FileError(what, ENAMETOOLONG, what + ": its resolved path is too long");
  buf.resize(size_t(n));
  // The kernel marks a removed folder " (deleted)"; anything but an absolute
  // path (a folder outside this mount namespace's root) is no path to walk.
  static const std::string kDeleted = " (deleted)";
  if (buf.empty() || buf[0] != '/' ||
      (buf.size() >= kDeleted.size() && buf.compare(buf.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0))
    throw FileError(what, ENOENT, what + ": the folder was removed or is not reachable by a path");
  return buf;
}

}  // namespace zkfarm::files
