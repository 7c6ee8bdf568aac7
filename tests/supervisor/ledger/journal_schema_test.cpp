// The journal's numbered migrations (supervisor/ledger/journal_schema.*) and
// the rule both stores follow (schema_migrations.*): a new journal records
// every migration, one of zkfarmd before numbered migrations is taken forward
// at its first write, and a newer journal opens only while its min_reader
// allows this zkfarmd.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <string>

#include "supervisor/ledger/journal.hpp"
#include "supervisor/ledger/journal_schema.hpp"
#include "supervisor/ledger/pg_schema.hpp"
#include "supervisor/ledger/schema_migrations.hpp"
#include "journal_test_util.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {

using namespace journal_test;
using test::TempDir;

TEST(SchemaMigrations, AStoreOpensUnlessItIsNewerAndItsReadersMustBeNewerToo) {
  EXPECT_EQ(schema_verdict("the journal", 1, 1, 1), "");
  EXPECT_EQ(schema_verdict("the journal", 2, 1, 1), "");  // older store: migrated forward
  EXPECT_EQ(schema_verdict("the journal", 2, 0, 0), "");  // a new one
  EXPECT_EQ(schema_verdict("the journal", 2, 5, 2), "");  // newer, additive since 2
  // Numbers that disagree (no rule writes them): min_reader alone decides.
  EXPECT_NE(schema_verdict("the journal", 2, 1, 3), "");
  const std::string refused = schema_verdict("the queue", 2, 5, 3);
  EXPECT_NE(refused.find("the queue's schema is version 5"), std::string::npos) << refused;
  EXPECT_NE(refused.find("upgrade this host"), std::string::npos) << refused;
}

TEST(SchemaMigrations, EachStoresListIsNumberedInOrderWithMinReadersThatNeverGoBack) {
  EXPECT_TRUE(migrations_well_formed(journal_migrations()));
  EXPECT_EQ(int(journal_migrations().size()), kJournalSchemaVersion);
  EXPECT_TRUE(migrations_well_formed(pg_migrations()));
  EXPECT_EQ(int(pg_migrations().size()), kPgSchemaVersion);
  const char* sql = "SELECT 1";
  EXPECT_FALSE(migrations_well_formed({{1, 1, sql}, {3, 1, sql}}));  // a gap
  EXPECT_FALSE(migrations_well_formed({{2, 1, sql}}));               // not from 1
  EXPECT_FALSE(migrations_well_formed({{1, 1, sql}, {2, 3, sql}}));  // a reader newer than the schema
  EXPECT_FALSE(migrations_well_formed({{1, 1, sql}, {2, 2, sql}, {3, 1, sql}}));  // min_reader going back
  EXPECT_FALSE(migrations_well_formed({{1, 1, nullptr}}));
  EXPECT_TRUE(migrations_well_formed({{1, 1, sql}, {2, 1, sql}, {3, 3, sql}}));
}

TEST(JournalSchema, ANewJournalRecordsEveryMigrationAndKeepsItsMinReaderInUserVersion) {
  TempDir dir("zkfarm-journal-schema");
  const std::string db = dir / "journal.sqlite";
  { Journal j(db); j.add_job(make_job(1)); }
  EXPECT_EQ(raw_sql(db, "SELECT group_concat(version || ':' || min_reader, ',') FROM schema_migrations"), "1:1,2:1,3:1");
  EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM schema_migrations WHERE applied_ms > 0"), "3");
  EXPECT_EQ(raw_sql(db, "PRAGMA user_version"), "1");  // what zkfarmd of schema 1 compares: it still opens this
  // Every object of migration 2 is there.
  EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM sqlite_master WHERE name IN ('meta', 'job_meta', 'job_inputs', "
                        "'partition_inputs', 'circuits', 'acknowledged', 'generator_inputs', 'generator_graphs', "
                        "'jobs_finished')"),
            "9");
}

TEST(JournalSchema, AJournalFromBeforeNumberedMigrationsIsTakenForwardAtItsFirstWrite) {
  TempDir dir("zkfarm-journal-schema");
  const std::string db = dir / "journal.sqlite";
  { Journal j(db); j.add_job(make_job(1)); }
  // As zkfarmd of the first schema 1 left it: no record of migrations, and
  // only part of what migration 2 makes.
  raw_sql(db, "DROP TABLE schema_migrations");
  raw_sql(db, "DROP TABLE meta");
  raw_sql(db, "DROP INDEX jobs_finished");
  for (const char* column : {"queue_ms", "verify_ms", "delivery_ms"})  // migration 3's
    raw_sql(db, std::string("ALTER TABLE proofs DROP COLUMN ") + column);
  {
    Journal j(db);
    EXPECT_TRUE(j.writable()) << j.last_error();
    EXPECT_EQ(j.load().size(), 1u);
  }
  EXPECT_EQ(raw_sql(db, "SELECT group_concat(version, ',') FROM schema_migrations"), "2,3");  // 1 was there already
  EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM pragma_table_info('proofs') WHERE name IN ('queue_ms', 'verify_ms', "
                        "'delivery_ms')"),
            "3");
  EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM sqlite_master WHERE name IN ('meta', 'jobs_finished')"), "2");
  EXPECT_EQ(raw_sql(db, "PRAGMA user_version"), "1");
}

