#include "ctl/log_view.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include "ctl/exit_codes.hpp"
#include "client/control_client.hpp"
#include "files/file_error.hpp"
#include "files/input_file.hpp"

namespace zkfarm::ctl {

namespace {

using client::CtlError;

files::UniqueFd open_log(const std::string& path) {
  try {
    return files::open_regular_file(path);  // never a FIFO or a device: never blocks
  } catch (const files::FileError& e) {
    throw CtlError(kExitFailed, std::string("zkfarmd's log: ") + e.what());
  }
}

ssize_t pread_full(int fd, char* buf, size_t n, off_t at) {
  for (;;) {
    const ssize_t k = ::pread(fd, buf, n, at);
    if (k < 0 && errno == EINTR) continue;
    return k;
  }
}

}  // namespace

LineFilter worker_lines(const std::string& id) {
  const std::string own = "[" + id + "] ", said = "worker " + id + ":";
  return [own, said](std::string_view line) {
    return line.find(own) != std::string_view::npos || line.find(said) != std::string_view::npos;
  };
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

std::vector<std::string> last_lines(const std::string& path, size_t n, const LineFilter& keep, uint64_t max_scan) {
  files::UniqueFd fd = open_log(path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw CtlError(kExitFailed, path + ": " + std::strerror(errno));
  std::deque<std::string> found;  // newest first while scanning
  if (n == 0) return {};
  uint64_t end = uint64_t(st.st_size), scanned = 0;
  std::string partial;  // the start of a line whose beginning lies in an earlier chunk
  std::vector<char> buf(64 * 1024);
  auto take = [&](std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!keep || keep(line)) found.push_back(std::move(line));
  };
  bool first_chunk = true;
  while (end > 0 && found.size() < n && scanned < max_scan) {
    const size_t len = size_t(std::min<uint64_t>(buf.size(), end));
    const off_t at = off_t(end - len);
    const ssize_t k = pread_full(fd.get(), buf.data(), len, at);
    if (k < 0) throw CtlError(kExitFailed, path + ": cannot read: " + std::strerror(errno));
    if (size_t(k) != len) break;  // truncated meanwhile: what was read is what there is
    std::string chunk(buf.data(), len);
    chunk += partial;
    // A last line without its newline yet is a line too; the chunk's first
    // piece may be the end of a line that begins further back (kept in partial).
    if (first_chunk && !chunk.empty() && chunk.back() == '\n') chunk.pop_back();
    first_chunk = false;
    size_t stop = chunk.size();
    while (found.size() < n && stop > 0) {
      const size_t nl = chunk.rfind('\n', stop - 1);
      if (nl == std::string::npos) break;
      take(chunk.substr(nl + 1, stop - nl - 1));
      stop = nl;
    }
    partial = chunk.substr(0, stop);
    end = uint64_t(at);
    scanned += len;
  }
  if (end == 0 && found.size() < n && !partial.empty()) take(partial);
  return {found.rbegin(), found.rend()};
}

void print_all(const std::string& path, std::ostream& out) {
  files::UniqueFd fd = open_log(path);
  std::vector<char> buf(64 * 1024);
  for (;;) {
    const ssize_t k = ::read(fd.get(), buf.data(), buf.size());
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) throw CtlError(kExitFailed, path + ": cannot read: " + std::strerror(errno));
    if (k == 0) break;
    out.write(buf.data(), k);
  }
  out.flush();
}

void follow(const std::string& path, uint64_t start_at, std::ostream& out, int poll_ms) {
  files::UniqueFd fd = open_log(path);
  uint64_t offset = start_at;
  std::vector<char> buf(64 * 1024);
  auto drain = [&] {
    for (;;) {
      const ssize_t k = pread_full(fd.get(), buf.data(), buf.size(), off_t(offset));
      if (k <= 0) break;
      out.write(buf.data(), k);
      offset += uint64_t(k);
    }
    out.flush();
  };
  for (;;) {
    drain();
    ::poll(nullptr, 0, poll_ms);
    struct stat open_st {}, path_st {};
    if (::fstat(fd.get(), &open_st) == 0 && uint64_t(open_st.st_size) < offset) offset = 0;  // truncated in place
    const bool renamed = ::stat(path.c_str(), &path_st) == 0 &&
                         (path_st.st_ino != open_st.st_ino || path_st.st_dev != open_st.st_dev);
    if (!renamed) continue;
    // Rotated: what the old file still got, then the new one from its start
    // (a name that is briefly a FIFO or gone is tried again next time).
    drain();
    try {
      fd = files::open_regular_file(path);
      offset = 0;
    } catch (const files::FileError&) {
    }
  }
}

}  // namespace zkfarm::ctl
