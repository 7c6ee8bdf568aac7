// The memfd arena (shm/arena.hpp): created sealed and close-on-exec, attached
// from a descriptor with every check a worker relies on (an open descriptor, a
// memfd, the seals, the size, the header), and refused with a message naming
// the descriptor and the fault.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <string>

#include "shm/arena.hpp"

namespace zkfarm {
namespace {

// The text of `f`'s ArenaError, or "" when it throws none.
std::string arena_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const shm::ArenaError& e) {
    return e.what();
  }
  return "";
}

bool fd_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

// A memfd of `bytes` with the arena header zkfarmd writes (magic, layout
// version, header bytes, total bytes), then `seals` added; `edit` may spoil
// the header first. Returns the descriptor.
int fake_arena(uint64_t bytes, int seals, const std::function<void(uint8_t*)>& edit = {}) {
  int fd = ::memfd_create("zkfarm-arena-fake", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::ftruncate(fd, off_t(bytes)), 0);
  if (bytes >= shm::kArenaHeaderBytes) {
    auto* p = static_cast<uint8_t*>(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    EXPECT_NE(p, MAP_FAILED);
    std::memcpy(p, "ZKFARENA", 8);
    const uint32_t version = shm::kArenaLayoutVersion, header = uint32_t(shm::kArenaHeaderBytes);
    std::memcpy(p + 8, &version, 4);
    std::memcpy(p + 12, &header, 4);
    std::memcpy(p + 16, &bytes, 8);
    if (edit) edit(p);
    ::munmap(p, bytes);
  }
  if (seals) EXPECT_EQ(::fcntl(fd, F_ADD_SEALS, seals), 0);
  return fd;
}

constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

bool maps_contain(const std::string& needle) {
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line))
    if (line.find(needle) != std::string::npos) return true;
  return false;
}

TEST(ArenaFd, CreatedSealedCloseOnExecAndAttachedFromADescriptor) {
  const std::string label = "zkfarm-arena-test-" + std::to_string(getpid());
  {
    shm::Arena a = shm::Arena::create_memfd(label, 10000);
    EXPECT_EQ(a.capacity(), 12288u);
    EXPECT_STREQ(a.kind(), "memfd");
    EXPECT_EQ(a.name(), label);
    ASSERT_GE(a.fd(), 0);
    EXPECT_TRUE(::fcntl(a.fd(), F_GETFD) & FD_CLOEXEC) << "a worker gets it only through spawn_worker's dup2";
    EXPECT_EQ(::fcntl(a.fd(), F_GET_SEALS) & kSeals, kSeals);
    EXPECT_NE(::ftruncate(a.fd(), 4096), 0) << "sealed: cannot shrink under a mapping";
    EXPECT_NE(::ftruncate(a.fd(), 1 << 20), 0) << "sealed: cannot grow";
    EXPECT_TRUE(maps_contain("/memfd:" + label));
    a.at(0, 8)[0] = 42;

    // A worker's way: a copy of the descriptor, attached by "fd:N", closed once mapped.
    const int copy = ::dup(a.fd());
    shm::Arena b = shm::Arena::attach("fd:" + std::to_string(copy));
    EXPECT_FALSE(fd_open(copy)) << "attach_fd closes the descriptor it was given";
    EXPECT_EQ(b.fd(), -1);
    EXPECT_STREQ(b.kind(), "memfd");
    EXPECT_EQ(b.name(), label) << "the label, read from /proc/self/fd";
    EXPECT_EQ(b.capacity(), a.capacity());
    EXPECT_EQ(b.at(0, 8)[0], 42);
    b.at(12288 - 8, 8)[7] = 7;
    EXPECT_EQ(a.at(12288 - 8, 8)[7], 7) << "one segment, shared";
    EXPECT_THROW(b.at(12288 - 4, 8), shm::ArenaError);
    // Nothing in /dev/shm: the segment has no name to open.
    EXPECT_FALSE(std::ifstream("/dev/shm/" + label).good());
    EXPECT_FALSE(shm::Arena::remove(label));
  }
  EXPECT_FALSE(maps_contain("/memfd:" + label)) << "unmapped with the last Arena";
}

TEST(ArenaFd, MemfdNameFollowsTheStateDirLikeTheSegmentName) {
  const std::string seg = shm::Arena::name_for("/var/lib/zkfarm");
  const std::string mem = shm::Arena::memfd_name_for("/var/lib/zkfarm/");
  EXPECT_EQ(mem, "zkfarm-arena-" + seg.substr(std::strlen("zkfarm-")));
  EXPECT_NE(mem, shm::Arena::memfd_name_for("/var/lib/zkfarm2"));
}

