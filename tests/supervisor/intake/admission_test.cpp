// Admission (supervisor/intake/admission.hpp) as a part on its own: a submit
// of real snarkjs files (the shared fixtures' tiny circuit) is checked on
// intake's pool, journaled through the journal lane into a ledger in memory
// (tests/supervisor/fake_ledger.hpp), joins the job table, and its client
// hears the job's id as a ControlReply on the bus. Refusals: while stopping,
// with the queue out of reach, after a journal fault (intake closes, the
// copies go), and a key whose partition cannot fit the arena. No process runs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "shm/arena.hpp"
#include "supervisor/intake/admission.hpp"
#include "supervisor/fake_ledger.hpp"

#include "supervisor/part_fixture.hpp"

namespace zkfarm::supervisor {
namespace {

struct AdmissionFixture : ::testing::Test, fakes::WorkerGround {
  shm::Arena arena = shm::Arena::create_memfd("zkfarm-admission-test", 1 << 20);
  shm::SlotAllocator slots{1 << 20};
  shm::SlotAllocator small_slots{16};  ///< below any partition's slot: Admission reads only its capacity
  Lifecycle lifecycle{cfg, log, workers, jobs, metrics, bus, [](const Worker&) {}};
  fakes::FakeLedger ledger;
  LoopInbox inbox;
  JournalLane journal{cfg, log, ledger, inbox, metrics, bus};
  Pipeline pipeline{cfg, log, jobs, slots, arena, workers, lifecycle, metrics, journal, inbox, bus,
                    Pipeline::Hooks{.send = [](const Worker&, const std::string&) {}, .circuit_of = nullptr}};
  Intake intake{cfg, false};
  CircuitRegistry circuits{cfg, log, false, "", bus, {}};
  std::string queue_fault;                 ///< what the queue_fault hook answers
  std::vector<std::string> removed;        ///< the jobs whose copies remove_inputs was asked to remove (their keys)
  std::map<std::string, nlohmann::json> replies;  ///< ControlReply by client identity
  /// At each reply: the writes the ledger had seen and the jobs in the
  /// table, as the client hears its answer.
  std::map<std::string, std::pair<int, size_t>> seen_at_reply;
  std::unique_ptr<Admission> admission;

  AdmissionFixture()
      : WorkerGround("zkfarm-admission", [](Config& c) {
          c.synth_workers = 1;
          c.submit_checks = 1;
        }) {
    for (const char* d : {"/inputs", "/inputs/keys", "/inputs/jobs", "/inputs/claims"})
      std::filesystem::create_directories(cfg.state_dir + d);
    bus.on<ControlReply>([this](const ControlReply& r) {
      replies[r.identity] = r.reply;
      seen_at_reply[r.identity] = {ledger.writes_tried(), jobs.all().size()};
    });
    make_admission();
  }
  ~AdmissionFixture() override { journal.stop(); }

  void make_admission(bool small_arena = false) {
    admission = std::make_unique<Admission>(
        cfg, log, intake, circuits, lifecycle, journal, inbox, jobs, small_arena ? small_slots : slots,
        pipeline, metrics, bus,
        Admission::Hooks{.remove_inputs = [this](const Job& j) { removed.push_back(j.zkey_source); },
                         .queue_fault = [this] { return queue_fault; },
                         .queue_wake = [] {}});
  }

  static protocol::Submit tiny_job(size_t parts) {
    protocol::Submit s;
    s.zkey = zkfarm::test::shared_fixture("tiny.zkey");
    for (size_t k = 0; k < parts; ++k) s.wtns.push_back(zkfarm::test::shared_fixture("tiny." + std::to_string(k) + ".wtns"));
    return s;
  }
  static Peer me() { return Peer{::getuid(), ::getgid(), ::getpid()}; }

  /// Submits `s` as client `who` and runs the loop (checks, journal answers)
  /// until that client has its reply.
  nlohmann::json submit(const std::string& who, const protocol::Submit& s) {
    admission->start(who, s, me());
    EXPECT_TRUE(fakes::loop_until(inbox, [&] {
      admission->finish_checks();
      return replies.count(who) > 0;
    })) << who << " never heard back";
    return replies.count(who) ? replies[who] : nlohmann::json();
  }
  /// Job folders left under inputs/jobs.
  size_t job_folders() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(cfg.state_dir + "/inputs/jobs")) ++n;
    return n;
  }
};

TEST_F(AdmissionFixture, AJobIsJournaledBeforeItJoinsTheTableAndItsClientHearsItsId) {
  const auto reply = submit("client-a", tiny_job(2));
  ASSERT_EQ(reply["ok"], true) << reply.dump();
  const uint64_t id = reply["job"].get<uint64_t>();
  EXPECT_EQ(reply["delivery"], "client") << "no output folder: the client reads the proofs";
  EXPECT_EQ(reply["delivery_reason"], "none");
  EXPECT_EQ(seen_at_reply["client-a"].first, 1) << "the add_job was journaled before the client heard";
  EXPECT_EQ(seen_at_reply["client-a"].second, 1u) << "and the job was in the table when it heard";
  const Job* job = jobs.find(id);
  ASSERT_NE(job, nullptr) << "the accepted job is in the table under the id its client heard";
  EXPECT_EQ(job->parts.size(), 2u);
  EXPECT_EQ(job->zkey_source, zkfarm::test::shared_fixture("tiny.zkey"));
  EXPECT_EQ(metrics.jobs_accepted, 1u);
  EXPECT_TRUE(removed.empty());
  EXPECT_FALSE(intake.busy()) << "nothing left being checked or journaled";
}

