// One contract for both stores of the ledger (supervisor/ledger/ledger.hpp):
// the same tests run against the SQLite journal and against the PostgreSQL
// queue on a real server (fixture pg_cluster), so that what the loop relies
// on of a Ledger (ids, proofs kept once, circuits, terminal states, faults
// as JournalError) holds whichever store an operator configures. A shared
// store proves under leases: the tests claim through its SharedQueue part
// first, as ClusterMirror does.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "supervisor/ledger/journal.hpp"
#include "supervisor/ledger/pg_queue.hpp"
#include "pg_test_db.hpp"
#include "test_util.hpp"

using namespace zkfarm::supervisor;

namespace {

// A store under test and what it needs kept alive.
struct JournalStore {
  zkfarm::test::TempDir dir{"zkfarm-ledger-contract"};
  std::unique_ptr<Ledger> ledger = std::make_unique<Journal>(dir / "journal.sqlite");
};

struct PgStore {
  std::unique_ptr<Ledger> ledger;
  PgStore() {
    const std::string url = zkfarm::test_pg::fresh_database();
    if (url.empty()) throw std::runtime_error("ZKFARM_TEST_PG_URL_FILE is not set: run through ctest (fixture pg_cluster)");
    PgOptions o;
    o.url = url;
    o.host_id = "contract";
    o.instance = "test-machine:contract";
    o.version = "test";
    auto q = std::make_unique<PgQueue>(o);
    q->set_shared_dir("/shared");
    ledger = std::move(q);
  }
};

template <class Store>
class LedgerContract : public ::testing::Test {
 protected:
  Store store;
  Ledger& ledger() { return *store.ledger; }

  // A job of `k` witness partitions, its files where a shared store wants them.
  static Job job(uint32_t k) { return zkfarm::test_pg::shared_job(k); }

  // The proof of (job, index) with `fill`, under the lease a shared store
  // gives this host for it (none on one host).
  ProofRecord proof_of(uint64_t job_id, uint32_t index, char fill) {
    ProofRecord r;
    r.proof = std::string(256, fill);
    r.proved_ms = 5;
    if (SharedQueue* q = ledger().queue()) {
      for (const ClaimedPartition& c : q->claim(64)) leases_[{c.lease.job, c.lease.index}] = c.lease.token;
      r.lease_token = leases_.at({job_id, index});  // claimed now or before
    }
    return r;
  }

  std::map<std::pair<uint64_t, uint32_t>, uint64_t> leases_;  // (job, partition) → fencing token
};

using Stores = ::testing::Types<JournalStore, PgStore>;
class StoreNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return std::is_same_v<T, JournalStore> ? "sqlite" : "postgresql";
  }
};
TYPED_TEST_SUITE(LedgerContract, Stores, StoreNames);

TYPED_TEST(LedgerContract, JobsGetNewIdsAndAProofIsKeptOnceWithItsPublicSignals) {
  Ledger& l = this->ledger();
  const uint64_t a = l.add_job(this->job(2)), b = l.add_job(this->job(1));
  EXPECT_GT(a, 0u);
  EXPECT_GT(b, a);
  EXPECT_FALSE(l.proof(a, 0).has_value());
  const CompleteResult first = l.complete(a, 0, this->proof_of(a, 0, 'x'));
  EXPECT_EQ(first.stored, ProofStored::kStored);
  EXPECT_FALSE(first.job_done);  // one of two
  const auto kept = l.proof(a, 0);
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->proof, std::string(256, 'x'));
  EXPECT_EQ(kept->public_json, "[\"0\"]");
  // A second proof of the same partition is never stored over the first.
  EXPECT_NE(l.complete(a, 0, this->proof_of(a, 0, 'y')).stored, ProofStored::kStored);
  EXPECT_EQ(l.proof(a, 0)->proof, std::string(256, 'x'));
  EXPECT_EQ(l.complete(a, 1, this->proof_of(a, 1, 'z')).stored, ProofStored::kStored);
  EXPECT_TRUE(l.writable()) << l.last_error();
  EXPECT_EQ(l.last_error(), "");
}

// Each store's documented answer (ledger.hpp, complete): the journal throws,
// the queue fences the proof as for a job pruned meanwhile; neither stores it.
TYPED_TEST(LedgerContract, AProofOfAPartitionThatDoesNotExistIsNeverStored) {
  Ledger& l = this->ledger();
  const uint64_t a = l.add_job(this->job(1));
  ProofRecord r;
  r.proof = std::string(256, 'q');
  r.lease_token = 1;
  if constexpr (std::is_same_v<TypeParam, JournalStore>) {
    EXPECT_THROW(l.complete(a + 1000, 0, r), JournalError);
  } else {
    const CompleteResult res = l.complete(a + 1000, 0, r);
    EXPECT_EQ(res.stored, ProofStored::kFenced);
    EXPECT_NE(res.why.find("no longer in the queue"), std::string::npos) << res.why;
  }
  EXPECT_FALSE(l.proof(a + 1000, 0).has_value());
  EXPECT_FALSE(l.proof(a, 0).has_value());
}

TYPED_TEST(LedgerContract, CircuitsAreAddedReplacedListedAndRemovedByName) {
  Ledger& l = this->ledger();
  CircuitRecord c{"poseidon", "wasm", "gen1", std::string(64, 'k'), "/k.zkey", "/w", 1000, 7, 11, 2};
  l.put_circuit(c);
  l.put_circuit(CircuitRecord{"eddsa", "native", "gen2", std::string(64, 'e'), "/e.zkey", "/c", 1000, 8, 12, 3});
  c.generator = "gen3";  // a rebuild: replaced, not added
  l.put_circuit(c);
  auto all = l.circuits();
  ASSERT_EQ(all.size(), 2u);
  const auto it = std::find_if(all.begin(), all.end(), [](const CircuitRecord& r) { return r.name == "poseidon"; });
  ASSERT_NE(it, all.end());
  EXPECT_EQ(it->generator, "gen3");
  EXPECT_EQ(it->owner_uid, 1000u);
  EXPECT_EQ(it->n_vars, 11u);
  EXPECT_TRUE(l.remove_circuit("poseidon"));
  EXPECT_FALSE(l.remove_circuit("poseidon"));
  ASSERT_EQ(l.circuits().size(), 1u);
  EXPECT_EQ(l.circuits()[0].name, "eddsa");
}

TYPED_TEST(LedgerContract, AJobsTerminalStateStaysWithItsProofs) {
  Ledger& l = this->ledger();
  const uint64_t a = l.add_job(this->job(1));
  l.set_started(a, 10);
  ASSERT_EQ(l.complete(a, 0, this->proof_of(a, 0, 'p')).stored, ProofStored::kStored);
  l.finish_job(a, JobState::kDone, "", 20);
  EXPECT_EQ(l.proof(a, 0)->proof, std::string(256, 'p'));
  // After its end a job takes no proof (the queue ended the leases; the
  // journal keeps the first).
  EXPECT_NE(l.complete(a, 0, this->proof_of(a, 0, 'r')).stored, ProofStored::kStored);
}

}  // namespace
