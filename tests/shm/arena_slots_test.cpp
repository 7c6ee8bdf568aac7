// The arena (shm/arena.hpp) and its slots (shm/slots.hpp): the slot budget,
// generations and coalescing; the header checks that refuse foreign segments.
#include <sys/stat.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "shm/arena.hpp"
#include "shm/slots.hpp"
#include "supervisor/config.hpp"
#include "supervisor/model/jobs.hpp"

namespace zkfarm::supervisor {
namespace {

TEST(SlotAllocator, BudgetGenerationsAndCoalescing) {
  shm::SlotAllocator s(3 * 4096);
  auto a = s.allocate(4096), b = s.allocate(100), c = s.allocate(4096);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(b->size, 4096u);
  EXPECT_FALSE(s.allocate(1).has_value()) << "the arena never grows past its budget";
  EXPECT_TRUE(s.is_current(b->id, b->generation));
  EXPECT_TRUE(s.free(b->id));
  EXPECT_FALSE(s.is_current(b->id, b->generation)) << "a freed slot's old generation is stale";
  EXPECT_FALSE(s.free(b->id));
  EXPECT_TRUE(s.free(a->id));
  auto big = s.allocate(2 * 4096);  // a and b coalesced
  ASSERT_TRUE(big);
  EXPECT_EQ(big->offset, 0u);
  EXPECT_EQ(s.used(), 3 * 4096u);
}

TEST(Arena, CreateAttachAndRefuseForeignSegments) {
  const std::string name = "zkfarm-test-" + std::to_string(getpid());
  shm::Arena::remove(name);
  {
    auto a = shm::Arena::create(name, 10000);
    EXPECT_EQ(a.capacity(), 12288u);
    EXPECT_EQ((std::filesystem::status("/dev/shm/" + name).permissions() & std::filesystem::perms::all),
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    a.at(0, 8)[0] = 42;
    auto b = shm::Arena::attach(name);
    EXPECT_EQ(b.at(0, 8)[0], 42);
    EXPECT_THROW(b.at(12288 - 4, 8), shm::ArenaError);
    EXPECT_THROW(b.at(uint64_t(-1), 2), shm::ArenaError);
    EXPECT_THROW(shm::Arena::create(name, 4096), shm::ArenaError) << "exists already";
    a.mapping()[0] = 'X';  // corrupt the magic
    EXPECT_THROW(shm::Arena::attach(name), shm::ArenaError);
  }
  EXPECT_TRUE(shm::Arena::remove(name));
  EXPECT_THROW(shm::Arena::attach(name), shm::ArenaError);
}

TEST(Arena, NameDependsOnlyOnTheStateDir) {
  EXPECT_EQ(shm::Arena::name_for("/var/lib/zkfarm"), shm::Arena::name_for("/var/lib/zkfarm/"));
  EXPECT_NE(shm::Arena::name_for("/var/lib/zkfarm"), shm::Arena::name_for("/var/lib/zkfarm2"));
}

}  // namespace
}  // namespace zkfarm::supervisor
