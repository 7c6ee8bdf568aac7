#pragma once
// Helpers of the journal's tests (tests/supervisor/ledger/: journal_test.cpp, wal_check_test.cpp, journal_schema_test.cpp, …):
// jobs to journal, a child killed with the journal open, raw SQL on the file.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <vector>

#include "supervisor/ledger/journal.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor::journal_test {


// A proof record of `proof` with its times (ms).
inline ProofRecord rec(const std::string& proof, int64_t proved_ms, int64_t synth_ms, int64_t prove_ms) {
  ProofRecord r;
  r.proof = proof;
  r.proved_ms = proved_ms;
  r.synth_ms = synth_ms;
  r.prove_ms = prove_ms;
  return r;
}

// A job with `parts` partitions whose public.json is `pad` bytes long (and
// names the job's tag, so that contents can be checked after a reload).
inline Job make_job(int tag, int parts = 2, size_t pad = 16) {
  Job j;
  j.priority = Priority::kHigh;
  j.zkey = "/keys/k" + std::to_string(tag) + ".zkey";
  j.out = "/out/" + std::to_string(tag);
  j.slot_bytes = 4096 + uint64_t(tag);
  j.n_public = 1;
  j.submitted_ms = 1'700'000'000'000 + tag;
  for (int i = 0; i < parts; ++i) {
    Partition p;
    p.wtns = "/w/" + std::to_string(tag) + "-" + std::to_string(i) + ".wtns";
    p.public_json = "[\"" + std::to_string(tag) + "\"]" + std::string(pad, ' ');
    j.parts.push_back(p);
  }
  return j;
}

inline std::set<uint64_t> ids_of(const std::vector<Job>& jobs) {
  std::set<uint64_t> s;
  for (const Job& j : jobs) s.insert(j.id);
  return s;
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// Runs `body` in a child process that then dies of SIGKILL, as a killed
// zkfarmd does: whatever SQLite wrote stays in the files as it was.
inline void in_killed_child(const std::function<void()>& body) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) {
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      _exit(3);
    }
    raise(SIGKILL);
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
}

// The WAL of `db` after a child journaled `n` one-partition jobs and was killed.
inline void killed_after_jobs(const std::string& db, int n) {
  in_killed_child([&] {
    Journal j(db);
    for (int i = 1; i <= n; ++i) j.add_job(make_job(i, 1));
    raise(SIGKILL);  // with the journal open: its WAL stays as it is
  });
}

// Runs one SQL statement on the file through a connection of its own (as an
// operator's sqlite3 would); returns the last column of every row, joined by
// newlines ("" for none).
inline std::string raw_sql(const std::string& db, const std::string& sql) {
  sqlite3* c = nullptr;
  EXPECT_EQ(sqlite3_open(db.c_str(), &c), SQLITE_OK);
  std::string rows;
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(c, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(c);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const auto* text = sqlite3_column_text(s, sqlite3_column_count(s) - 1);
    rows += (rows.empty() ? "" : "\n") + std::string(text ? reinterpret_cast<const char*>(text) : "");
  }
  EXPECT_EQ(rc, SQLITE_DONE) << sqlite3_errmsg(c);
  sqlite3_finalize(s);
  sqlite3_close(c);
  return rows;
}

}  // namespace zkfarm::supervisor::journal_test
