// The PostgreSQL queue (supervisor/ledger/pg_queue.hpp) against a real server: the
// CTest fixture `pg_cluster` starts one (tests/cluster/pg_cluster.py: initdb,
// its own port) and names its URL in ZKFARM_TEST_PG_URL_FILE. Each test gets
// a database of its own. Leases here are short (1–2 s) so that expiry is
// seen; every wait is for a state, bounded only to fail instead of hang.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "supervisor/ledger/pg_queue.hpp"
#include "supervisor/ledger/pg_schema.hpp"
#include "pg_test_db.hpp"

using namespace zkfarm::supervisor;
using namespace zkfarm::test_pg;

namespace {

class PgQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = fresh_database(&db_);
    if (url_.empty()) GTEST_FAIL() << "ZKFARM_TEST_PG_URL_FILE is not set: run through ctest (fixture pg_cluster)";
  }

  std::unique_ptr<PgQueue> queue(const std::string& host, unsigned lease_seconds = 30, unsigned max_attempts = 3,
                                 const std::string& instance = "") {
    PgOptions o;
    o.url = url_;
    o.host_id = host;
    o.instance = instance.empty() ? "test-machine:" + host : instance;
    o.version = "test";
    o.lease_seconds = lease_seconds;
    o.max_attempts = max_attempts;
    auto q = std::make_unique<PgQueue>(o);
    q->set_shared_dir("/shared");
    return q;
  }

  // A job of `k` witness partitions at `priority` (pg_test_db.hpp).
  static Job job(uint32_t k, Priority priority = Priority::kNormal) { return shared_job(k, priority); }

  static ProofRecord proof(uint64_t token, char fill = 'p') {
    ProofRecord r;
    r.proof = std::string(256, fill);
    r.proved_ms = 5;
    r.lease_token = token;
    return r;
  }

  std::string url_, db_;
};

TEST_F(PgQueueTest, SchemaIsCreatedOnceAndVersioned) {
  auto q = queue("h1");
  EXPECT_EQ(value(url_, "SELECT value FROM zkfarm_meta WHERE key = 'schema_version'"), std::to_string(kPgSchemaVersion));
  EXPECT_EQ(value(url_, "SELECT value FROM zkfarm_meta WHERE key = 'min_reader_version'"), "1");
  auto again = queue("h2");  // a second host finds it current
  EXPECT_EQ(value(url_, "SELECT count(*) FROM zkfarm_hosts"), "2");
  EXPECT_EQ(value(url_, "SELECT p.relname FROM pg_class p WHERE p.relname = 'zkfarm_partitions_queue'"),
            "zkfarm_partitions_queue");
}

// Issue 32 (schema 2): a circuit's input signals, by its generator, come back
// to every host; a row of schema 1's kind (no inputs) reads with none.
TEST_F(PgQueueTest, ACircuitsInputsComeBackByItsGenerator) {
  auto q = queue("h1");
  CircuitRecord a{"a", "wasm", "gen1", "k", "/k", "/w", 0, 1, 7, 1};
  a.inputs = R"([{"hash":"af63dc4c8601ec8c","size":1}])";
  q->put_circuit(a);
  q->put_circuit(CircuitRecord{"b", "wasm", "gen2", "k", "/k", "/w", 0, 1, 7, 1});
  auto other = queue("h2");
  const auto all = other->circuits();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].inputs, a.inputs);
  EXPECT_EQ(all[1].inputs, "");
}

TEST_F(PgQueueTest, AHostOfTheNextSchemaSharesTheQueueUnlessItsReadersMustBeNewer) {
  {
    auto q = queue("h1");
    EXPECT_EQ(q->queue(), static_cast<SharedQueue*>(q.get()));  // the shared store is its own queue part
  }
  // A newer zkfarm migrated additively (min_reader stays): this host goes on.
  sql(url_, "UPDATE zkfarm_meta SET value = '" + std::to_string(kPgSchemaVersion + 1) +
                "' WHERE key = 'schema_version'");
  EXPECT_NO_THROW(queue("h1"));
  // One that needs newer readers: refused, with the fix named.
  sql(url_, "UPDATE zkfarm_meta SET value = '" + std::to_string(kPgSchemaVersion + 1) +
                "' WHERE key = 'min_reader_version'");
  try {
    queue("h1");
    FAIL() << "an older host started on a schema that refuses it";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find("upgrade this host"), std::string::npos) << e.what();
    EXPECT_FALSE(e.storage_fault());
  }
  EXPECT_TRUE(migrations_well_formed(pg_migrations()));
  EXPECT_EQ(int(pg_migrations().size()), kPgSchemaVersion);
}

