// KeyCache: the most recently used keys stay; with a byte budget the least
// recently used leave first, and a key over the whole budget is refused; with
// the content checks alongside the preparation, a bad key gives Zkey::open's
// error and is never stored.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

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

// A prepared form that counts how many of its kind are alive.
struct Counted {
  explicit Counted(int& alive) : alive_(alive) { ++alive_; }
  ~Counted() { --alive_; }
  int& alive_;
};

// A copy of `good` with 32 bytes at `offset` set to 0xff.
std::string corrupted(const test::TempDir& dir, const std::string& good, uint64_t offset, const std::string& name) {
  std::string bytes = test::read_file(good);
  std::memset(bytes.data() + offset, 0xff, 32);
  const std::string path = dir / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(KeyCache, ChecksAlongsidePrepareGiveOpensErrorsAndNeverStoreABadKey) {
  const std::string chain = test::shared_fixture("chain.zkey");
  test::TempDir dir;
  const Zkey good = Zkey::open(chain);
  // A coordinate ≥ q in H, and a record whose value is not below r: faults
  // only the content checks see.
  const std::string bad_point = corrupted(dir, chain, good.file.section_offset(9) + 100 * 64 + 32, "h.zkey");
  const std::string bad_record = corrupted(dir, chain, good.file.section_offset(4) + 4 + 5 * 44 + 12, "coef.zkey");

  int prepared = 0, alive = 0;
  KeyCache<Counted> cache(
      4,
      [&](const Zkey&) {
        ++prepared;
        return std::make_unique<Counted>(alive);
      },
      {}, SIZE_MAX, {}, ContentChecks::alongside_prepare);
  EXPECT_NE(cache.get(chain).prepared, nullptr);
  EXPECT_EQ(prepared, 1);
  for (const std::string& bad : {bad_point, bad_record}) {
    const std::string expected = error_of([&] { Zkey::open(bad); });
    ASSERT_NE(expected, "(no InputError)") << bad;
    EXPECT_EQ(error_of([&] { cache.get(bad); }), expected);
    EXPECT_FALSE(cache.contains(bad));
    EXPECT_EQ(error_of([&] { cache.get(bad); }), expected);  // refused again, never found
  }
  EXPECT_EQ(prepared, 5);  // the preparation ran alongside each time…
  EXPECT_EQ(alive, 1);     // …and only the good key's result is kept
  EXPECT_TRUE(cache.contains(chain));

  // A key's fault wins over the preparation's; on a good key, the
  // preparation's own error comes through.
  KeyCache<Counted> failing(
      4, [&](const Zkey&) -> std::unique_ptr<Counted> { throw std::runtime_error("device fault"); }, {}, SIZE_MAX, {},
      ContentChecks::alongside_prepare);
  EXPECT_EQ(error_of([&] { failing.get(bad_point); }), error_of([&] { Zkey::open(bad_point); }));
  EXPECT_THROW(failing.get(chain), std::runtime_error);

  // Over the whole budget as well: still the key's fault, as Zkey::open says it.
  KeyCache<Counted> tight(
      4, [&](const Zkey&) { return std::make_unique<Counted>(alive); }, [](const Zkey&) { return size_t(2); }, 1,
      "of the test budget", ContentChecks::alongside_prepare);
  EXPECT_EQ(error_of([&] { tight.get(bad_record); }), error_of([&] { Zkey::open(bad_record); }));
  EXPECT_NE(error_of([&] { tight.get(chain); }).find("of the test budget"), std::string::npos);

  // Checks before the preparation (the default): a bad key is never prepared.
  int before = 0;
  KeyCache<Counted> strict(4, [&](const Zkey&) {
    ++before;
    return std::make_unique<Counted>(alive);
  });
  EXPECT_EQ(error_of([&] { strict.get(bad_record); }), error_of([&] { Zkey::open(bad_record); }));
  EXPECT_EQ(before, 0);
  EXPECT_NE(strict.get(chain).prepared, nullptr);
}

TEST(KeyCache, UncheckedOpenThenCheckContentsIsOpen) {
  const std::string chain = test::shared_fixture("chain.zkey");
  test::TempDir dir;
  const Zkey good = Zkey::open(chain);
  const std::string bad = corrupted(dir, chain, good.file.section_offset(7) + 7 * 128 + 96, "b2.zkey");
  const Zkey k = Zkey::open(bad, ZkeyContents::unchecked);  // the structure is fine
  EXPECT_EQ(k.n_coeffs, good.n_coeffs);
  EXPECT_EQ(error_of([&] { k.check_contents(); }), error_of([&] { Zkey::open(bad); }));
  EXPECT_NE(error_of([&] { k.check_contents(); }).find("section 7: point 7 (y.c1)"), std::string::npos);
  EXPECT_NO_THROW(Zkey::open(chain, ZkeyContents::unchecked).check_contents());
}

}  // namespace
}  // namespace zkfarm
