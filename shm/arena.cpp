#include "shm/arena.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

// Older glibc headers lack these (Linux 6.3 and 5.1 values); the kernel refuses
// what it does not know with EINVAL, and create_memfd falls back.
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

namespace zkfarm::shm {

namespace {

constexpr char kMagic[8] = {'Z', 'K', 'F', 'A', 'R', 'E', 'N', 'A'};
constexpr int kRequiredSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

struct Header {
  char magic[8];
  uint32_t layout_version;
  uint32_t header_bytes;
  uint64_t total_bytes;
  int64_t creator_pid;
};
static_assert(sizeof(Header) <= kArenaHeaderBytes);

// FNV-1a, 64 bits: a stable name across builds and machines (std::hash is not).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string state_dir_hash(const std::string& state_dir) {
  std::string abs = std::filesystem::weakly_canonical(std::filesystem::absolute(state_dir)).string();
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();  // "/x/" and "/x" are one state dir
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(abs)));
  return buf;
}

std::string errno_text(int err) { return std::strerror(err); }

// The first number of the line of /proc/meminfo starting with `key`, in bytes.
std::optional<uint64_t> meminfo_bytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    uint64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return std::nullopt;
}

// memory.max of this process's cgroup (v2); nullopt when unlimited or unknown.
std::optional<uint64_t> cgroup_memory_max() {
  std::ifstream cg("/proc/self/cgroup");
  std::string line;
  while (std::getline(cg, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::ifstream max("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
    std::string v;
    if (!(max >> v) || v == "max") return std::nullopt;
    try {
      return std::stoull(v);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Why `bytes` of shmem cannot be had, or "" when they may be. posix_fallocate
// on a memfd is bounded by no tmpfs size: asked for more than the machine or
// the cgroup has, it takes pages until the OOM killer ends someone. So an arena
// that cannot fit is refused before any page is taken.
std::string memory_shortfall(uint64_t bytes) {
  if (auto max = cgroup_memory_max(); max && bytes > *max) {
    return "the memory cgroup allows " + std::to_string(*max) + " bytes in all (memory.max)";
  }
  if (auto avail = meminfo_bytes("MemAvailable"); avail && bytes > *avail) {
    return "only " + std::to_string(*avail) + " bytes are available (MemAvailable in /proc/meminfo)";
  }
  return "";
}

// The memfd's label from /proc/self/fd/N ("/memfd:LABEL (deleted)"), or "".
std::string memfd_label(int fd) {
  char buf[512];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string target(buf, size_t(n));
  const std::string prefix = "/memfd:", suffix = " (deleted)";
  if (target.rfind(prefix, 0) != 0) return "";
  target = target.substr(prefix.size());
  if (target.size() >= suffix.size() && target.compare(target.size() - suffix.size(), suffix.size(), suffix) == 0)
    target.resize(target.size() - suffix.size());
  return target;
}

void write_header(uint8_t* base, uint64_t total_bytes) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.layout_version = kArenaLayoutVersion;
  h.header_bytes = uint32_t(kArenaHeaderBytes);
  h.total_bytes = total_bytes;
  h.creator_pid = getpid();
  std::memcpy(base, &h, sizeof h);
}

// Checks the header of a mapping of `size` bytes; returns the slot space's
// bytes. `what` names the segment in the errors.
uint64_t check_header(const uint8_t* base, uint64_t size, const std::string& what, bool exact_size) {
  Header h{};
  if (size < kArenaHeaderBytes) throw ArenaError(what + ": too small for an arena header");
  std::memcpy(&h, base, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) throw ArenaError(what + ": not a zkfarm arena");
  if (h.layout_version != kArenaLayoutVersion) {
    throw ArenaError(what + ": arena layout version " + std::to_string(h.layout_version) + ", this binary uses " +
                     std::to_string(kArenaLayoutVersion));
  }
  if (h.header_bytes != kArenaHeaderBytes || h.total_bytes < kArenaHeaderBytes || h.total_bytes > size ||
      (exact_size && h.total_bytes != size)) {
    throw ArenaError(what + ": corrupt arena header (" + std::to_string(h.total_bytes) + " bytes in the header, " +
                     std::to_string(size) + " in the segment)");
  }
  return h.total_bytes - kArenaHeaderBytes;
}

}  // namespace

// The mapping and, for a memfd arena's creator, the descriptor; both released
// with the Arena.
struct Arena::Impl {
  void* base = MAP_FAILED;
  size_t bytes = 0;
  int fd = -1;
  bool memfd = false;
  ~Impl() {
    if (base != MAP_FAILED) ::munmap(base, bytes);
    if (fd >= 0) ::close(fd);
  }
};

std::string Arena::name_for(const std::string& state_dir) { return "zkfarm-" + state_dir_hash(state_dir); }

std::string Arena::memfd_name_for(const std::string& state_dir) { return "zkfarm-arena-" + state_dir_hash(state_dir); }

Arena Arena::create(const std::string& name, uint64_t slot_bytes) {
  slot_bytes = (slot_bytes + 4095) & ~uint64_t(4095);
  const uint64_t total = slot_bytes + kArenaHeaderBytes;
  const std::string what = "/dev/shm/" + name;
  Arena a;
  a.impl_ = std::make_unique<Impl>();
  a.name_ = name;
  int fd = ::shm_open(("/" + name).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw ArenaError("cannot create shared memory " + what + " of " + std::to_string(total) + " bytes: " +
                     errno_text(errno));
  }
  // From here on the segment is ours: any failure unlinks it (never someone else's).
  auto fail = [&](const std::string& msg) {
    ::close(fd);
    ::shm_unlink(("/" + name).c_str());
    throw ArenaError(msg);
  };
  if (::fchmod(fd, 0600) != 0) fail("cannot make " + what + " private (mode 0600): " + errno_text(errno));
  if (::ftruncate(fd, off_t(total)) != 0) {
    fail("cannot create shared memory " + what + " of " + std::to_string(total) + " bytes: " + errno_text(errno));
  }
  // Reserve the pages now: a /dev/shm too small for the arena is an error at
  // start, not a SIGBUS in a worker later.
  if (int err = ::posix_fallocate(fd, 0, off_t(total)); err != 0) {
    fail("cannot reserve " + std::to_string(total) + " bytes in /dev/shm for " + name + ": " + errno_text(err) +
         " (lower arena_mib or enlarge /dev/shm)");
  }
  a.impl_->base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (a.impl_->base == MAP_FAILED) fail("cannot map shared memory " + what + ": " + errno_text(errno));
  a.impl_->bytes = total;
  ::close(fd);  // the mapping keeps the segment; its name is how others attach
  a.base_ = static_cast<uint8_t*>(a.impl_->base);
  a.capacity_ = slot_bytes;
  write_header(a.base_, total);
  return a;
}

Arena Arena::create_memfd(const std::string& label, uint64_t slot_bytes) {
  slot_bytes = (slot_bytes + 4095) & ~uint64_t(4095);
  const uint64_t total = slot_bytes + kArenaHeaderBytes;
  const std::string what = "the arena memfd:" + label;
  Arena a;
  a.impl_ = std::make_unique<Impl>();
  a.impl_->memfd = true;
  a.name_ = label;
  if (std::string why = memory_shortfall(total); !why.empty()) {
    throw ArenaError("cannot reserve " + std::to_string(total) + " bytes for " + what + ": " + why +
                     " (lower arena_mib)");
  }
  // MFD_NOEXEC_SEAL (Linux 6.3): nobody can ever make the segment executable,
  // and kernels with vm.memfd_noexec = 2 refuse a memfd without it.
  int fd = ::memfd_create(label.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
  if (fd < 0 && errno == EINVAL) fd = ::memfd_create(label.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) throw ArenaError("cannot create " + what + " (memfd_create): " + errno_text(errno));
  a.impl_->fd = fd;  // closed by ~Impl on every error below: the kernel frees what was reserved
  if (::ftruncate(fd, off_t(total)) != 0) {
    throw ArenaError("cannot size " + what + " to " + std::to_string(total) + " bytes: " + errno_text(errno));
  }
  // Every page now: a machine (or a memory cgroup) without room is an error at
  // start, not a SIGBUS in a worker later.
  if (int err = ::posix_fallocate(fd, 0, off_t(total)); err != 0) {
    throw ArenaError("cannot reserve " + std::to_string(total) + " bytes for " + what + ": " + errno_text(err) +
                     " (lower arena_mib or give zkfarmd more memory)");
  }
  a.impl_->base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (a.impl_->base == MAP_FAILED) throw ArenaError("cannot map " + what + ": " + errno_text(errno));
  a.impl_->bytes = total;
  a.base_ = static_cast<uint8_t*>(a.impl_->base);
  a.capacity_ = slot_bytes;
  write_header(a.base_, total);
  // The size is final: a worker's mapping can never lose pages under it (a
  // shrink would SIGBUS it), and no one can lift the seals again.
  if (::fcntl(fd, F_ADD_SEALS, kRequiredSeals) != 0) {
    throw ArenaError("cannot seal " + what + ": " + errno_text(errno));
  }
  return a;
}

Arena Arena::attach(const std::string& spec) {
  if (spec.rfind("fd:", 0) == 0) {
    const std::string digits = spec.substr(3);
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) {
      throw ArenaError("arena '" + spec + "': not fd:N with a descriptor number N");
    }
    return attach_fd(std::stoi(digits));
  }
  const std::string what = "/dev/shm/" + spec;
  Arena a;
  a.impl_ = std::make_unique<Impl>();
  a.name_ = spec;
  int fd = ::shm_open(("/" + spec).c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) throw ArenaError("cannot attach shared memory " + what + ": " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw ArenaError("cannot attach shared memory " + what + ": " + errno_text(err));
  }
  if (st.st_size < off_t(kArenaHeaderBytes)) {
    ::close(fd);
    throw ArenaError(what + ": too small for an arena header");
  }
  a.impl_->base = ::mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);
  if (a.impl_->base == MAP_FAILED) throw ArenaError("cannot attach shared memory " + what + ": " + errno_text(err));
  a.impl_->bytes = size_t(st.st_size);
  a.base_ = static_cast<uint8_t*>(a.impl_->base);
  a.capacity_ = check_header(a.base_, a.impl_->bytes, what, /*exact_size=*/false);
  return a;
}

Arena Arena::attach_fd(int fd) {
  // Closed on every way out: the mapping is all a worker keeps.
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{fd};
  std::string what = "arena fd:" + std::to_string(fd);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    closer.fd = -1;  // nothing to close (and never someone else's number)
    throw ArenaError(what + ": not an open descriptor (" + errno_text(fd < 0 ? EBADF : errno) +
                     "); zkfarmd passes the arena to the workers it starts");
  }
  const std::string label = memfd_label(fd);
  if (!label.empty()) what += " (memfd:" + label + ")";
  if (!S_ISREG(st.st_mode)) throw ArenaError(what + ": not a memfd (not a regular file)");
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0) throw ArenaError(what + ": not a sealed memfd (F_GET_SEALS: " + errno_text(errno) + ")");
  if ((seals & kRequiredSeals) != kRequiredSeals) {
    throw ArenaError(what + ": missing seals (needs F_SEAL_SHRINK, F_SEAL_GROW and F_SEAL_SEAL, has 0x" + [&] {
      char b[16];
      std::snprintf(b, sizeof b, "%x", unsigned(seals));
      return std::string(b);
    }() + "): its size could change under the mapping");
  }
  const uint64_t size = uint64_t(st.st_size);
  if (size < kArenaHeaderBytes || size % 4096 != 0) {
    throw ArenaError(what + ": wrong size (" + std::to_string(size) +
                     " bytes; an arena is a header page and whole slot pages)");
  }
  Arena a;
  a.impl_ = std::make_unique<Impl>();
  a.impl_->memfd = true;
  a.name_ = label.empty() ? "fd:" + std::to_string(fd) : label;
  a.impl_->base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (a.impl_->base == MAP_FAILED) throw ArenaError("cannot map " + what + ": " + errno_text(errno));
  a.impl_->bytes = size;
  a.base_ = static_cast<uint8_t*>(a.impl_->base);
  a.capacity_ = check_header(a.base_, size, what, /*exact_size=*/true);
  return a;
}

bool Arena::remove(const std::string& name) { return ::shm_unlink(("/" + name).c_str()) == 0; }

Arena::Arena(Arena&&) noexcept = default;
Arena& Arena::operator=(Arena&&) noexcept = default;
Arena::~Arena() = default;

const char* Arena::kind() const { return impl_ && impl_->memfd ? "memfd" : "posix"; }

int Arena::fd() const { return impl_ ? impl_->fd : -1; }

uint8_t* Arena::at(uint64_t offset, uint64_t size) const {
  if (offset > capacity_ || size > capacity_ - offset) {
    throw ArenaError("range [" + std::to_string(offset) + ", +" + std::to_string(size) +
                     ") lies outside the arena's " + std::to_string(capacity_) + " bytes");
  }
  return slots() + offset;
}

}  // namespace zkfarm::shm
