#pragma once
// Numbered schema migrations, the one rule both stores follow (the SQLite
// journal: journal_schema.*; the PostgreSQL queue: pg_schema.*), as River and
// Oban keep theirs: migration N is the file sql/STORE_migration_N.sql,
// embedded at build time and run once, in order, each in one transaction
// with the row that records it.
//
// A store holds two numbers: its schema version (the last migration applied)
// and min_reader, the oldest zkfarmd schema that may still use it. A
// migration from N to N+1 should be additive (new tables, new columns with
// defaults, new indexes) and leave min_reader where it was, so that a zkfarmd
// of schema N keeps working beside one of N+1 (a rolling upgrade, or a
// downgrade). A migration that breaks older readers raises min_reader, and
// an older zkfarmd then refuses the store with a message saying so, instead
// of writing rows the newer one misreads.
#include <string>
#include <vector>

namespace zkfarm::supervisor {

/// One numbered step of a schema: the SQL that takes version−1 to `version`.
struct SchemaMigration {
  int version;      ///< 1 creates the schema; each next one is one more
  int min_reader;   ///< the store's min_reader once this migration is applied
  const char* sql;  ///< statements separated by ';', run in one transaction
};

/// What a zkfarmd of schema `mine` does with `store` (named in the message,
/// e.g. "the journal" or "the queue") at schema `db_version` whose readers
/// must be at least `db_min_reader`: "" to go on (migrating first when
/// db_version < mine) whenever db_min_reader ≤ mine, else why it must not,
/// with the operator's fix.
std::string schema_verdict(const std::string& store, int mine, int db_version, int db_min_reader);

/// Whether `migrations` are numbered 1, 2, … in order with min_reader never
/// above the version it comes with nor below the one before: the rule above,
/// checked by the tests for each store's list.
bool migrations_well_formed(const std::vector<SchemaMigration>& migrations);

}  // namespace zkfarm::supervisor
