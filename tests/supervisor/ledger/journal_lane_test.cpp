// The journal lane (supervisor/ledger/journal_lane.hpp) as a part on its own,
// over a ledger in memory (tests/supervisor/fake_ledger.hpp): a write that
// fails for storage closes intake, tells the init system and the shared
// queue's reachability (ServiceNotice, LedgerReach) once, is retried in
// order until it lands, and then reopens intake (LedgerReach reached). The
// test waits on the loop's inbox (its eventfd), never on a fixed sleep.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "supervisor/fake_ledger.hpp"
#include "supervisor/ledger/journal_lane.hpp"

#include "supervisor/part_fixture.hpp"

namespace zkfarm::supervisor {
namespace {

struct JournalLaneFixture : ::testing::Test, fakes::PartGround {
  fakes::FakeLedger ledger;
  LoopInbox inbox;
  JournalLane lane{cfg, log, ledger, inbox, metrics, bus};
  std::vector<std::string> notices;
  std::vector<std::pair<bool, std::string>> reaches;

  JournalLaneFixture()
      : PartGround("zkfarm-journal-lane", [](Config& c) {
          std::filesystem::create_directories(c.state_dir + "/inputs");  // the lane's probe writes there
        }) {
    bus.on<ServiceNotice>([this](const ServiceNotice& e) { notices.push_back(e.line); });
    bus.on<LedgerReach>([this](const LedgerReach& e) { reaches.emplace_back(e.reached, e.why); });
  }
  ~JournalLaneFixture() override {
    lane.stop();
  }
  template <class F>
  bool loop_until(F done) {
    return fakes::loop_until(inbox, done);
  }
};

TEST_F(JournalLaneFixture, AWriteThatFailsForStorageClosesIntakeIsRetriedInOrderAndReopensIt) {
  ledger.fail_next_writes(2);
  lane.set_started(1, 0);
  lane.set_started(2, 0);  // queued behind the failing one
  ASSERT_TRUE(loop_until([&] { return !lane.intake_fault().empty(); }));
  EXPECT_NE(lane.intake_fault().find("disk full"), std::string::npos) << lane.intake_fault();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].rfind("STATUS=refusing jobs: ", 0), 0u) << notices[0];
  ASSERT_EQ(reaches.size(), 1u);
  EXPECT_FALSE(reaches[0].first);

  ASSERT_TRUE(loop_until([&] { return lane.intake_fault().empty(); })) << "reopened once the write landed";
  ASSERT_EQ(reaches.size(), 2u);
  EXPECT_TRUE(reaches[1].first);
  EXPECT_EQ(notices.size(), 1u) << "the init system is told once per fault";
  EXPECT_TRUE(ledger.wait_until([](fakes::FakeLedger& l) { return l.started().size() == 2; }));
  EXPECT_TRUE(ledger.wait_until([](fakes::FakeLedger& l) {
    return l.started() == std::vector<uint64_t>{1, 2} && l.writes_tried() == 4;
  })) << "both writes landed, in order, after two failed tries";
  EXPECT_EQ(metrics.journal_write_errors, 2u);
}

TEST_F(JournalLaneFixture, WritesThatLandTellNobody) {
  lane.set_started(7, 0);
  // A barrier: a task after the write on the journal thread posts to the
  // inbox after anything the write itself would have posted.
  bool behind = false;
  lane.post([&](Ledger&) { inbox.post([&] { behind = true; }); });
  ASSERT_TRUE(loop_until([&] { return behind; }));
  EXPECT_TRUE(ledger.wait_until([](fakes::FakeLedger& l) { return l.started().size() == 1; }));
  EXPECT_TRUE(lane.intake_fault().empty());
  EXPECT_TRUE(notices.empty());
  EXPECT_TRUE(reaches.empty());
}

}  // namespace
}  // namespace zkfarm::supervisor
