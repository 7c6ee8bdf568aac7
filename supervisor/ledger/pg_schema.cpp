#include "supervisor/ledger/pg_schema.hpp"

#include "sql/pg_migration_1.sql.hpp"
#include "sql/pg_migration_2.sql.hpp"
#include "sql/pg_migration_3.sql.hpp"
#include "sql/pg_migration_4.sql.hpp"
#include "sql/pg_migration_5.sql.hpp"

namespace zkfarm::supervisor {

const std::vector<SchemaMigration>& pg_migrations() {
  // The SQL of each is in sql/pg_migration_N.sql, embedded at build time.
  static const std::vector<SchemaMigration> m = {{1, 1, sql::pg_migration_1::text},
                                             {2, 1, sql::pg_migration_2::text},
                                             {3, 1, sql::pg_migration_3::text},
                                             {4, 1, sql::pg_migration_4::text},
                                             {5, 1, sql::pg_migration_5::text}};
  return m;
}

}  // namespace zkfarm::supervisor
