#include "supervisor/ledger/acked_mark.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "supervisor/ledger/journal_error.hpp"

namespace zkfarm::supervisor {

namespace {

constexpr char kMarkMagic[8] = {'Z', 'K', 'F', 'A', 'C', 'K', '0', '1'};
constexpr size_t kSlotBytes = 32;

uint64_t fnv1a64(const uint8_t* p, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001B3ull;
  }
  return h;
}

void put_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

uint64_t get_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// The slot's number when its magic and checksum hold.
std::optional<uint64_t> slot_seq(const uint8_t* s) {
  if (std::memcmp(s, kMarkMagic, sizeof kMarkMagic) != 0) return std::nullopt;
  if (get_le64(s + 16) != fnv1a64(s, 16)) return std::nullopt;
  return get_le64(s + 8);
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw JournalError(path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

AckedMarkRead read_acked_mark(const std::string& path) {
  AckedMarkRead r;
  files::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT) return r;
    fail(path, "cannot open the acknowledged mark", errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail(path, "cannot stat the acknowledged mark", errno);
  if (!S_ISREG(st.st_mode)) throw JournalError(path + ": the acknowledged mark is not a regular file");
  r.exists = true;
  uint8_t buf[2 * kSlotBytes] = {};
  size_t got = 0;
  while (got < sizeof buf) {
    const ssize_t n = ::pread(fd.get(), buf + got, sizeof buf - got, off_t(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, "cannot read the acknowledged mark", errno);
    if (n == 0) break;
    got += size_t(n);
  }
  for (size_t slot = 0; slot < 2; ++slot) {
    if (got < (slot + 1) * kSlotBytes) break;
    if (auto s = slot_seq(buf + slot * kSlotBytes); s && (!r.seq || *s > *r.seq)) r.seq = s;
  }
  return r;
}

AckedMark::AckedMark(const std::string& path) : path_(path) {
  fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd_) fail(path, "cannot open the acknowledged mark for writing", errno);
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) fail(path, "cannot stat the acknowledged mark", errno);
  if (!S_ISREG(st.st_mode)) throw JournalError(path + ": the acknowledged mark is not a regular file");
}

std::string AckedMark::write(uint64_t seq) {
  uint8_t s[kSlotBytes] = {};
  std::memcpy(s, kMarkMagic, sizeof kMarkMagic);
  put_le64(s + 8, seq);
  put_le64(s + 16, fnv1a64(s, 16));
  const off_t at = off_t((seq % 2) * kSlotBytes);
  size_t done = 0;
  while (done < sizeof s) {
    const ssize_t n = ::pwrite(fd_.get(), s + done, sizeof s - done, at + off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return path_ + ": cannot write the acknowledged mark: " + std::strerror(errno);
    done += size_t(n);
  }
  if (::fdatasync(fd_.get()) != 0) return path_ + ": cannot sync the acknowledged mark: " + std::strerror(errno);
  return {};
}

}  // namespace zkfarm::supervisor
