#include "supervisor/ledger/schema_migrations.hpp"

#include <algorithm>

namespace zkfarm::supervisor {

std::string schema_verdict(const std::string& store, int mine, int db_version, int db_min_reader) {
  // Only min_reader decides: an older store, or a newer additive one, is read
  // here; one whose readers must be newer is refused even where its version
  // reads lower (a store whose two numbers disagree was not written by rule).
  if (db_min_reader <= mine) return {};
  return store + "'s schema is version " + std::to_string(std::max(db_version, db_min_reader)) +
         " and needs zkfarmd of schema " +
         std::to_string(db_min_reader) + " or later; this zkfarmd writes schema " + std::to_string(mine) +
         ": upgrade this host's zkfarm";
}

bool migrations_well_formed(const std::vector<SchemaMigration>& migrations) {
  int min_reader = 1;
  for (size_t i = 0; i < migrations.size(); ++i) {
    const SchemaMigration& m = migrations[i];
    if (m.version != int(i) + 1 || !m.sql || m.min_reader < min_reader || m.min_reader > m.version) return false;
    min_reader = m.min_reader;
  }
  return true;
}

}  // namespace zkfarm::supervisor
