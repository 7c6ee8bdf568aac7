#include "supervisor/ledger/pg_schema.hpp"

#include "sql/pg_migration_1.sql.hpp"
#include "sql/pg_migration_2.sql.hpp"
#include "sql/pg_migration_3.sql.hpp"
#include "sql/pg_migration_4.sql.hpp"

namespace zkfarm::supervisor {

const std::vector<PgMigration>& pg_migrations() {
  // The SQL of each is in sql/pg_migration_N.sql, embedded at build time.
  static const std::vector<PgMigration> m = {{1, 1, sql::pg_migration_1::text},
                                             {2, 1, sql::pg_migration_2::text},
                                             {3, 1, sql::pg_migration_3::text},
                                             {4, 1, sql::pg_migration_4::text}};
  return m;
}

std::string pg_schema_verdict(int mine, int db_version, int db_min_reader) {
  if (db_version <= mine) return {};
  if (db_min_reader <= mine) return {};  // a newer, additive schema: this host still reads it
  return "the queue's schema is version " + std::to_string(db_version) + " and needs hosts of schema " +
         std::to_string(db_min_reader) + " or later; this zkfarmd writes schema " + std::to_string(mine) +
         ": upgrade this host's zkfarm";
}

}  // namespace zkfarm::supervisor
