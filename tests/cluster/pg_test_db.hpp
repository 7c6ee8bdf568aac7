#pragma once
// A database of its own for each PostgreSQL test (pg_queue_test.cpp,
// ledger_contract_test.cpp): the CTest fixture `pg_cluster` starts the server
// (pg_cluster.py) and names its URL in ZKFARM_TEST_PG_URL_FILE.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "supervisor/model/jobs.hpp"

namespace zkfarm::test_pg {

inline std::string base_url() {
  const char* f = std::getenv("ZKFARM_TEST_PG_URL_FILE");
  if (!f) return {};
  std::ifstream in(f);
  std::string url;
  std::getline(in, url);
  return url;
}

// Runs one statement on `url` (test set-up); fails the test on an error.
inline void sql(const std::string& url, const std::string& stmt) {
  PGconn* c = PQconnectdb(url.c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  PGresult* r = PQexec(c, stmt.c_str());
  const auto st = PQresultStatus(r);
  EXPECT_TRUE(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) << stmt << ": " << PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
}

// One value of a query on `url`.
inline std::string value(const std::string& url, const std::string& query) {
  PGconn* c = PQconnectdb(url.c_str());
  PGresult* r = PQexec(c, query.c_str());
  std::string v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) ? PQgetvalue(r, 0, 0) : "?";
  PQclear(r);
  PQfinish(c);
  return v;
}

// A new, empty database on the fixture's server: its URL (and its name in
// *name); "" when the fixture's URL file is not set (not run through ctest).
inline std::string fresh_database(std::string* name = nullptr) {
  const std::string base = base_url();
  if (base.empty()) return {};
  std::random_device rd;
  const std::string db = "t" + std::to_string(rd()) + std::to_string(rd());
  sql(base, "CREATE DATABASE " + db);
  if (name) *name = db;
  return base.substr(0, base.rfind('/') + 1) + db;
}

// A job of `k` witness partitions at `priority`, its files under the shared
// dir "/shared" as a shared queue keeps them; partition i's public signals
// are ["i"].
inline supervisor::Job shared_job(uint32_t k, supervisor::Priority priority = supervisor::Priority::kNormal) {
  supervisor::Job j;
  j.priority = priority;
  j.zkey = "/shared/jobs/tok/k.zkey";
  j.zkey_sha256 = std::string(64, 'a');
  j.zkey_source = "/keys/k.zkey";
  j.out = "/out";
  j.n_public = 1;
  j.slot_bytes = 64;
  j.submitted_ms = 1;
  j.files_dir = "/shared/jobs/tok";
  j.parts.resize(k);
  for (uint32_t i = 0; i < k; ++i) {
    j.parts[i].wtns = "/shared/jobs/tok/" + std::to_string(i) + ".wtns";
    j.parts[i].wtns_sha256 = std::string(64, 'b');
    j.parts[i].public_json = "[\"" + std::to_string(i) + "\"]";
  }
  return j;
}

}  // namespace zkfarm::test_pg
