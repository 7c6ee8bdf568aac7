// ClusterMirror (supervisor/cluster/cluster_mirror.hpp) as a part on its own,
// against a real PostgreSQL queue (the CTest fixture `pg_cluster`, as in
// tests/cluster/pg_queue_test.cpp): this host ("h1") runs the mirror over its
// own PgQueue, the journal lane and the loop's inbox; "another host" ("h2")
// is a second PgQueue on the same database, used directly. The shared dir
// holds real snarkjs files (the shared fixtures' tiny circuit), so a claim is
// made ready by the real preparation: copied, hashed and checked. No worker
// process runs; the loop is this test's loop_until. Every wait is for a
// state, bounded only to fail instead of hang.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cluster/pg_test_db.hpp"
#include "files/sha256.hpp"
#include "shm/arena.hpp"
#include "supervisor/cluster/cluster_mirror.hpp"
#include "supervisor/ledger/pg_queue.hpp"
#include "supervisor/part_fixture.hpp"

namespace zkfarm::supervisor {
namespace {

namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::unique_ptr<PgQueue> open_queue(const std::string& url, const std::string& host, const std::string& shared,
                                    unsigned lease_seconds) {
  PgOptions o;
  o.url = url;
  o.host_id = host;
  o.instance = "test-machine:" + host;
  o.version = "test";
  o.lease_seconds = lease_seconds;
  o.max_attempts = 3;
  auto q = std::make_unique<PgQueue>(o);
  q->set_shared_dir(shared);
  return q;
}

struct ClusterMirrorFixture : ::testing::Test, fakes::WorkerGround {
  static constexpr unsigned kLeaseSeconds = 3;  // renewals every second: a lost lease is seen soon
  std::string url = test_pg::fresh_database();
  std::string shared = (dir.path / "shared").string();
  shm::Arena arena = shm::Arena::create_memfd("zkfarm-mirror-test", 1 << 20);
  shm::SlotAllocator slots{1 << 20};
  Lifecycle lifecycle{cfg, log, workers, jobs, metrics, bus, [](const Worker&) {}};
  LoopInbox inbox;
  std::unique_ptr<PgQueue> here, other;
  std::unique_ptr<JournalLane> journal;
  std::unique_ptr<Pipeline> pipeline;
  Intake intake{cfg, true};
  CircuitRegistry circuits{cfg, log, true, "", bus, {}};
  std::unique_ptr<ClusterMirror> mirror;
  std::vector<uint64_t> ended;  ///< JobEnded, by job id
  std::string key_sha;          ///< the tiny key's SHA-256, its name under shared/keys

  ClusterMirrorFixture()
      : WorkerGround("zkfarm-mirror", [](Config& c) {
          c.synth_workers = 1;
          c.gpu_queue_depth = 2;  // room for 2 + 2 claims
          c.host_id = "h1";
          c.lease_seconds = kLeaseSeconds;
          c.claim_poll_ms = 100;
        }) {
    if (url.empty()) return;  // SetUp fails the test
    cfg.queue_url = url;
    cfg.shared_dir = shared;
    for (const char* d : {"/inputs", "/inputs/keys", "/inputs/jobs", "/inputs/claims"})
      fs::create_directories(cfg.state_dir + d);
    fs::create_directories(shared + "/keys");
    fs::create_directories(shared + "/jobs/tok");
    std::ofstream(shared + "/" + kSharedMarker) << "test queue\n";
    const std::string key = read_all(zkfarm::test::shared_fixture("tiny.zkey"));
    key_sha = files::sha256_hex(key);
    std::ofstream(shared + "/keys/" + key_sha + ".zkey", std::ios::binary) << key;

    here = open_queue(url, "h1", shared, kLeaseSeconds);
    here->register_host();
    other = open_queue(url, "h2", shared, kLeaseSeconds);
    journal = std::make_unique<JournalLane>(cfg, log, *here, inbox, metrics, bus);
    pipeline = std::make_unique<Pipeline>(cfg, log, jobs, slots, arena, workers, lifecycle, metrics, *journal, inbox, bus,
                                          Pipeline::Hooks{.send = [](const Worker&, const std::string&) {},
                                                          .circuit_of = nullptr});
    bus.on<JobEnded>([this](const JobEnded& e) { ended.push_back(e.job.id); });
    all_ready();
    mirror = std::make_unique<ClusterMirror>(cfg, log, here->where(), *journal, inbox, jobs, workers, lifecycle, *pipeline,
                                             circuits, intake, bus);
  }
  void SetUp() override {
    if (url.empty()) GTEST_FAIL() << "ZKFARM_TEST_PG_URL_FILE is not set: run through ctest (fixture pg_cluster)";
  }
  ~ClusterMirrorFixture() override {
    if (journal) journal->stop();  // its thread's closures end before the parts they name
  }