TEST_F(PgQueueTest, ClaimsFollowPriorityThenJobThenPartitionAndCarryTheFiles) {
  auto q = queue("h1");
  const uint64_t a = q->add_job(job(2, Priority::kNormal));
  const uint64_t b = q->add_job(job(2, Priority::kHigh));
  auto c = q->claim(3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].lease.job, b);
  EXPECT_EQ(c[0].lease.index, 0u);
  EXPECT_EQ(c[1].lease.job, b);
  EXPECT_EQ(c[2].lease.job, a);
  EXPECT_EQ(c[2].lease.index, 0u);
  EXPECT_EQ(c[2].wtns, "jobs/tok/0.wtns") << "stored relative to the shared dir";
  EXPECT_EQ(c[2].wtns_sha256, std::string(64, 'b'));
  EXPECT_EQ(c[0].lease.attempts, 1u);
  std::set<uint64_t> tokens;
  for (const auto& x : c) tokens.insert(x.lease.token);
  EXPECT_EQ(tokens.size(), 3u) << "every lease has its own fencing token";
  EXPECT_EQ(q->claim(5).size(), 1u);
  EXPECT_TRUE(q->claim(5).empty());
}

TEST_F(PgQueueTest, ConcurrentHostsNeverClaimThePartitionTwice) {
  { auto q = queue("setup"); for (int i = 0; i < 20; ++i) q->add_job(job(25)); }
  std::mutex m;
  std::map<std::pair<uint64_t, uint32_t>, int> seen;
  std::vector<std::thread> hosts;
  for (int h = 0; h < 8; ++h) {
    hosts.emplace_back([&, h] {
      auto q = queue("host" + std::to_string(h));
      for (;;) {
        auto c = q->claim(3);
        if (c.empty()) return;
        std::lock_guard<std::mutex> lock(m);
        for (const auto& x : c) ++seen[{x.lease.job, x.lease.index}];
      }
    });
  }
  for (auto& t : hosts) t.join();
  EXPECT_EQ(seen.size(), 500u);
  for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << "job " << k.first << " partition " << k.second;
}

// Maintenance on one elected host (docs/cluster.md "Maintenance"): the host
// holding the maintenance turn expires leases and prunes; another host's
// pass changes nothing; a turn its host stopped renewing lapses and the next
// host to pass takes it; a clean stop hands it on at once.
TEST_F(PgQueueTest, OnlyTheHostHoldingTheMaintenanceTurnExpiresLeasesAndAnotherTakesItOverWhenItLapses) {
  // max_attempts high: the same partitions are claimed and expired many times.
  auto h1 = queue("h1", 2, 100), h2 = queue("h2", 30, 100), worker = queue("worker", 30, 100);
  auto expired_by_hand = [&] {
    sql(url_, "UPDATE zkfarm_partitions SET lease_expires = now() - interval '1 second' WHERE state = 'leased'");
  };
  const auto count = [&](const char* state) {
    return value(url_, std::string("SELECT count(*) FROM zkfarm_partitions WHERE state = '") + state + "'");
  };
  EXPECT_EQ(h1->expire_leases(), 0u);
  EXPECT_EQ(h1->maintainer(), "h1") << "the first host to pass takes the turn";
  EXPECT_EQ(h2->expire_leases(), 0u);
  EXPECT_EQ(h2->maintainer(), "h1") << "a turn that has not lapsed is not taken";

  worker->add_job(job(3));
  ASSERT_EQ(worker->claim(2).size(), 2u);
  expired_by_hand();
  EXPECT_EQ(h2->expire_leases(), 0u) << "h2 does not hold the turn: it changes nothing";
  EXPECT_EQ(count("leased"), "2");
  EXPECT_EQ(h1->expire_leases(), 2u);
  EXPECT_EQ(count("leased"), "0");
  EXPECT_EQ(count("queued"), "3");

  // Both hosts' passes at once, many times: only one of them ever moves anything.
  std::atomic<size_t> moved1{0}, moved2{0};
  for (int round = 0; round < 10; ++round) {
    ASSERT_EQ(worker->claim(3).size(), 3u);
    expired_by_hand();
    std::thread a([&] { moved1 += h1->expire_leases(); });
    std::thread b([&] { moved2 += h2->expire_leases(); });
    a.join();
    b.join();
    ASSERT_EQ(count("leased"), "0") << "round " << round;
  }
  EXPECT_EQ(moved1.load(), 30u);
  EXPECT_EQ(moved2.load(), 0u);

  // h1 dies (no deregister): its turn lapses after its lease (2 s), then h2 takes it.
  h1.reset();
  ASSERT_EQ(worker->claim(1).size(), 1u);
  expired_by_hand();
  EXPECT_EQ(h2->expire_leases(), 0u) << "h1's turn has not lapsed yet";
  std::this_thread::sleep_for(std::chrono::milliseconds(2300));
  EXPECT_EQ(h2->maintainer(), "") << "a turn not renewed lapses";
  EXPECT_EQ(h2->expire_leases(), 1u);
  EXPECT_EQ(h2->maintainer(), "h2");

  // Retention is maintenance too: only the turn's holder prunes.
  sql(url_, "UPDATE zkfarm_jobs SET state = 'done', finished_ms = 10");
  EXPECT_EQ(worker->prune(1000), 0u) << "worker does not hold the turn";
  EXPECT_EQ(h2->prune(1000), 1u);

  // A clean stop hands the turn on at once.
  h2->deregister();
  EXPECT_EQ(worker->maintainer(), "");
  EXPECT_EQ(worker->expire_leases(), 0u);
  EXPECT_EQ(worker->maintainer(), "worker");
}

