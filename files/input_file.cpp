#include "files/input_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "files/file_error.hpp"

namespace zkfarm::files {

namespace {

int64_t ns(const struct timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

// "is a FIFO" etc. for anything that is not a regular file.
const char* kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "is a FIFO";
  if (S_ISCHR(m)) return "is a character device";
  if (S_ISBLK(m)) return "is a block device";
  if (S_ISDIR(m)) return "is a directory";
  if (S_ISSOCK(m)) return "is a socket";
  if (S_ISLNK(m)) return "is a symbolic link";
  return "is not a regular file";
}

[[noreturn]] void refuse(const std::string& path, mode_t m) {
  throw FileError(path, 0, path + ": " + kind_of(m) + ", not a regular file");
}

// The folder's path for messages: what /proc/self/fd shows for it.
std::string dir_name(int dir_fd) {
  char buf[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(dir_fd);
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  if (n <= 0 || size_t(n) >= sizeof buf) return "(folder fd " + std::to_string(dir_fd) + ")";
  return std::string(buf, size_t(n));
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

[[noreturn]] void changed(const std::string& path, const std::string& how) {
  throw FileError(path, 0, path + ": changed while it was read (" + how + "); the copy was removed");
}

}  // namespace

FileIdentity FileIdentity::of(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size, ns(st.st_mtim), ns(st.st_ctim)};
}

FileIdentity FileIdentity::of(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno(path, "stat", errno);
  return of(st);
}

UniqueFd open_regular_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    // open(2) of a Unix socket fails with ENXIO; say what it is.
    struct stat st {};
    if (err == ENXIO && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse(path, st.st_mode);
    throw_errno(path, "open", err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno(path, "stat", errno);
  if (!S_ISREG(st.st_mode)) refuse(path, st.st_mode);
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) throw_errno(path, "clear O_NONBLOCK", errno);
  return fd;
}

CopyResult copy_into(int src_fd, const std::string& src_path, int dir_fd, const std::string& name, mode_t mode,
                     const CopyProgress& progress, TempMethod method, CopyHash hash) {
  struct stat st {};
  if (::fstat(src_fd, &st) != 0) throw_errno(src_path, "stat", errno);
  if (!S_ISREG(st.st_mode)) refuse(src_path, st.st_mode);
  const FileIdentity before = FileIdentity::of(st);
  const uint64_t expected = uint64_t(st.st_size);
  ::posix_fadvise(src_fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // a hint; its failure changes nothing

  TempFile out(dir_fd, dir_name(dir_fd), name, mode, method);
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> md(EVP_MD_CTX_new());
  if (!md || EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) != 1)
    throw FileError(src_path, 0, src_path + ": cannot hash: OpenSSL's SHA-256 is unavailable");

  constexpr size_t kChunk = size_t(1) << 20;
  std::vector<char> buf(kChunk);
  uint64_t total = 0;
  for (;;) {
    // Ask for one byte past the expected end, so growth shows without reading
    // an endlessly growing file to its (never) end.
    const uint64_t want = std::min<uint64_t>(kChunk, expected + 1 - total);
    ssize_t k = ::pread(src_fd, buf.data(), size_t(want), off_t(total));
    if (k < 0) {
      if (errno == EINTR) continue;
      throw_errno(src_path, "read", errno);
    }
    if (k == 0) break;
    total += uint64_t(k);
    if (total > expected) changed(src_path, "it grew past the " + std::to_string(expected) + " bytes it had");
    if (hash == CopyHash::kSha256 && EVP_DigestUpdate(md.get(), buf.data(), size_t(k)) != 1)
      throw FileError(src_path, 0, src_path + ": cannot hash: SHA-256 update failed");
    out.write_all(buf.data(), size_t(k));
    if (progress) progress(total);
  }
  if (total != expected)
    changed(src_path, std::to_string(total) + " bytes read, " + std::to_string(expected) + " expected");
  const FileIdentity after = FileIdentity::of(src_fd, src_path);
  if (after != before) changed(src_path, "its size or times changed");

  CopyResult r;
  if (hash == CopyHash::kSha256) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(md.get(), digest, &len) != 1 || len != 32)
      throw FileError(src_path, 0, src_path + ": cannot hash: SHA-256 final failed");
    static const char* hex = "0123456789abcdef";
    r.sha256_hex.reserve(64);
    for (unsigned i = 0; i < len; ++i) {
      r.sha256_hex += hex[digest[i] >> 4];
      r.sha256_hex += hex[digest[i] & 15];
    }
  }
  out.commit();
  r.bytes = total;
  r.source = before;
  return r;
}

}  // namespace zkfarm::files
