// KeyCache: the most recently used keys stay; with a byte budget the least
// recently used leave first, and a key over the whole budget is refused.
#include <gtest/gtest.h>

#include "groth16/errors.hpp"
#include "groth16/key_cache.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

TEST(KeyCache, ByteBudgetEvictsLeastRecentlyUsedAndRefusesOversizedKeys) {
  const std::string chain = test::shared_fixture("chain.zkey"), tiny = test::shared_fixture("tiny.zkey");
  int prepared = 0;
  // "Bytes" a key takes: its domain size, so chain (larger) and tiny differ.
  auto bytes = [](const Zkey& k) { return size_t(k.domain_size) << 20; };
  const size_t chain_bytes = bytes(Zkey::open(chain)), tiny_bytes = bytes(Zkey::open(tiny));
  ASSERT_GT(chain_bytes, tiny_bytes);
  KeyCache<int> cache(
      8, [&](const Zkey&) { return std::make_unique<int>(++prepared); }, bytes, chain_bytes + tiny_bytes / 2,
      "of the test budget");

  EXPECT_EQ(*cache.get(tiny).prepared, 1);
  EXPECT_EQ(*cache.get(tiny).prepared, 1);  // found, not prepared again
  EXPECT_EQ(*cache.get(chain).prepared, 2);  // both do not fit: tiny leaves
  const Zkey* chain_key = cache.get(chain).key.get();
  EXPECT_NE(cache.find(chain_key), nullptr);
  EXPECT_EQ(*cache.get(tiny).prepared, 3);  // prepared anew; chain leaves for it
  EXPECT_EQ(cache.find(chain_key), nullptr);

  KeyCache<int> small(8, [&](const Zkey&) { return std::make_unique<int>(0); }, bytes, tiny_bytes, "of the test budget");
  try {
    small.get(chain);
    FAIL() << "a key over the whole budget was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("chain.zkey"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("of the test budget"), std::string::npos) << e.what();
  }
  EXPECT_EQ(*small.get(tiny).prepared, 0);  // what fits still loads
}

}  // namespace
}  // namespace zkfarm
