#pragma once
// Fuzz inputs as files, for parsers that take a path (BinFile and the formats
// on it): one anonymous memory file (memfd_create) per process, rewritten for
// each input and opened by the parser as /proc/self/fd/N, so nothing touches
// the disk and the parsers run exactly their file code path. (In fuzzing
// builds BinFile reads the file into a heap copy of its exact size instead of
// mapping it, so AddressSanitizer sees every read past the end: binfile.hpp.)
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace zkfarm::fuzz {

class MemFile {
 public:
  /// A new, empty memory file; NAME shows up in /proc only (for debugging).
  explicit MemFile(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  /// Replaces the file's contents with [data, data+size).
  void write(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
  }
  /// A path that opens this file.
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

/// Where touch() leaves its result, so that the optimiser keeps the reads.
inline volatile uint8_t touch_sink = 0;

/// Reads every byte of SPAN, so that a span that points outside its buffer is
/// reported by AddressSanitizer here rather than not at all.
template <class Span>
inline void touch(const Span& s) {
  uint8_t acc = 0;
  for (auto b : s) acc = static_cast<uint8_t>(acc ^ b);
  touch_sink = acc;
}

}  // namespace zkfarm::fuzz