TEST_F(PgQueueTest, AProofIsStoredOnlyUnderTheCurrentLeaseAndOnlyOnce) {
  auto h1 = queue("h1", 1), h2 = queue("h2", 1);
  const uint64_t id = h1->add_job(job(2));
  auto c1 = h1->claim(1);
  ASSERT_EQ(c1.size(), 1u);
  // h1 goes quiet: its lease expires, the partition goes back, h2 takes it.
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  EXPECT_TRUE(h1->renew({c1[0].lease.token}, "running").empty()) << "an expired lease is not renewed";
  EXPECT_GE(h2->expire_leases(), 1u);
  auto c2 = h2->claim(1);
  ASSERT_EQ(c2.size(), 1u);
  EXPECT_EQ(c2[0].lease.index, c1[0].lease.index);
  EXPECT_EQ(c2[0].lease.attempts, 2u);
  // The late answer of h1 (presumed dead) is refused; h2's is stored.
  CompleteResult late = h1->complete(id, c1[0].lease.index, proof(c1[0].lease.token, 'x'));
  EXPECT_EQ(late.stored, ProofStored::kFenced);
  EXPECT_NE(late.why.find("taken over by h2"), std::string::npos) << late.why;
  CompleteResult ok = h2->complete(id, c2[0].lease.index, proof(c2[0].lease.token, 'y'));
  EXPECT_EQ(ok.stored, ProofStored::kStored);
  EXPECT_FALSE(ok.job_done);
  EXPECT_EQ(h1->complete(id, c1[0].lease.index, proof(c1[0].lease.token, 'x')).stored, ProofStored::kDuplicate);
  EXPECT_EQ(value(url_, "SELECT count(*) FROM zkfarm_proofs"), "1");
  EXPECT_EQ(h1->proof(id, c1[0].lease.index)->proof, std::string(256, 'y'));
  // The other partition; the job is done with its last proof.
  auto c3 = h1->claim(1);
  ASSERT_EQ(c3.size(), 1u);
  CompleteResult last = h1->complete(id, c3[0].lease.index, proof(c3[0].lease.token));
  EXPECT_TRUE(last.job_done);
  EXPECT_EQ(value(url_, "SELECT state || ' ' || done FROM zkfarm_jobs WHERE id = " + std::to_string(id)), "done 2");
}

