#include "supervisor/ledger/schema_migrations.hpp"

namespace zkfarm::supervisor {

std::string schema_verdict(const std::string& store, int mine, int db_version, int db_min_reader) {
  if (db_version <= mine) return {};
  if (db_min_reader <= mine) return {};  // a newer, additive schema: this zkfarmd still reads it
  return store + "'s schema is version " + std::to_string(db_version) + " and needs zkfarmd of schema " +
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
