#pragma once
// The PostgreSQL queue's schema and its migrations (docs/cluster.md): the
// SQL of migration N is sql/pg_migration_N.sql, embedded at build time.
//
// zkfarm_meta holds two numbers: schema_version, the schema the database
// has, and min_reader_version, the oldest zkfarmd schema that may still use
// it. A migration from N to N+1 must be additive (new tables, new columns
// with defaults, new indexes), so that hosts of version N keep working beside
// hosts of N+1 during a rolling upgrade; it leaves min_reader_version at N.
// A migration that breaks older hosts raises min_reader_version, and an older
// host then refuses to start with a message saying so, instead of writing
// rows the newer hosts misread.
#include <string>
#include <vector>

namespace zkfarm::supervisor {

/// One step of the schema: the SQL that takes version-1 to `version`.
struct PgMigration {
  int version;
  int min_reader;   ///< min_reader_version once applied
  const char* sql;  ///< statements separated by ';', run in one transaction
};

/// The schema this build writes.
inline constexpr int kPgSchemaVersion = 4;

/// Every migration, in order (1 creates the schema).
const std::vector<PgMigration>& pg_migrations();

/// What a host of schema `mine` does with a database at `db_version` whose
/// readers must be at least `db_min_reader`: "" to go on (migrating first
/// when db_version < mine), else why it must not (the operator's fix in it).
std::string pg_schema_verdict(int mine, int db_version, int db_min_reader);

}  // namespace zkfarm::supervisor
