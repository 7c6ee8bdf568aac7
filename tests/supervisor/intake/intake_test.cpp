// The submit check (supervisor/intake/submit.cpp) and the disk threads beside the
// loop (supervisor/background.hpp): witnesses copied on a pool yet judged in
// index order, a checked key not read again, copies byte for byte; the inbox
// and the serial worker keep their order and finish what was posted.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "groth16/decimal.hpp"
#include "supervisor/background.hpp"
#include "supervisor/supervisor.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(LoopInbox, RunsClosuresInOrderOnTheCallerAndIsReadableOnlyWhileSomeWait) {
  LoopInbox inbox;
  pollfd p{inbox.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  std::vector<int> seen;
  std::thread([&] {
    for (int i = 0; i < 100; ++i) inbox.post([&seen, i] { seen.push_back(i); });
  }).join();
  EXPECT_EQ(::poll(&p, 1, 0), 1);
  inbox.post([&] { inbox.post([&] { seen.push_back(1000); }); });  // posted while running: runs in this pass
  EXPECT_EQ(inbox.run(), 102u);
  ASSERT_EQ(seen.size(), 101u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[i], i);
  EXPECT_EQ(seen.back(), 1000);
  EXPECT_EQ(inbox.run(), 0u);  // the nested post left one wake-up behind: nothing runs
  EXPECT_EQ(::poll(&p, 1, 0), 0);
}

TEST(SerialWorker, RunsTasksOneAtATimeInOrderAndFinishWaitsForAll) {
  std::vector<int> order;
  std::atomic<int> running{0}, most{0};
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> elsewhere{true};
  {
    SerialWorker w("zkfarm-test");
    for (int i = 0; i < 50; ++i) {
      w.post([&, i] {
        most = std::max(most.load(), ++running);
        if (std::this_thread::get_id() == caller) elsewhere = false;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        order.push_back(i);
        --running;
      });
    }
    w.post([] { throw std::runtime_error("a task that throws does not end the thread"); });
    w.post([&] { order.push_back(50); });
    w.finish();
    EXPECT_EQ(w.pending(), 0u);
    ASSERT_EQ(order.size(), 51u);  // all of it, before finish() returned
    w.post([&] { order.push_back(99); });  // after finish: dropped
  }
  for (int i = 0; i <= 50; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(order.size(), 51u);
  EXPECT_EQ(most.load(), 1);
  EXPECT_TRUE(elsewhere.load());
}

// A state dir's inputs folder and the pools a submit runs on.
struct Intake {
  test::TempDir dir{"zkfarm-intake"};
  std::shared_ptr<KeyHashCache> hashes = std::make_shared<KeyHashCache>();
  std::shared_ptr<CheckedKeys> keys = std::make_shared<CheckedKeys>();
  std::shared_ptr<CheckPool> copies = std::make_shared<CheckPool>(3, 1000);
  Intake() {
    fs::create_directories(dir / "inputs/keys");
    fs::create_directories(dir / "inputs/jobs");
  }
  SubmitCheck submit(const std::string& zkey, const std::vector<std::string>& wtns, const std::string& token) {
    const protocol::Submit req{.zkey = zkey, .wtns = wtns, .out = dir / ("out-" + token)};
    return check_submission(req, Peer{::geteuid(), ::getegid(), ::getpid()},
                            SubmitContext{dir / "inputs", token, hashes, keys, copies, std::nullopt});
  }
};

std::string chain_wtns(int k) { return test::shared_fixture("chain." + std::to_string(k) + ".wtns"); }

TEST(Submit, TakesEveryWitnessByContentInItsOrderWithItsPublicSignals) {
  Intake in;
  std::vector<std::string> wtns;
  for (int k = 0; k < 10; ++k) wtns.push_back(chain_wtns(k));
  SubmitCheck c = in.submit(test::shared_fixture("chain.zkey"), wtns, "t1");
  ASSERT_TRUE(c.job) << c.error;
  ASSERT_EQ(c.job->parts.size(), 10u);
  uint64_t bytes = 0;
  for (int k = 0; k < 10; ++k) {
    const Partition& p = c.job->parts[k];
    EXPECT_EQ(p.wtns, in.dir / ("inputs/jobs/t1/" + std::to_string(k) + ".wtns"));
    EXPECT_EQ(test::read_file(p.wtns), test::read_file(wtns[k])) << "the private copy of witness " << k;
    struct stat st {};
    ASSERT_EQ(::stat(p.wtns.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0400u);
    bytes += uint64_t(st.st_size);
    // public.json as snarkjs wrote it for this witness.
    EXPECT_EQ(json::parse(p.public_json), json::parse(test::read_file(test::shared_fixture(
                                              "chain." + std::to_string(k) + ".public.json"))));
    ASSERT_EQ(p.public_values.size(), c.job->n_public);
  }
  EXPECT_EQ(c.witness_bytes, bytes);
  EXPECT_TRUE(c.vk);
  EXPECT_TRUE(in.keys->lookup(c.job->zkey_sha256).has_value()) << "the key is remembered as checked";
}

TEST(Submit, AKeyCheckedOnceIsNotReadAgainButANewKeyIs) {
  Intake in;
  SubmitCheck a = in.submit(test::shared_fixture("chain.zkey"), {chain_wtns(0)}, "a");
  ASSERT_TRUE(a.job) << a.error;
  // Damage the private copy behind the farm's back (only zkfarmd's user can):
  // a second job of the same key takes the facts it remembers, so it never
  // notices; a first job would have refused this file.
  const std::string copy = a.job->zkey;
  fs::permissions(copy, fs::perms::owner_write, fs::perm_options::add);
  { std::ofstream(copy, std::ios::binary | std::ios::in | std::ios::out).write("XXXX", 4); }
  SubmitCheck b = in.submit(test::shared_fixture("chain.zkey"), {chain_wtns(1)}, "b");
  ASSERT_TRUE(b.job) << b.error;
  EXPECT_EQ(b.job->zkey_sha256, a.job->zkey_sha256);
  EXPECT_EQ(b.vk, a.vk) << "the same verification key object";
  // Another content is checked: here the tiny key, whose nVars the chain witness does not fit.
  SubmitCheck c = in.submit(test::shared_fixture("tiny.zkey"), {chain_wtns(0)}, "c");
  EXPECT_FALSE(c.job);
  EXPECT_NE(c.error.find("key expects nVars"), std::string::npos) << c.error;
}

TEST(Submit, OfSeveralBadWitnessesTheFirstByIndexIsNamedAndNothingIsLeft) {
  Intake in;
  std::vector<std::string> wtns;
  for (int k = 0; k < 12; ++k) wtns.push_back(chain_wtns(k % 10));
  const std::string tiny = test::shared_fixture("tiny.0.wtns");  // another circuit's: wrong nVars
  wtns[4] = tiny;
  wtns[9] = in.dir / "missing.wtns";
  for (int round = 0; round < 5; ++round) {  // whatever order the pool's threads finish in
    SubmitCheck c = in.submit(test::shared_fixture("chain.zkey"), wtns, "bad" + std::to_string(round));
    ASSERT_FALSE(c.job);
    EXPECT_NE(c.error.find(tiny + ": witness has 4 values, key expects nVars"), std::string::npos) << c.error;
    EXPECT_EQ(c.error.find("missing.wtns"), std::string::npos) << "witness 9 fails too, but later: " << c.error;
    EXPECT_FALSE(fs::exists(in.dir / ("inputs/jobs/bad" + std::to_string(round)))) << "copies removed";
  }
}

}  // namespace
}  // namespace zkfarm::supervisor