TEST_F(AdmissionFixture, AJournalFaultRefusesTheJobClosesIntakeAndRemovesItsCopies) {
  ledger.fail_next_writes(1);
  const auto reply = submit("client-a", tiny_job(1));
  EXPECT_EQ(reply["ok"], false);
  EXPECT_NE(reply["error"].get<std::string>().find("cannot journal the job"), std::string::npos) << reply.dump();
  EXPECT_EQ(removed, std::vector<std::string>{zkfarm::test::shared_fixture("tiny.zkey")}) << "its copies are removed";
  EXPECT_NE(journal.intake_fault(), "") << "a storage fault closes intake";
  EXPECT_EQ(jobs.all().size(), 0u) << "nothing joined the table";
  EXPECT_EQ(metrics.jobs_refused["intake_fault"], 1u);
  // The next submit is refused at once, before any check or write.
  const int writes = ledger.writes_tried();
  admission->start("client-b", tiny_job(1), me());
  ASSERT_TRUE(replies.count("client-b"));
  EXPECT_NE(replies["client-b"]["error"].get<std::string>().find("not accepting jobs"), std::string::npos);
  EXPECT_EQ(ledger.writes_tried(), writes);
  EXPECT_FALSE(intake.busy());
}

TEST_F(AdmissionFixture, WhileStoppingOrWithTheQueueOutOfReachASubmitIsRefusedAtOnceWithoutACheck) {
  queue_fault = "connection refused";
  admission->start("client-a", tiny_job(1), me());
  ASSERT_TRUE(replies.count("client-a")) << "answered in the same call";
  EXPECT_NE(replies["client-a"]["error"].get<std::string>().find("queue is unreachable (connection refused)"),
            std::string::npos);
  queue_fault.clear();
  lifecycle.begin_stop("SIGTERM");
  admission->start("client-b", tiny_job(1), me());
  ASSERT_TRUE(replies.count("client-b"));
  EXPECT_NE(replies["client-b"]["error"].get<std::string>().find("stopping"), std::string::npos);
  EXPECT_FALSE(intake.busy()) << "no check was started";
  EXPECT_EQ(ledger.writes_tried(), 0);
  EXPECT_EQ(metrics.jobs_refused["stopping"], 1u);
  EXPECT_EQ(metrics.jobs_refused["intake_fault"], 1u);
}

TEST_F(AdmissionFixture, AJobStoppingWhileItsCheckRunsIsRefusedAndItsCopiesGo) {
  admission->start("client-a", tiny_job(1), me());
  lifecycle.begin_stop("SIGTERM");  // after the check began, before it is accepted
  ASSERT_TRUE(fakes::loop_until(inbox, [&] {
    admission->finish_checks();
    return replies.count("client-a") > 0;
  }));
  EXPECT_EQ(replies["client-a"]["ok"], false);
  EXPECT_NE(replies["client-a"]["error"].get<std::string>().find("stopping"), std::string::npos);
  EXPECT_EQ(removed.size(), 1u);
  EXPECT_EQ(ledger.writes_tried(), 0) << "nothing journaled";
  EXPECT_TRUE(jobs.all().empty());
  EXPECT_EQ(metrics.jobs_refused["stopping"], 1u);
}

TEST_F(AdmissionFixture, AKeyWhosePartitionCannotFitTheArenaIsRefusedNamingTheKeyAndTheArena) {
  make_admission(/*small_arena=*/true);
  const auto reply = submit("client-a", tiny_job(1));
  EXPECT_EQ(reply["ok"], false);
  const std::string error = reply["error"].get<std::string>();
  EXPECT_NE(error.find(zkfarm::test::shared_fixture("tiny.zkey")), std::string::npos) << error;
  EXPECT_NE(error.find("raise arena_mib"), std::string::npos) << error;
  EXPECT_EQ(removed.size(), 1u);
  EXPECT_EQ(ledger.writes_tried(), 0);
  EXPECT_EQ(metrics.jobs_refused["invalid"], 1u);
}

TEST_F(AdmissionFixture, AMissingWitnessIsRefusedNamingTheFileAndLeavesNoJobFolder) {
  protocol::Submit s = tiny_job(1);
  s.wtns.push_back(dir / "missing.wtns");
  const auto reply = submit("client-a", s);
  EXPECT_EQ(reply["ok"], false);
  EXPECT_NE(reply["error"].get<std::string>().find("missing.wtns"), std::string::npos) << reply.dump();
  EXPECT_EQ(ledger.writes_tried(), 0);
  EXPECT_EQ(metrics.jobs_refused["invalid"], 1u);
  EXPECT_TRUE(removed.empty()) << "no job was made, so there is nothing for Admission to remove";
  EXPECT_EQ(job_folders(), 0u) << "the refused check's copies are gone (check_submission's own cleanup)";
}

}  // namespace
}  // namespace zkfarm::supervisor
