#include "supervisor/ledger/wal_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace zkfarm::supervisor {

namespace {

// Offsets and constants of https://www.sqlite.org/fileformat2.html#walformat.
constexpr uint32_t kWalMagic = 0x377f0682;  // | 1: checksums over big-endian words
constexpr uint32_t kFormatVersion = 3007000;
constexpr uint64_t kHeaderBytes = 32;
constexpr uint64_t kFrameHeaderBytes = 24;

uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}
uint32_t le32(const uint8_t* p) {
  return uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | uint32_t(p[0]);
}

// SQLite's WAL checksum (walChecksumBytes): n is a multiple of 8.
struct Checksum {
  uint32_t s0 = 0, s1 = 0;
  void add(const uint8_t* p, size_t n, bool big_endian) {
    for (size_t i = 0; i < n; i += 8) {
      const uint32_t x0 = big_endian ? be32(p + i) : le32(p + i);
      const uint32_t x1 = big_endian ? be32(p + i + 4) : le32(p + i + 4);
      s0 += x0 + s1;
      s1 += x1 + s0;
    }
  }
  bool matches(const uint8_t* stored) const { return be32(stored) == s0 && be32(stored + 4) == s1; }
};

class File {
 public:
  explicit File(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0 && errno != ENOENT) fail("cannot open the WAL");
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  bool exists() const { return fd_ >= 0; }
  uint64_t size() {
    struct stat st{};
    if (::fstat(fd_, &st) != 0) fail("cannot stat the WAL");
    return uint64_t(st.st_size);
  }
  void read(uint8_t* buf, size_t n, uint64_t offset) {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, buf + done, n - done, off_t(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail("cannot read the WAL");
      if (r == 0) {
        errno = 0;
        fail("the WAL shrank while it was read");
      }
      done += size_t(r);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw JournalError(path_ + ": " + what + (errno ? std::string(": ") + std::strerror(errno) : std::string()));
  }
  std::string path_;
  int fd_ = -1;
};

// Why a header fails the checks SQLite's recovery applies (walIndexRecover);
// empty when it passes.
std::string header_fault(const uint8_t* h) {
  const uint32_t magic = be32(h);
  if ((magic & ~1u) != kWalMagic) return "its magic number is not an SQLite WAL's";
  if (be32(h + 4) != kFormatVersion) return "its format version is not 3007000";
  const uint32_t page = be32(h + 8);
  if (page < 512 || page > 65536 || (page & (page - 1)) != 0) return "its page size is not a power of two in 512..65536";
  Checksum c;
  c.add(h, 24, (magic & 1) != 0);
  if (!c.matches(h + 24)) return "its checksum does not match its contents";
  return {};
}

}  // namespace

WalReport check_wal(const std::string& wal_path) {
  WalReport r;
  File f(wal_path);
  if (!f.exists()) return r;
  r.exists = true;
  r.file_bytes = f.size();
  if (r.file_bytes < kHeaderBytes) return r;  // no header, so no frame SQLite could replay

  uint8_t h[kHeaderBytes];
  f.read(h, sizeof h, 0);
  if (const std::string fault = header_fault(h); !fault.empty()) {
    // SQLite syncs a new WAL header before it writes the first frame after it
    // (sqlite3WalFrames, syncHeader), so frames behind a bad header mean the
    // header was damaged, and SQLite would ignore every frame.
    if (r.file_bytes > kHeaderBytes) r.damage = WalDamage{0, 0, fault};
    return r;
  }
  r.big_endian_checksums = (be32(h) & 1) != 0;
  r.page_size = be32(h + 8);
  r.checkpoint_seq = be32(h + 12);
  const uint32_t salt1 = be32(h + 16), salt2 = be32(h + 20);
  Checksum chain;
  chain.add(h, 24, r.big_endian_checksums);

  const uint64_t frame_bytes = kFrameHeaderBytes + r.page_size;
  std::vector<uint8_t> buf(frame_bytes);
  uint64_t offset = kHeaderBytes;
  uint64_t frame = 1;
  for (; offset + frame_bytes <= r.file_bytes; offset += frame_bytes, ++frame) {
    f.read(buf.data(), frame_bytes, offset);
    const uint8_t* fh = buf.data();
    Checksum next = chain;
    next.add(fh, 8, r.big_endian_checksums);
    next.add(fh + kFrameHeaderBytes, r.page_size, r.big_endian_checksums);
    const bool sum_ok = next.matches(fh + 16);
    const bool salts_ok = be32(fh + 8) == salt1 && be32(fh + 12) == salt2;
    if (!salts_ok) {
      // The salts are not covered by the checksum: a frame of an older
      // generation fails the chain, one whose salt bytes were damaged does not.
      if (sum_ok) {
        r.damage = WalDamage{frame, offset, "its salts differ from the header's but its checksum continues the chain "
                                            "(its salt bytes were damaged)"};
        return r;
      }
      break;  // the rest is what an older generation left (the WAL is reused from its start)
    }
    if (!sum_ok) {
      r.damage = WalDamage{frame, offset, "its salts match the header's but its checksum does not"};
      return r;
    }
    if (be32(fh) == 0) {
      r.damage = WalDamage{frame, offset, "its page number is 0"};
      return r;
    }
    chain = next;
    ++r.valid_frames;
    if (be32(fh + 4) != 0) {  // a commit frame: the database's size in pages after the commit
      r.committed_frames = r.valid_frames;
      ++r.commits;
    }
  }
  r.uncommitted_frames = r.valid_frames - r.committed_frames;
  r.leftover_frames = (r.file_bytes - offset) / frame_bytes;
  r.torn_bytes = (r.file_bytes - offset) % frame_bytes;
  return r;
}

}  // namespace zkfarm::supervisor