TEST_F(PgQueueTest, ProgressIsSweptOnceASecondAndTheLastProofEndsTheJobWithItsSums) {
  auto h = queue("h");
  const uint64_t id = h->add_job(job(3));
  auto c = h->claim(3);
  ASSERT_EQ(c.size(), 3u);
  auto timed = [](uint64_t token) {
    ProofRecord r = proof(token);
    r.synth_ms = 10;
    r.prove_ms = 20;
    r.queue_ms = 5;
    r.verify_ms = 2;
    return r;
  };
  const std::string row = "SELECT state || ' ' || done || ' ' || synth_ms || ' ' || prove_ms FROM zkfarm_jobs WHERE id = " +
                          std::to_string(id);
  EXPECT_TRUE(h->complete(id, c[0].lease.index, timed(c[0].lease.token)).stored == ProofStored::kStored);
  EXPECT_TRUE(h->complete(id, c[1].lease.index, timed(c[1].lease.token)).stored == ProofStored::kStored);
  EXPECT_EQ(value(url_, row), "running 0 0 0") << "a proof does not touch the job's row";
  EXPECT_TRUE(h->sweep(10000));
  EXPECT_FALSE(h->sweep(10500)) << "one sweep a second, over all hosts";
  EXPECT_EQ(value(url_, row), "running 2 20 40");
  // Each proof's stage times as `result` shows them: no delivery time (a
  // shared queue's clients write the files).
  EXPECT_EQ(h->proof(id, c[1].lease.index)->timing, (PartitionTiming{10, 5, 20, 2, std::nullopt}));
  // Every host's status view reads the sweep's counts.
  ClusterView v = h->cluster();
  EXPECT_EQ(v.done, 2u);
  EXPECT_EQ(v.leased, 1u);
  EXPECT_EQ(v.queued, 0u);
  EXPECT_EQ(v.live_jobs, 1u);
  ASSERT_EQ(v.hosts.size(), 1u);
  EXPECT_EQ(v.hosts[0].host_id, "h");
  EXPECT_EQ(v.hosts[0].leases, 1u);
  EXPECT_TRUE(v.hosts[0].alive);
  CompleteResult last = h->complete(id, c[2].lease.index, timed(c[2].lease.token));
  EXPECT_TRUE(last.job_done);
  EXPECT_EQ(value(url_, row), "done 3 30 60");
  // Two last proofs committed at once each see the other unfinished and
  // leave the job's end to the sweep (made here by hand): it ends the job.
  const uint64_t id2 = h->add_job(job(2));
  sql(url_, "UPDATE zkfarm_partitions SET state = 'done', synth_ms = 1, prove_ms = 2 WHERE job_id = " +
                std::to_string(id2));
  // The gate opens a second after the last sweep, by the database's clock.
  bool swept = false;
  for (int i = 0; i < 100 && !swept; ++i) {
    swept = h->sweep(20000);
    if (!swept) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(swept);
  EXPECT_EQ(value(url_, "SELECT state || ' ' || done || ' ' || finished_ms FROM zkfarm_jobs WHERE id = " +
                            std::to_string(id2)),
            "done 2 20000");
}

TEST_F(PgQueueTest, RenewKeepsALeaseAliveAndReleaseGivesItBackUncounted) {
  auto q = queue("h1", 2);
  const uint64_t id = q->add_job(job(2));
  auto c = q->claim(2);
  ASSERT_EQ(c.size(), 2u);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    EXPECT_EQ(q->renew({c[0].lease.token, c[1].lease.token}, "running").size(), 2u);
  }
  EXPECT_EQ(q->expire_leases(), 0u) << "renewed leases do not expire";
  EXPECT_EQ(q->release({c[1].lease.token}), 1u);
  auto again = q->claim(5);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].lease.index, c[1].lease.index);
  EXPECT_EQ(again[0].lease.attempts, 1u) << "a release does not count as an attempt";
  EXPECT_EQ(q->complete(id, c[1].lease.index, proof(c[1].lease.token)).stored, ProofStored::kFenced)
      << "the released lease's token is dead";
}

