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

// Writes slot `slot` (0 or 1) holding `seq`, whole; "" or the fault.
std::string put_slot(int fd, uint64_t slot, uint64_t seq) {
  uint8_t s[kSlotBytes] = {};
  std::memcpy(s, kMarkMagic, sizeof kMarkMagic);
  put_le64(s + 8, seq);
  put_le64(s + 16, fnv1a64(s, 16));
  for (size_t done = 0; done < sizeof s;) {
    const ssize_t n = ::pwrite(fd, s + done, sizeof s - done, off_t(slot * kSlotBytes + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::strerror(errno);
    done += size_t(n);
  }
  return {};
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw JournalError(path + ": " + what + ": " + std::strerror(err));
}

// What an operator does about a mark zkfarmd cannot use at start.
std::string way_out(const std::string& path) {
  const std::string suffix = "-acked";
  const bool named_for_db = path.size() > suffix.size() && path.ends_with(suffix);
  return "; zkfarmd reads it only as a regular file of its own. Stop zkfarmd, keep a copy of the journal (cp -a " +
         (named_for_db ? path.substr(0, path.size() - suffix.size()) : path) + "* a safe place), and move it aside (mv " + path + " " + path +
         ".lost): zkfarmd then starts with what the journal holds and a new mark";
}

}  // namespace

AckedMarkRead read_acked_mark(const std::string& path) {
  AckedMarkRead r;
  files::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT) return r;
    const int e = errno;
    throw JournalError(path + ": cannot open the acknowledged mark (" + std::strerror(e) +
                       (e == ELOOP ? ": a symbolic link" : "") + ")" + way_out(path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail(path, "cannot stat the acknowledged mark", errno);
  if (!S_ISREG(st.st_mode))
    throw JournalError(path + ": the acknowledged mark is not a regular file (" +
                       (S_ISDIR(st.st_mode) ? "a folder" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket") +
                       ")" + way_out(path));
  r.exists = true;
  uint8_t buf[2 * kSlotBytes] = {};
  size_t got = 0;
  while (got < sizeof buf) {
    const ssize_t n = ::pread(fd.get(), buf + got, sizeof buf - got, off_t(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw JournalError(path + ": cannot read the acknowledged mark (" + std::strerror(errno) + ")" + way_out(path));
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

std::string AckedMark::recreate(uint64_t seq) {
  files::UniqueFd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd)
    return path_ + ": the acknowledged mark was removed and cannot be made anew (" + std::strerror(errno) +
           "); remove whatever is at its name";
  fd_ = std::move(fd);
  // Both slots: the new file holds the mark whichever slot a later write tears.
  for (uint64_t slot : {0, 1})
    if (const std::string fault = put_slot(fd_.get(), slot, seq); !fault.empty())
      return path_ + ": cannot write the re-made acknowledged mark: " + fault;
  if (::fsync(fd_.get()) != 0) return path_ + ": cannot sync the re-made acknowledged mark: " + std::strerror(errno);
  const size_t slash = path_.rfind('/');
  files::UniqueFd dir(::open(slash == std::string::npos ? "." : path_.substr(0, slash + 1).c_str(),
                             O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) ::fsync(dir.get());  // the new name itself survives a crash
  notice_ = path_ + ": the acknowledged mark had been removed or replaced while zkfarmd ran; made anew at " +
            std::to_string(seq);
  return {};
}

std::string AckedMark::write(uint64_t seq, bool sync) {
  // Still the file at its name? (deleted: st_nlink 0; renamed or replaced: another inode there)
  struct stat mine {}, named {};
  const bool named_exists = ::lstat(path_.c_str(), &named) == 0;
  const bool ours = named_exists && ::fstat(fd_.get(), &mine) == 0 && mine.st_nlink > 0 &&
                    named.st_dev == mine.st_dev && named.st_ino == mine.st_ino;
  if (!ours) {
    if (named_exists && !S_ISREG(named.st_mode))
      return path_ + ": the acknowledged mark was replaced by something that is not a regular file (a link, a "
                     "FIFO, a folder); remove it: zkfarmd makes the mark anew";
    if (named_exists) ::unlink(path_.c_str());  // another regular file: not ours (zkfarmd is the mark's one writer)
    return recreate(seq);
  }
  if (const std::string fault = put_slot(fd_.get(), seq % 2, seq); !fault.empty())
    return path_ + ": cannot write the acknowledged mark: " + fault;
  if (sync && ::fdatasync(fd_.get()) != 0) return path_ + ": cannot sync the acknowledged mark: " + std::strerror(errno);
  return {};
}

}  // namespace zkfarm::supervisor
