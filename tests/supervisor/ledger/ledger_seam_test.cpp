// The ledger's seam (supervisor/ledger/ledger.hpp): the durable record is a
// Ledger; claims, leases and hosts are a SharedQueue, which only the store
// several hosts share is. A ledger of one host has no queue part at all,
// instead of queue functions that do nothing.
#include <gtest/gtest.h>

#include <type_traits>

#include "supervisor/ledger/journal.hpp"
#include "supervisor/ledger/pg_queue.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {

static_assert(std::is_base_of_v<Ledger, Journal> && !std::is_base_of_v<SharedQueue, Journal>,
              "the SQLite journal keeps the record of one host and is no shared queue");
static_assert(std::is_base_of_v<Ledger, PgQueue> && std::is_base_of_v<SharedQueue, PgQueue>,
              "the PostgreSQL queue is both");

TEST(LedgerSeam, TheJournalOfOneHostHasNoQueuePart) {
  test::TempDir dir("zkfarm-ledger-seam");
  Journal j(dir / "journal.sqlite");
  Ledger& ledger = j;
  EXPECT_EQ(ledger.queue(), nullptr);
  EXPECT_FALSE(ledger.shared());
}

}  // namespace
}  // namespace zkfarm::supervisor
