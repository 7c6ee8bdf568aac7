// A claimed partition's files made ready from the shared dir
// (supervisor/cluster/claim_prep.*): a name that is no SHA-256 is refused
// before any path is made of it, and a shared key whose bytes are not the
// ones the queue names is refused naming the file, leaving no copy behind.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "supervisor/cluster/claim_prep.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {

namespace fs = std::filesystem;

struct Dirs {
  test::TempDir root{"zkfarm-claim-prep"};
  ClaimDirs dirs;
  Dirs() {
    dirs = {root / "shared", root / "keys", root / "claims"};
    for (const std::string& d : {dirs.shared_dir, dirs.shared_dir + "/keys", dirs.keys_dir, dirs.claims_dir})
      fs::create_directories(d);
  }
  size_t files_in(const std::string& d) const {
    return size_t(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
  }
};

ClaimedPartition claim() {
  ClaimedPartition c;
  c.lease.job = 1;
  c.lease.index = 0;
  c.lease.token = 42;
  c.wtns = "jobs/tok/0.wtns";
  c.wtns_sha256 = std::string(64, 'b');
  return c;
}

TEST(ClaimPrep, OnlySha256NamesAreNames) {
  EXPECT_TRUE(is_sha256(std::string(64, 'a')));
  EXPECT_FALSE(is_sha256(std::string(63, 'a')));
  EXPECT_FALSE(is_sha256(std::string(64, 'A')));  // the queue writes lowercase
  EXPECT_FALSE(is_sha256("../../etc/passwd" + std::string(48, 'a')));
}

TEST(ClaimPrep, AKeyNamedByNoSha256IsRefusedBeforeAnyPathIsMadeOfIt) {
  Dirs d;
  CheckedKeys checked;
  const PreparedClaim p = prepare_claim(claim(), "../keys/evil", d.dirs, checked);
  EXPECT_NE(p.error.find("not a SHA-256"), std::string::npos) << p.error;
  EXPECT_FALSE(p.host_fault);
  EXPECT_EQ(d.files_in(d.dirs.keys_dir), 0u);
  EXPECT_EQ(d.files_in(d.dirs.claims_dir), 0u);
}

TEST(ClaimPrep, ASharedKeyWhoseBytesAreNotTheQueuesIsRefusedNamingItAndLeavesNoCopy) {
  Dirs d;
  const std::string sha = std::string(64, 'c');  // not the SHA-256 of what the file holds
  std::ofstream(d.dirs.shared_dir + "/keys/" + sha + ".zkey") << "not the key the queue names";
  CheckedKeys checked;
  const PreparedClaim p = prepare_claim(claim(), sha, d.dirs, checked);
  ASSERT_FALSE(p.error.empty());
  EXPECT_NE(p.error.find(sha + ".zkey"), std::string::npos) << p.error;
  EXPECT_FALSE(p.host_fault);  // the file's fault, not this host's mount
  EXPECT_EQ(d.files_in(d.dirs.keys_dir), 0u) << "a refused key's copy stayed";
}

}  // namespace
}  // namespace zkfarm::supervisor