TEST(ArenaFd, BadDescriptorsAreRefused) {
  EXPECT_NE(arena_error([] { shm::Arena::attach_fd(-1); }).find("arena fd:-1: not an open descriptor"),
            std::string::npos);
  // A number nothing is open at.
  int unused = ::dup(0);
  ASSERT_GE(unused, 0);
  ::close(unused);
  std::string err = arena_error([&] { shm::Arena::attach("fd:" + std::to_string(unused)); });
  EXPECT_NE(err.find("arena fd:" + std::to_string(unused) + ": not an open descriptor"), std::string::npos) << err;
  for (const char* spec : {"fd:", "fd:x", "fd:-3", "fd:1234567890", "fd:3 "}) {
    err = arena_error([&] { shm::Arena::attach(spec); });
    EXPECT_NE(err.find("not fd:N"), std::string::npos) << spec << ": " << err;
  }
  // Not a regular file; a regular file that is no memfd (no seals to read).
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  err = arena_error([&] { shm::Arena::attach_fd(null); });
  EXPECT_NE(err.find("not a memfd"), std::string::npos) << err;
  EXPECT_FALSE(fd_open(null)) << "closed on failure too";
  char path[] = "/tmp/zkfarm-arena-fd-XXXXXX";
  int file = ::mkstemp(path);
  ASSERT_GE(file, 0);
  ::unlink(path);
  ASSERT_EQ(::ftruncate(file, 8192), 0);
  err = arena_error([&] { shm::Arena::attach_fd(file); });
  EXPECT_NE(err.find("not a sealed memfd"), std::string::npos) << err;
}

TEST(ArenaFd, MissingSealsAreRefused) {
  for (int seals : {0, F_SEAL_SHRINK | F_SEAL_GROW, F_SEAL_GROW | F_SEAL_SEAL, F_SEAL_SHRINK | F_SEAL_SEAL}) {
    int fd = fake_arena(8192, seals);
    std::string err = arena_error([&] { shm::Arena::attach_fd(fd); });
    EXPECT_NE(err.find("arena fd:" + std::to_string(fd) + " (memfd:zkfarm-arena-fake): missing seals"),
              std::string::npos)
        << err;
    EXPECT_FALSE(fd_open(fd));
  }
  // A memfd made without MFD_ALLOW_SEALING reports only F_SEAL_SEAL.
  int fd = ::memfd_create("zkfarm-arena-unsealable", MFD_CLOEXEC);
  ASSERT_EQ(::ftruncate(fd, 8192), 0);
  EXPECT_NE(arena_error([&] { shm::Arena::attach_fd(fd); }).find("missing seals"), std::string::npos);
  // All three: accepted (create_memfd's, with F_SEAL_EXEC besides, are in the first test).
  fd = fake_arena(8192, kSeals);
  shm::Arena a = shm::Arena::attach_fd(fd);
  EXPECT_EQ(a.capacity(), 4096u);
}

TEST(ArenaFd, WrongSizesAreRefused) {
  for (uint64_t bytes : {uint64_t(0), uint64_t(100), uint64_t(4096 + 100)}) {
    int fd = fake_arena(bytes, kSeals);
    std::string err = arena_error([&] { shm::Arena::attach_fd(fd); });
    EXPECT_NE(err.find("wrong size (" + std::to_string(bytes) + " bytes"), std::string::npos) << err;
  }
  // The header's size must be the segment's, exactly.
  int fd = fake_arena(8192, kSeals, [](uint8_t* p) {
    const uint64_t total = 16384;
    std::memcpy(p + 16, &total, 8);
  });
  std::string err = arena_error([&] { shm::Arena::attach_fd(fd); });
  EXPECT_NE(err.find("corrupt arena header (16384 bytes in the header, 8192 in the segment)"), std::string::npos)
      << err;
  fd = fake_arena(16384, kSeals, [](uint8_t* p) {
    const uint64_t total = 8192;
    std::memcpy(p + 16, &total, 8);
  });
  err = arena_error([&] { shm::Arena::attach_fd(fd); });
  EXPECT_NE(err.find("corrupt arena header"), std::string::npos) << err;
}

TEST(ArenaFd, WrongMagicOrLayoutVersionIsRefused) {
  int fd = fake_arena(8192, kSeals, [](uint8_t* p) { p[0] = 'X'; });
  std::string err = arena_error([&] { shm::Arena::attach_fd(fd); });
  EXPECT_NE(err.find("(memfd:zkfarm-arena-fake): not a zkfarm arena"), std::string::npos) << err;
  fd = fake_arena(8192, kSeals, [](uint8_t* p) {
    const uint32_t v = shm::kArenaLayoutVersion + 1;
    std::memcpy(p + 8, &v, 4);
  });
  err = arena_error([&] { shm::Arena::attach_fd(fd); });
  EXPECT_NE(err.find("arena layout version " + std::to_string(shm::kArenaLayoutVersion + 1) +
                     ", this binary uses " + std::to_string(shm::kArenaLayoutVersion)),
            std::string::npos)
      << err;
}

TEST(ArenaFd, AnArenaLargerThanTheMemoryIsRefusedBeforeAnyPageIsTaken) {
  // 1 PiB: no machine this runs on has it; refused at once, with the advice.
  std::string err = arena_error([] { shm::Arena::create_memfd("zkfarm-arena-huge", uint64_t(1) << 50); });
  EXPECT_NE(err.find("cannot reserve 1125899906846720 bytes for the arena memfd:zkfarm-arena-huge"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("lower arena_mib"), std::string::npos) << err;
  EXPECT_FALSE(maps_contain("zkfarm-arena-huge"));
}

}  // namespace
}  // namespace zkfarm
