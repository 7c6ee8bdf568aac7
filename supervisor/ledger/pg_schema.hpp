#pragma once
// The PostgreSQL queue's schema as numbered migrations (docs/cluster.md;
// schema_migrations.hpp says the rule both stores follow): the SQL of
// migration N is sql/pg_migration_N.sql, embedded at build time.
// zkfarm_meta holds the two numbers: schema_version and min_reader_version.
#include <string>
#include <vector>

#include "supervisor/ledger/schema_migrations.hpp"

namespace zkfarm::supervisor {

/// The schema this build writes.
inline constexpr int kPgSchemaVersion = 5;

/// Every migration, in order (1 creates the schema).
const std::vector<SchemaMigration>& pg_migrations();

}  // namespace zkfarm::supervisor
