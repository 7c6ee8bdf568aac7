#include "shm/arena.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cstring>
#include <filesystem>
#include <functional>

namespace zkfarm::shm {

namespace bip = boost::interprocess;

namespace {

constexpr char kMagic[8] = {'Z', 'K', 'F', 'A', 'R', 'E', 'N', 'A'};

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

}  // namespace

struct Arena::Impl {
  bip::shared_memory_object shm;
  bip::mapped_region region;
};

std::string Arena::name_for(const std::string& state_dir) {
  std::string abs = std::filesystem::weakly_canonical(std::filesystem::absolute(state_dir)).string();
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();  // "/x/" and "/x" are one state dir
  char buf[32];
  std::snprintf(buf, sizeof buf, "zkfarm-%016llx", static_cast<unsigned long long>(fnv1a(abs)));
  return buf;
}

Arena Arena::create(const std::string& name, uint64_t slot_bytes) {
  slot_bytes = (slot_bytes + 4095) & ~uint64_t(4095);
  Arena a;
  a.impl_ = std::make_unique<Impl>();
  a.name_ = name;
  bool created = false;
  try {
    bip::permissions perm(0600);
    a.impl_->shm = bip::shared_memory_object(bip::create_only, name.c_str(), bip::read_write, perm);
    created = true;
    a.impl_->shm.truncate(bip::offset_t(slot_bytes + kArenaHeaderBytes));
    // Reserve the pages now: a /dev/shm too small for the arena is an error at
    // start, not a SIGBUS in a worker later.
    int fd = ::shm_open(("/" + name).c_str(), O_RDWR, 0);
    int err = fd < 0 ? errno : ::posix_fallocate(fd, 0, off_t(slot_bytes + kArenaHeaderBytes));
    if (fd >= 0) ::close(fd);
    if (err != 0) {
      bip::shared_memory_object::remove(name.c_str());
      throw ArenaError("cannot reserve " + std::to_string(slot_bytes + kArenaHeaderBytes) + " bytes in /dev/shm for " +
                       name + ": " + std::strerror(err) + " (lower arena_mib or enlarge /dev/shm)");
    }
    a.impl_->region = bip::mapped_region(a.impl_->shm, bip::read_write);
  } catch (const bip::interprocess_exception& e) {
    if (created) bip::shared_memory_object::remove(name.c_str());  // never someone else's segment
    throw ArenaError("cannot create shared memory /dev/shm/" + name + " of " +
                     std::to_string(slot_bytes + kArenaHeaderBytes) + " bytes: " + e.what());
  }
  a.base_ = static_cast<uint8_t*>(a.impl_->region.get_address());
  a.capacity_ = slot_bytes;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.layout_version = kArenaLayoutVersion;
  h.header_bytes = uint32_t(kArenaHeaderBytes);
  h.total_bytes = slot_bytes + kArenaHeaderBytes;
  h.creator_pid = getpid();
  std::memcpy(a.base_, &h, sizeof h);
  return a;
}

Arena Arena::attach(const std::string& name) {
  Arena a;
  a.impl_ = std::make_unique<Impl>();
  a.name_ = name;
  try {
    a.impl_->shm = bip::shared_memory_object(bip::open_only, name.c_str(), bip::read_write);
    a.impl_->region = bip::mapped_region(a.impl_->shm, bip::read_write);
  } catch (const bip::interprocess_exception& e) {
    throw ArenaError("cannot attach shared memory /dev/shm/" + name + ": " + e.what());
  }
  a.base_ = static_cast<uint8_t*>(a.impl_->region.get_address());
  const uint64_t size = a.impl_->region.get_size();
  Header h{};
  if (size < kArenaHeaderBytes) throw ArenaError("/dev/shm/" + name + ": too small for an arena header");
  std::memcpy(&h, a.base_, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) throw ArenaError("/dev/shm/" + name + ": not a zkfarm arena");
  if (h.layout_version != kArenaLayoutVersion) {
    throw ArenaError("/dev/shm/" + name + ": arena layout version " + std::to_string(h.layout_version) +
                     ", this binary uses " + std::to_string(kArenaLayoutVersion));
  }
  if (h.header_bytes != kArenaHeaderBytes || h.total_bytes > size) {
    throw ArenaError("/dev/shm/" + name + ": corrupt arena header");
  }
  a.capacity_ = h.total_bytes - kArenaHeaderBytes;
  return a;
}

bool Arena::remove(const std::string& name) { return bip::shared_memory_object::remove(name.c_str()); }

Arena::Arena(Arena&&) noexcept = default;
Arena& Arena::operator=(Arena&&) noexcept = default;
Arena::~Arena() = default;

uint8_t* Arena::at(uint64_t offset, uint64_t size) const {
  if (offset > capacity_ || size > capacity_ - offset) {
    throw ArenaError("range [" + std::to_string(offset) + ", +" + std::to_string(size) +
                     ") lies outside the arena's " + std::to_string(capacity_) + " bytes");
  }
  return slots() + offset;
}

}  // namespace zkfarm::shm
