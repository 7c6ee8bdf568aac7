// zkfarm-api's tokens and store (api/credentials.hpp, api/store.hpp) and its
// query decoding: tokens found by id and checked by hash, revocation at once,
// the secret never stored, tenants and names validated, quotas kept.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/credentials.hpp"
#include "api/http_server.hpp"
#include "api/store.hpp"

namespace {

using namespace zkfarm::api;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("zkfarm-api-store-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "api.sqlite").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

TEST(Credentials, TokensHaveTheDocumentedFormAndParse) {
  const NewToken t = make_token();
  EXPECT_EQ(t.text.size(), 85u);
  EXPECT_EQ(t.text.substr(0, 4), "zkf_");
  EXPECT_EQ(token_id(t.text).value(), t.id);
  EXPECT_NE(make_token().text, t.text);
  EXPECT_FALSE(token_id(t.text.substr(0, 84)));
  EXPECT_FALSE(token_id("zkf_" + std::string(16, 'G') + "_" + std::string(64, '0')));
  std::string upper = t.text;
  upper[30] = 'A';
  EXPECT_FALSE(token_id(upper));
}

TEST(Credentials, Sha256MatchesFips180Vector) {
  // FIPS 180-4 example "abc".
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Credentials, RolesNestAndNamesAreChecked) {
  EXPECT_TRUE(role_allows(Role::kOperator, Role::kSubmit));
  EXPECT_TRUE(role_allows(Role::kSubmit, Role::kRead));
  EXPECT_FALSE(role_allows(Role::kRead, Role::kSubmit));
  EXPECT_FALSE(role_allows(Role::kSubmit, Role::kOperator));
  EXPECT_FALSE(parse_role("admin"));
  EXPECT_TRUE(valid_tenant("acme-1"));
  EXPECT_FALSE(valid_tenant("-acme"));
  EXPECT_FALSE(valid_tenant("Acme"));
  EXPECT_FALSE(valid_tenant("a/b"));
  EXPECT_FALSE(valid_tenant(std::string(33, 'a')));
  EXPECT_TRUE(valid_circuit_name("poseidon.v2"));
  EXPECT_FALSE(valid_circuit_name(".."));
  EXPECT_FALSE(valid_circuit_name("a/b"));
  EXPECT_FALSE(valid_circuit_name(std::string(32, 'a')));
}

TEST(Credentials, PercentDecoding) {
  EXPECT_EQ(percent_decode("a%20b+c").value(), "a b c");
  EXPECT_FALSE(percent_decode("%2"));
  EXPECT_FALSE(percent_decode("%zz"));
  EXPECT_EQ(percent_decode("").value(), "");
}

TEST_F(StoreTest, ATokenAuthenticatesUntilRevokedAndItsSecretIsNotStored) {
  Store store(path_, true);
  const NewToken t = store.add_token("acme", Role::kSubmit, 1000);
  auto who = store.authenticate(t.text);
  ASSERT_TRUE(who);
  EXPECT_EQ(who->tenant, "acme");
  EXPECT_EQ(who->role, Role::kSubmit);
  EXPECT_EQ(who->token_id, t.id);
  // The same id with another secret is refused.
  std::string forged = t.text;
  forged.back() = forged.back() == '0' ? '1' : '0';
  EXPECT_FALSE(store.authenticate(forged));
  EXPECT_TRUE(store.revoke_token(t.id, 2000));
  EXPECT_FALSE(store.authenticate(t.text));
  EXPECT_FALSE(store.revoke_token(t.id, 3000));
  ASSERT_EQ(store.tokens().size(), 1u);
  EXPECT_EQ(store.tokens()[0].revoked_ms.value(), 2000);
  std::ifstream f(path_, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str().find(t.text.substr(21)), std::string::npos);
}

TEST_F(StoreTest, ZkfarmctlDoesNotCreateAStore) {
  EXPECT_THROW(Store(path_, false), StoreError);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(StoreTest, QuotasJobsAndUploadsAreKeptPerTenant) {
  Store store(path_, true);
  store.add_token("a", Role::kRead, 1);
  EXPECT_FALSE(store.quotas("a").max_queued_partitions);
  store.set_quotas("a", {5, std::nullopt});
  store.set_quotas("a", {std::nullopt, 100});
  EXPECT_EQ(store.quotas("a").max_queued_partitions.value(), 5u);
  EXPECT_EQ(store.quotas("a").max_stored_bytes.value(), 100u);
  store.add_upload({"u1", "a", "s", 40, 10});
  store.add_upload({"u2", "b", "s", 7, 10});
  EXPECT_EQ(store.stored_bytes("a"), 40u);
  EXPECT_FALSE(store.upload("b", "u1"));
  EXPECT_FALSE(store.remove_upload("b", "u1"));
  store.add_circuit({"a", "c", "u1", "", "", "{}", 5});
  EXPECT_FALSE(store.remove_upload("a", "u1"));  // a circuit uses it
  EXPECT_EQ(store.expired_uploads(100).size(), 1u);  // u2 only
  JobRow j;
  j.id = 7;
  j.tenant = "a";
  j.idempotency_key = "k";
  j.request_sha256 = "h";
  j.partitions = 3;
  store.add_job(j);
  EXPECT_EQ(store.job_by_key("a", "k")->id, 7u);
  EXPECT_FALSE(store.job_by_key("b", "k"));
  EXPECT_THROW(store.add_job(j), StoreError);  // one job per (tenant, key)
  EXPECT_EQ(store.live_jobs("a").size(), 1u);
  store.mark_terminal(7);
  EXPECT_TRUE(store.live_jobs("a").empty());
  EXPECT_EQ(store.jobs("a", 0, 10).size(), 1u);
  EXPECT_TRUE(store.jobs("b", 0, 10).empty());
}

}  // namespace
