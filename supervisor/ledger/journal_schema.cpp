#include "supervisor/ledger/journal_schema.hpp"

#include "sql/journal_migration_1.sql.hpp"
#include "sql/journal_migration_2.sql.hpp"
#include "sql/journal_migration_3.sql.hpp"

namespace zkfarm::supervisor {

const std::vector<SchemaMigration>& journal_migrations() {
  static const std::vector<SchemaMigration> m = {{1, 1, sql::journal_migration_1::text},
                                                 {2, 1, sql::journal_migration_2::text},
                                                 {3, 1, sql::journal_migration_3::text}};
  return m;
}

}  // namespace zkfarm::supervisor
