#pragma once
// The SQLite journal's schema as numbered migrations (schema_migrations.hpp
// says the rule): migration N is sql/journal_migration_N.sql. The journal
// records each one applied in its table schema_migrations (version,
// min_reader, applied_ms) and keeps min_reader in PRAGMA user_version too,
// which is what zkfarmd before numbered migrations compared with its own
// schema (1): so a journal of additive migrations still opens there.
// A journal without schema_migrations is at version 1 (its migration 2
// objects, added at open by those older zkfarmd, may be there in part:
// migration 2 creates only what is missing).
#include <vector>

#include "supervisor/ledger/schema_migrations.hpp"

namespace zkfarm::supervisor {

/// The schema this build writes: the last of journal_migrations().
inline constexpr int kJournalSchemaVersion = 3;

/// Every migration of the journal, in order (1 creates the schema).
const std::vector<SchemaMigration>& journal_migrations();

}  // namespace zkfarm::supervisor