// A journal of schema 2 whose migration 3 cannot run yet (another
// connection holds the write lock at open, as an operator's sqlite3 might; a
// full disk likewise): its proofs are still read, with the times it keeps,
// and the next write takes it to 3.
TEST(JournalSchema, AProofIsReadBeforeMigration3CouldRunAndTheNextWriteRunsIt) {
  TempDir dir("zkfarm-journal-schema");
  const std::string db = dir / "journal.sqlite";
  uint64_t a = 0;
  {
    Journal j(db);
    a = j.add_job(make_job(1));
    ASSERT_EQ(j.add_proof(a, 0, rec(std::string(256, '\x5a'), 1, 40, 90)), ProofStored::kStored);
  }
  for (const char* column : {"queue_ms", "verify_ms", "delivery_ms"})  // as schema 2 left it
    raw_sql(db, std::string("ALTER TABLE proofs DROP COLUMN ") + column);
  raw_sql(db, "DELETE FROM schema_migrations WHERE version = 3");
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  Journal j(db);  // migration 3 waits for the lock, then gives up: the journal opens for reads
  sqlite3_exec(lock, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(lock);
  const PartitionTiming kept{40, std::nullopt, 90, std::nullopt, std::nullopt};
  ASSERT_TRUE(j.proof(a, 0).has_value()) << j.last_error();
  EXPECT_EQ(j.proof(a, 0)->timing, kept);
  EXPECT_EQ(raw_sql(db, "SELECT max(version) FROM schema_migrations"), "2");
  EXPECT_TRUE(j.writable()) << j.last_error();
  EXPECT_EQ(raw_sql(db, "SELECT max(version) FROM schema_migrations"), "3");
  EXPECT_EQ(j.proof(a, 0)->timing, kept);
}

TEST(JournalSchema, ANewerAdditiveJournalOpensAndOneThatNeedsNewerReadersIsRefusedUntouched) {
  TempDir dir("zkfarm-journal-schema");
  const std::string db = dir / "journal.sqlite";
  { Journal j(db); j.add_job(make_job(1)); }
  const std::string next = std::to_string(kJournalSchemaVersion + 1);
  // A newer zkfarmd's additive migration: this one goes on with the journal.
  raw_sql(db, "CREATE TABLE later_additions (x INTEGER)");
  raw_sql(db, "INSERT INTO schema_migrations VALUES (" + next + ", 1, 1)");
  {
    Journal j(db);
    EXPECT_TRUE(j.writable()) << j.last_error();
    EXPECT_EQ(j.load().size(), 1u);
  }
  EXPECT_EQ(raw_sql(db, "SELECT max(version) FROM schema_migrations"), next);  // not rolled back or re-run
  // One that needs readers of its own schema: refused, with the fix named.
  raw_sql(db, "UPDATE schema_migrations SET min_reader = " + next + " WHERE version = " + next);
  raw_sql(db, "PRAGMA user_version = " + next);
  try {
    Journal j(db);
    FAIL() << "an older zkfarmd opened a journal whose readers must be newer";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find("upgrade this host"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(db), std::string::npos) << e.what();
  }
  EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM jobs"), "1");
}

// Found in review: a journal without schema_migrations whose user_version
// asks for newer readers was read as version 1, migrated, and its
// user_version lowered to 1, removing the older zkfarmd's refusal.
TEST(JournalSchema, AMinReaderAboveThisZkfarmdIsRefusedEvenWithoutAMigrationsTable) {
  TempDir dir("zkfarm-journal-schema");
  const std::string db = dir / "journal.sqlite";
  { Journal j(db); j.add_job(make_job(1)); }
  raw_sql(db, "DROP TABLE schema_migrations");
  raw_sql(db, "PRAGMA user_version = " + std::to_string(kJournalSchemaVersion + 1));
  EXPECT_THROW(Journal j(db), JournalError);
  EXPECT_EQ(raw_sql(db, "PRAGMA user_version"), std::to_string(kJournalSchemaVersion + 1));  // untouched
}

// Found in review: another program's SQLite file with a schema_migrations
// table of its own got SQLite's error instead of "not a zkfarm journal".
TEST(JournalSchema, AnotherProgramsMigrationsTableIsNotReadAndItsFileIsRefusedByName) {
  TempDir dir("zkfarm-journal-schema");
  const std::string db = dir / "other.sqlite";
  raw_sql(db, "CREATE TABLE schema_migrations (v TEXT)");
  try {
    Journal j(db);
    FAIL() << "another program's database opened as a journal";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find("not a zkfarm journal"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zkfarm::supervisor