  /// The fixtures have two tiny witnesses; partition i gets i % 2.
  static std::string tiny_wtns(uint32_t i) { return zkfarm::test::shared_fixture("tiny." + std::to_string(i % 2) + ".wtns"); }
  /// A job of `k` tiny witnesses submitted on the other host: its files in
  /// the shared dir as that host leaves them, its rows in the queue.
  uint64_t submit_elsewhere(uint32_t k) {
    Job j = test_pg::shared_job(k);
    j.zkey = shared + "/keys/" + key_sha + ".zkey";
    j.zkey_sha256 = key_sha;
    j.zkey_source = "/elsewhere/tiny.zkey";
    j.files_dir = shared + "/jobs/tok";
    j.n_public = 1;
    for (uint32_t i = 0; i < k; ++i) {
      const std::string w = read_all(tiny_wtns(i));
      j.parts[i].wtns = shared + "/jobs/tok/" + std::to_string(i) + ".wtns";
      j.parts[i].wtns_sha256 = files::sha256_hex(w);
      std::ofstream(j.parts[i].wtns, std::ios::binary) << w;
    }
    return other->add_job(j);
  }
  /// Runs the loop (ticks and what comes back) until `done()`.
  template <class F>
  bool run_until(F done) {
    return fakes::loop_until(inbox, [&] {
      mirror->tick();
      return done();
    });
  }
  size_t held() const { return jobs.leases().size(); }
  std::string partition_column(uint64_t job, uint32_t index, const std::string& column) {
    return test_pg::value(url, "SELECT " + column + " FROM zkfarm_partitions WHERE job_id = " + std::to_string(job) +
                                   " AND idx = " + std::to_string(index));
  }
};

TEST_F(ClusterMirrorFixture, AJobSubmittedOnAnotherHostIsMirroredClaimedAndMadeReadyHere) {
  EXPECT_FALSE(mirror->synced());
  const uint64_t id = submit_elsewhere(3);
  ASSERT_TRUE(run_until([&] { return held() == 3 && mirror->preparing() == 0; })) << held() << " held";
  EXPECT_TRUE(mirror->synced()) << "claims wait for the first sync";
  const Job* job = jobs.find(id);
  ASSERT_NE(job, nullptr) << "the other host's job is in this host's table";
  EXPECT_EQ(job->zkey, cfg.state_dir + "/inputs/keys/" + key_sha + ".zkey") << "named by its hash in this host's state dir";
  EXPECT_EQ(read_all(job->zkey), read_all(zkfarm::test::shared_fixture("tiny.zkey"))) << "the private copy of the key";
  for (uint32_t i = 0; i < 3; ++i) {
    const Partition* p = jobs.find({id, i});
    ASSERT_NE(p, nullptr);
    EXPECT_NE(p->lease, 0u);
    EXPECT_EQ(p->state, PartState::kQueued) << "held here, waiting for the pipeline";
    EXPECT_EQ(p->wtns, cfg.state_dir + "/inputs/claims/" + std::to_string(p->lease) + ".wtns");
    EXPECT_EQ(read_all(p->wtns), read_all(tiny_wtns(i)));
    EXPECT_FALSE(p->public_json.empty()) << "public signals read from the checked copy";
    EXPECT_EQ(partition_column(id, i, "lease_host"), "h1");
  }
  const auto st = mirror->status();
  EXPECT_EQ(st["held_here"], 3);
  EXPECT_EQ(st["reachable"], true);
  EXPECT_EQ(st["host_id"], "h1");
}

TEST_F(ClusterMirrorFixture, AWitnessChangedOnTheSharedMountFailsItsJobAfterMaxAttemptsNamingTheFile) {
  const uint64_t id = submit_elsewhere(3);
  std::ofstream(shared + "/jobs/tok/1.wtns", std::ios::binary | std::ios::app) << "tampered";
  // Each claim of partition 1 is refused by its hash and given back, counted;
  // the third fails the job (the maintenance pass), which ends it here too.
  ASSERT_TRUE(run_until([&] {
    const Job* j = jobs.find(id);
    return j && j->state == JobState::kFailed && held() == 0 && mirror->preparing() == 0;
  })) << held() << " held";
  EXPECT_EQ(partition_column(id, 1, "attempts"), "3") << "given back counted: the file's fault, not the host's";
  const std::string error = partition_column(id, 1, "last_error");
  EXPECT_NE(error.find(shared + "/jobs/tok/1.wtns"), std::string::npos) << error;
  EXPECT_NE(error.find("SHA-256"), std::string::npos) << error;
  EXPECT_NE(jobs.find(id)->error.find("1.wtns"), std::string::npos) << jobs.find(id)->error;
  EXPECT_EQ(ended, std::vector<uint64_t>{id});
  EXPECT_TRUE(fs::is_empty(cfg.state_dir + "/inputs/claims")) << "no claim's copy is left behind";
}

TEST_F(ClusterMirrorFixture, AJobCancelledOnAnotherHostEndsHereOnceAndItsLeasesAreDropped) {
  const uint64_t id = submit_elsewhere(2);
  ASSERT_TRUE(run_until([&] { return held() == 2 && mirror->preparing() == 0; }));
  std::vector<std::string> copies;
  for (uint32_t i = 0; i < 2; ++i) copies.push_back(jobs.find({id, i})->wtns);
  ASSERT_TRUE(other->cancel_job(id));
  ASSERT_TRUE(run_until([&] { return held() == 0 && !ended.empty(); }));
  EXPECT_EQ(jobs.find(id)->state, JobState::kCancelled);
  EXPECT_EQ(ended, std::vector<uint64_t>{id}) << "JobEnded once";
  for (const auto& c : copies) EXPECT_FALSE(fs::exists(c)) << c << ": a dropped lease's copy is removed at once";
  // Nothing is claimed again: the job's partitions are cancelled in the
  // queue (a view read after the cancel shows none queued, and claims ran meanwhile).
  const int64_t after = mirror->status()["view_ms"].get<int64_t>();
  ASSERT_TRUE(run_until([&] { return mirror->status()["view_ms"].get<int64_t>() > after; }));
  EXPECT_EQ(mirror->status()["partitions"]["queued"], 0);
  EXPECT_EQ(held(), 0u);
}

TEST_F(ClusterMirrorFixture, AProofUnderAStaleLeaseIsDroppedAndOnlyTheCurrentLeaseStoresIt) {
  const uint64_t id = submit_elsewhere(1);
  ASSERT_TRUE(run_until([&] { return held() == 1 && mirror->preparing() == 0; }));
  const uint64_t token = jobs.find({id, 0})->lease;
  const std::string copy = jobs.find({id, 0})->wtns;
  ProofRecord rec;
  rec.proof = std::string(256, 'p');
  rec.proved_ms = 5;
  rec.lease_token = token + 1000;  // a lease that is not the partition's (one it held before): fenced
  bus.emit(SharedProofVerified{{id, 0}, rec});
  ASSERT_TRUE(run_until([&] { return mirror->status()["proofs_dropped"] == 1; }));
  EXPECT_EQ(mirror->status()["proofs_stored"], 0);
  EXPECT_EQ(partition_column(id, 0, "state"), "leased") << "not stored";
  EXPECT_EQ(jobs.find({id, 0})->lease, token) << "the partition's current lease is not the stale one's to drop";
  EXPECT_TRUE(fs::exists(copy)) << "nor are its files";

  // The current lease stores it, once.
  rec.lease_token = token;
  bus.emit(SharedProofVerified{{id, 0}, rec});
  ASSERT_TRUE(run_until([&] { return mirror->status()["proofs_stored"] == 1; }));
  EXPECT_EQ(partition_column(id, 0, "state"), "done");
  EXPECT_EQ(test_pg::value(url, "SELECT state FROM zkfarm_jobs WHERE id = " + std::to_string(id)), "done");
  EXPECT_FALSE(fs::exists(copy)) << "a stored proof's claim copy is removed";
}

TEST_F(ClusterMirrorFixture, AQueueOutOfReachIsShownAndTheNextCallThatReachesItClearsIt) {
  ASSERT_TRUE(run_until([&] { return mirror->synced(); }));
  bus.emit(LedgerReach{false, "server closed the connection"});
  EXPECT_FALSE(mirror->reachable());
  auto st = mirror->status();
  EXPECT_EQ(st["reachable"], false);
  EXPECT_EQ(st["fault"], "server closed the connection");
  EXPECT_GT(st["unreachable_since_ms"].get<int64_t>(), 0);
  // The next call that reaches the queue (the sync) clears it; claims resume.
  const uint64_t id = submit_elsewhere(1);
  ASSERT_TRUE(run_until([&] { return mirror->reachable(); }));
  EXPECT_FALSE(mirror->status().contains("fault"));
  ASSERT_TRUE(run_until([&] { return held() == 1; })) << "claims resume";
  EXPECT_NE(jobs.find({id, 0})->lease, 0u);
}

}  // namespace
}  // namespace zkfarm::supervisor