TEST_F(PgQueueTest, APartitionWhoseLeasesKeepExpiringFailsItsJobAfterMaxAttempts) {
  auto q = queue("h1", 1, 2);
  const uint64_t id = q->add_job(job(2));
  for (int attempt = 1; attempt <= 2; ++attempt) {
    auto c = q->claim(1);
    ASSERT_EQ(c.size(), 1u) << "attempt " << attempt;
    EXPECT_EQ(c[0].lease.index, 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    q->expire_leases();
  }
  EXPECT_EQ(value(url_, "SELECT state FROM zkfarm_jobs WHERE id = " + std::to_string(id)), "failed");
  const std::string error = value(url_, "SELECT error FROM zkfarm_jobs WHERE id = " + std::to_string(id));
  EXPECT_NE(error.find("partition 0: claimed 2 times without a proof"), std::string::npos) << error;
  EXPECT_NE(error.find("lease of host h1 expired"), std::string::npos) << error;
  EXPECT_TRUE(q->claim(5).empty()) << "a failed job's partitions are not claimed";
}

TEST_F(PgQueueTest, GivenBackPartitionsCountTheirAttemptsAndFailWithTheReason) {
  auto q = queue("h1", 30, 2);
  const uint64_t id = q->add_job(job(1));
  for (int i = 0; i < 2; ++i) {
    auto c = q->claim(1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_TRUE(q->give_back(c[0].lease.token, "jobs/tok/0.wtns: its SHA-256 does not match"));
  }
  EXPECT_TRUE(q->claim(1).empty());
  q->expire_leases();
  EXPECT_EQ(value(url_, "SELECT state FROM zkfarm_jobs WHERE id = " + std::to_string(id)), "failed");
  EXPECT_NE(value(url_, "SELECT error FROM zkfarm_jobs").find("SHA-256 does not match"), std::string::npos);
}

TEST_F(PgQueueTest, ACancelEndsEveryLeaseOfTheJob) {
  auto q = queue("h1");
  const uint64_t id = q->add_job(job(3));
  auto c = q->claim(2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_TRUE(q->cancel_job(id));
  EXPECT_FALSE(q->cancel_job(id)) << "already ended";
  EXPECT_TRUE(q->renew({c[0].lease.token, c[1].lease.token}, "running").empty());
  EXPECT_EQ(q->complete(id, c[0].lease.index, proof(c[0].lease.token)).stored, ProofStored::kFenced);
  EXPECT_TRUE(q->claim(5).empty());
  EXPECT_EQ(value(url_, "SELECT count(*) FROM zkfarm_partitions WHERE state = 'cancelled'"), "3");
}

TEST_F(PgQueueTest, AHostThatRestartsHandsBackWhatItsLastRunHeld) {
  {
    auto q = queue("h1");
    q->add_job(job(2));
    EXPECT_EQ(q->claim(2).size(), 2u);
  }  // "killed": nothing released
  auto q = queue("h1");  // the same host_id starts again
  auto c = q->claim(5);
  EXPECT_EQ(c.size(), 2u) << "back in the queue at once, not after the lease";
  EXPECT_EQ(c[0].lease.attempts, 2u) << "the attempt stays counted (it may be what killed the host)";
}

TEST_F(PgQueueTest, TheChangeFeedMissesNoJobWhoseTransactionCommittedLate) {
  auto reader = queue("reader");
  Changes first = reader->changes_since("");
  EXPECT_TRUE(first.jobs.empty());
  // A transaction takes its id, then waits, while another commits after it.
  PGconn* slow = PQconnectdb(url_.c_str());
  ASSERT_EQ(PQstatus(slow), CONNECTION_OK);
  auto writer = queue("writer");
  const uint64_t a = writer->add_job(job(1));
  const uint64_t b = writer->add_job(job(1));
  PQclear(PQexec(slow, "BEGIN"));
  PQclear(PQexec(slow, ("UPDATE zkfarm_jobs SET error = 'late', txid = pg_current_xact_id() WHERE id = " +
                        std::to_string(a)).c_str()));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  writer->cancel_job(b);  // commits first, though it started later
  Changes mid = reader->changes_since(first.snapshot);
  std::set<uint64_t> ids;
  for (const auto& r : mid.jobs) ids.insert(r.job.id);
  EXPECT_TRUE(ids.count(b));
  PQclear(PQexec(slow, "COMMIT"));
  PQfinish(slow);
  Changes after = reader->changes_since(mid.snapshot);
  bool saw_late = false;
  for (const auto& r : after.jobs) saw_late |= r.job.id == a && r.job.error == "late";
  EXPECT_TRUE(saw_late) << "the update committed after the snapshot was seen next time";
  EXPECT_TRUE(reader->changes_since(after.snapshot).jobs.empty()) << "and only once";
}

TEST_F(PgQueueTest, AHostIdHeldByAnotherLiveInstanceIsRefusedButARestartOrAStoppedHostTakesItOver) {
  auto first = queue("gpu-1", 30, 3, "machine-a:/var/lib/zkfarm");
  const uint64_t id = first->add_job(job(2));
  ASSERT_EQ(first->claim(1).size(), 1u);
  // A second zkfarmd elsewhere (a cloned VM, a copied config) with the same host_id.
  try {
    queue("gpu-1", 30, 3, "machine-b:/var/lib/zkfarm");
    FAIL() << "a second live host took the host_id over";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("host_id 'gpu-1' is in use"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("machine-a:/var/lib/zkfarm"), std::string::npos) << e.what();
  }
  EXPECT_EQ(value(url_, "SELECT count(*) FROM zkfarm_partitions WHERE state = 'leased' AND lease_host = 'gpu-1'"),
            "1")
      << "the live host keeps its lease";
  // The same instance started again (after a crash: it holds the state lock,
  // so the old process is gone): it takes over and hands back the lease.
  auto again = queue("gpu-1", 30, 3, "machine-a:/var/lib/zkfarm");
  EXPECT_EQ(value(url_, "SELECT count(*) FROM zkfarm_partitions WHERE state = 'queued' AND job_id = " +
                            std::to_string(id)),
            "2");
  // A host that stopped cleanly leaves its id to anyone.
  again->deregister();
  EXPECT_NO_THROW(queue("gpu-1", 30, 3, "machine-b:/var/lib/zkfarm"));
}

TEST_F(PgQueueTest, TheQueueIdIsMadeOnceByTheFirstHostToAsk) {
  auto a = queue("a"), b = queue("b");
  bool ca = false, cb = true;
  const std::string ia = a->queue_id(&ca), ib = b->queue_id(&cb);
  EXPECT_TRUE(ca);
  EXPECT_FALSE(cb);
  EXPECT_EQ(ia, ib);
  EXPECT_EQ(ia.size(), 32u);
}

// A TCP relay between the queue and PostgreSQL that can stop relaying: a
// server that is alive for the kernel (connections accepted, bytes
// acknowledged) but does not answer, as a frozen or paused one.
class FreezableRelay {
 public:
  explicit FreezableRelay(int target_port) : target_(target_port) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_, 16);
    socklen_t len = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~FreezableRelay() {
    stop_ = true;
    thread_.join();
    ::close(listen_);
    for (auto [c, s] : pairs_) {
      ::close(c);
      ::close(s);
    }
  }
  int port() const { return port_; }
  void freeze() { frozen_ = true; }

 private:
  void run() {
    while (!stop_) {
      std::vector<pollfd> fds{{listen_, POLLIN, 0}};
      if (!frozen_)
        for (auto [c, s] : pairs_) {
          fds.push_back({c, POLLIN, 0});
          fds.push_back({s, POLLIN, 0});
        }
      if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int c = ::accept(listen_, nullptr, nullptr);
        const int s = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(uint16_t(target_));
        ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
        pairs_.push_back({c, s});
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & POLLIN)) continue;
        const auto& [c, s] = pairs_[(i - 1) / 2];
        const int from = fds[i].fd, to = from == c ? s : c;
        char buf[65536];
        const ssize_t n = ::read(from, buf, sizeof buf);
        if (n > 0) (void)!::write(to, buf, size_t(n));
      }
    }
  }
  int target_, listen_ = -1, port_ = 0;
  std::atomic<bool> stop_{false}, frozen_{false};
  std::vector<std::pair<int, int>> pairs_;
  std::thread thread_;
};

TEST_F(PgQueueTest, AServerThatStopsAnsweringIsUnreachableAfterTheDeadlineNotAHang) {
  // postgresql://user:pw@127.0.0.1:PORT/db → the relay's port.
  const size_t at = url_.rfind('@'), colon = url_.find(':', at), slash = url_.find('/', at);
  FreezableRelay relay(std::stoi(url_.substr(colon + 1, slash - colon - 1)));
  PgOptions o;
  o.url = url_.substr(0, colon + 1) + std::to_string(relay.port()) + url_.substr(slash);
  o.host_id = "h";
  o.instance = "test:h";
  PgQueue q(o);
  q.add_job(job(1));
  relay.freeze();
  try {
    q.claim(1);
    FAIL() << "a claim was answered by a frozen server";
  } catch (const JournalError& e) {
    EXPECT_TRUE(e.storage_fault());
    EXPECT_NE(std::string(e.what()).find("no answer within"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(q.reachable());
}

TEST(PgQueueFaults, AQueueThatCannotBeReachedIsAStorageFaultNamingItWithoutThePassword) {
  PgOptions o;
  o.url = "postgresql://zkfarm:s3cret@127.0.0.1:1/zkfarm?connect_timeout=2";
  o.host_id = "h";
  try {
    PgQueue q(o);
    FAIL() << "connected to port 1";
  } catch (const JournalError& e) {
    EXPECT_TRUE(e.storage_fault());
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("127.0.0.1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(redact_pg_url("postgresql://u:pw@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(redact_pg_url("host=h password=pw dbname=d"), "host=h password=*** dbname=d");
  EXPECT_EQ(redact_pg_url("postgresql://h/db?password=pw"), "postgresql://h/db?password=***");
}

}  // namespace
