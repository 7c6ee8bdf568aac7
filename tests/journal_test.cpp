// The journal under faults: durability across SIGKILL, the WAL check at open
// (supervisor/ledger/wal_check.*) on real WAL files written by the Journal and
// damaged on purpose, a real full disk (a small tmpfs), SQLite's own page cap,
// injected I/O errors, pruning by index, and the schema additions.
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "supervisor/ledger/acked_mark.hpp"
#include "supervisor/ledger/journal.hpp"
#include "supervisor/ledger/wal_check.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {

// A proof record of `proof` with its times (ms).
ProofRecord rec(const std::string& proof, int64_t proved_ms, int64_t synth_ms, int64_t prove_ms) {
  ProofRecord r;
  r.proof = proof;
  r.proved_ms = proved_ms;
  r.synth_ms = synth_ms;
  r.prove_ms = prove_ms;
  return r;
}

using test::read_file;
using test::TempDir;

// A job with `parts` partitions whose public.json is `pad` bytes long (and
// names the job's tag, so that contents can be checked after a reload).
Job make_job(int tag, int parts = 2, size_t pad = 16) {
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

std::set<uint64_t> ids_of(const std::vector<Job>& jobs) {
  std::set<uint64_t> s;
  for (const Job& j : jobs) s.insert(j.id);
  return s;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// Runs `body` in a child process that then dies of SIGKILL, as a killed
// zkfarmd does: whatever SQLite wrote stays in the files as it was.
void in_killed_child(const std::function<void()>& body) {
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
void killed_after_jobs(const std::string& db, int n) {
  in_killed_child([&] {
    Journal j(db);
    for (int i = 1; i <= n; ++i) j.add_job(make_job(i, 1));
    raise(SIGKILL);  // with the journal open: its WAL stays as it is
  });
}

// Runs one SQL statement on the file through a connection of its own (as an
// operator's sqlite3 would); returns the last column of every row, joined by
// newlines ("" for none).
std::string raw_sql(const std::string& db, const std::string& sql) {
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

TEST(Journal, WalModeWithFullSync) {
  TempDir dir("zkfarm-journal");
  Journal j(dir / "journal.sqlite");
  const JournalDurability d = j.durability();
  EXPECT_EQ(d.journal_mode, "wal");
  EXPECT_EQ(d.synchronous, 2);  // FULL: each commit fsynced before add_job returns
}

// Issue 32: a circuit's input signals are journaled by its generator's hash;
// a circuit without them (an older zkfarmd's) reads back with none.
TEST(Journal, ACircuitsInputsComeBackByItsGenerator) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  {
    Journal j(db);
    CircuitRecord a{"a", "wasm", "gen1", "k", "/k", "/w", 0, 1, 7, 1};
    a.inputs = R"([{"hash":"af63dc4c8601ec8c","size":1}])";
    j.put_circuit(a);
    CircuitRecord b{"b", "wasm", "gen2", "k", "/k", "/w", 0, 1, 7, 1};
    j.put_circuit(b);
    CircuitRecord c = a;  // another name, the same generator
    c.name = "c";
    c.inputs.clear();
    j.put_circuit(c);
  }
  Journal j(db);
  const auto all = j.circuits();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].inputs, R"([{"hash":"af63dc4c8601ec8c","size":1}])");
  EXPECT_EQ(all[1].inputs, "");
  EXPECT_EQ(all[2].inputs, all[0].inputs) << "the generator's inputs, whoever added it";
  EXPECT_TRUE(j.remove_circuit("a"));
  EXPECT_EQ(j.circuits().at(1).inputs, all[0].inputs) << "kept while a circuit has that generator";
  EXPECT_TRUE(j.remove_circuit("c"));
  EXPECT_EQ(j.circuits().size(), 1u);
}

TEST(Journal, RoundTripOfJobsProofsAndStates) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  uint64_t a, b;
  {
    Journal j(db);
    a = j.add_job(make_job(7, 3));
    b = j.add_job(make_job(8, 1));
    EXPECT_EQ(b, a + 1);
    const std::string proof(256, '\x5a');
    EXPECT_TRUE(j.add_proof(a, 1, rec(proof, 1'700'000'000'500, 40, 90)) == ProofStored::kStored);
    EXPECT_EQ(j.add_proof(a, 1, rec(std::string(256, '\x01'), 1'700'000'000'600, 1, 1)), ProofStored::kDuplicate);  // once only
    try {
      j.add_proof(a, 9, rec(proof, 1, 1, 1));
      FAIL() << "a proof of a partition that does not exist was journaled";
    } catch (const JournalError& e) {  // a fault of the request: retrying cannot help
      EXPECT_EQ(e.sqlite_code() & 0xff, SQLITE_CONSTRAINT) << e.what();
      EXPECT_FALSE(e.storage_fault());
    }
    j.set_started(a, 1'700'000'000'100);
    j.set_started(a, 1'700'000'000'200);  // kept: the first one counts
    j.finish_job(b, JobState::kFailed, "partition 0: bad", 1'700'000'000'700);
  }
  Journal j(db);
  const std::vector<Job> jobs = j.load();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, a);
  EXPECT_EQ(jobs[0].zkey, "/keys/k7.zkey");
  EXPECT_EQ(jobs[0].slot_bytes, 4103u);
  EXPECT_EQ(jobs[0].started_ms, 1'700'000'000'100);
  EXPECT_EQ(jobs[0].state, JobState::kRunning);  // one of three proved
  ASSERT_EQ(jobs[0].parts.size(), 3u);
  EXPECT_EQ(jobs[0].parts[1].state, PartState::kDone);
  EXPECT_EQ(jobs[0].parts[1].synth_ms, 40);
  EXPECT_EQ(jobs[0].parts[2].state, PartState::kQueued);
  EXPECT_EQ(jobs[0].parts[2].wtns, "/w/7-2.wtns");
  EXPECT_EQ(jobs[1].state, JobState::kFailed);
  EXPECT_EQ(jobs[1].error, "partition 0: bad");
  EXPECT_EQ(jobs[1].parts[0].state, PartState::kFailed);
  const auto p = j.proof(a, 1);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->proof, std::string(256, '\x5a'));
  EXPECT_EQ(p->public_json, make_job(7).parts[1].public_json);
  EXPECT_FALSE(j.proof(a, 0).has_value());
}

// ---- the WAL check ----------------------------------------------------------

// Frame i (1-based) of a WAL with this page size starts here.
uint64_t frame_offset(uint64_t i, uint32_t page) { return 32 + (i - 1) * (24 + uint64_t(page)); }

TEST(WalCheck, NoWalAndAGoodWal) {
  TempDir dir("zkfarm-wal");
  const std::string db = dir / "journal.sqlite";
  EXPECT_FALSE(check_wal(db + "-wal").exists);
  killed_after_jobs(db, 5);
  const WalReport r = check_wal(db + "-wal");
  ASSERT_TRUE(r.exists);
  EXPECT_FALSE(r.damage.has_value());
  EXPECT_EQ(r.commits, 5u);  // the open truncated the WAL: only the five add_jobs are in it
  EXPECT_EQ(r.committed_frames, r.valid_frames);
  EXPECT_EQ(r.uncommitted_frames, 0u);
  EXPECT_EQ(r.leftover_frames, 0u);
  EXPECT_EQ(r.torn_bytes, 0u);
  EXPECT_EQ(r.file_bytes, frame_offset(r.valid_frames + 1, r.page_size));
  Journal j(db);
  EXPECT_EQ(ids_of(j.load()), (std::set<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(j.load()[4].parts[0].public_json, make_job(5).parts[0].public_json);
}

TEST(WalCheck, AByteFlippedInTheLastFrameIsRefused) {
  TempDir dir("zkfarm-wal");
  const std::string db = dir / "journal.sqlite", wal = db + "-wal";
  killed_after_jobs(db, 5);
  const WalReport good = check_wal(wal);
  ASSERT_GT(good.valid_frames, 5u);
  std::string bytes = read_file(wal);
  const uint64_t last = good.valid_frames, at = frame_offset(last, good.page_size);
  bytes[at + 24 + good.page_size / 2] ^= 0x10;  // inside the page of the last (commit) frame
  write_file(wal, bytes);
  const std::string main_before = read_file(db);

  const WalReport bad = check_wal(wal);
  ASSERT_TRUE(bad.damage.has_value());
  EXPECT_EQ(bad.damage->frame, last);
  EXPECT_EQ(bad.damage->offset, at);
  EXPECT_NE(bad.damage->fault.find("checksum"), std::string::npos);
  try {
    Journal j(db);
    FAIL() << "a damaged committed frame was accepted";
  } catch (const JournalError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(wal + ": frame " + std::to_string(last) + " "), std::string::npos) << m;
    EXPECT_NE(m.find("mv " + wal), std::string::npos) << m;
    EXPECT_NE(m.find("truncate -s " + std::to_string(at) + " " + wal), std::string::npos) << m;
    EXPECT_NE(m.find("may then be lost"), std::string::npos) << m;
  }
  EXPECT_EQ(read_file(wal), bytes);  // refused without touching either file
  EXPECT_EQ(read_file(db), main_before);

  // What the check prevents: SQLite alone opens it and silently drops job 5.
  EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM jobs"), "4");
}

TEST(WalCheck, DamagedSaltsAndHeaderAreRefused) {
  TempDir dir("zkfarm-wal");
  const std::string db = dir / "journal.sqlite", wal = db + "-wal";
  killed_after_jobs(db, 3);
  const std::string good = read_file(wal);
  const WalReport r = check_wal(wal);

  std::string salt = good;
  salt[frame_offset(2, r.page_size) + 9] ^= 0x01;  // salt-1 of frame 2: not covered by the checksum
  write_file(wal, salt);
  const WalReport s = check_wal(wal);
  ASSERT_TRUE(s.damage.has_value());
  EXPECT_EQ(s.damage->frame, 2u);
  EXPECT_NE(s.damage->fault.find("salt"), std::string::npos);
  EXPECT_THROW(Journal{db}, JournalError);

  std::string header = good;
  header[10] ^= 0x01;  // the page size
  write_file(wal, header);
  const WalReport h = check_wal(wal);
  ASSERT_TRUE(h.damage.has_value());
  EXPECT_EQ(h.damage->frame, 0u);
  try {
    Journal j(db);
    FAIL() << "a damaged WAL header was accepted";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find(wal + ": the header is damaged"), std::string::npos) << e.what();
  }
}

// The second pass's finding: damage that cuts the WAL after an acknowledged
// commit (a torn tail, a lost last frame, a zeroed header, zeroed first bytes,
// salts overwritten with data) reads, byte for byte, like a kill in the middle
// of an unacknowledged write: check_wal sees no damage and SQLite silently
// drops the job. The acknowledged mark (acked_mark.hpp) refuses each.
TEST(WalCheck, AnAcknowledgedCommitCutFromTheWalIsRefusedInEveryForm) {
  struct Damage {
    const char* name;
    std::function<void(std::string& wal, uint64_t last_at, uint32_t page)> apply;
  };
  const std::vector<Damage> damages = {
      {"truncated mid-frame", [](std::string& w, uint64_t at, uint32_t page) { w.resize(at + (24 + page) / 2); }},
      {"last frame dropped", [](std::string& w, uint64_t at, uint32_t) { w.resize(at); }},
      {"last frame's header zeroed", [](std::string& w, uint64_t at, uint32_t) { std::fill_n(w.begin() + at, 24, 0); }},
      {"last frame's first 512 bytes zeroed",
       [](std::string& w, uint64_t at, uint32_t) { std::fill_n(w.begin() + at, 512, 0); }},
      // Salts and checksums (bytes 8..23) overwritten with bytes of a page:
      // the frame then reads as one of an older generation. (Salts alone
      // damaged, with the chain intact, check_wal already refuses.)
      {"last frame's salts and checksums overwritten with data",
       [](std::string& w, uint64_t at, uint32_t page) {
         for (int i = 0; i < 16; ++i) w[at + 8 + i] = char(w[at + 24 + page / 2 + i] ^ 0x5a);
       }},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.name);
    TempDir dir("zkfarm-wal");
    const std::string db = dir / "journal.sqlite", wal = db + "-wal";
    killed_after_jobs(db, 5);  // five jobs, each acknowledged (add_job returned)
    const WalReport full = check_wal(wal);
    ASSERT_EQ(full.commits, 5u);
    std::string bytes = read_file(wal);
    d.apply(bytes, frame_offset(full.valid_frames, full.page_size), full.page_size);
    write_file(wal, bytes);
    const WalReport cut = check_wal(wal);
    EXPECT_FALSE(cut.damage.has_value()) << "the WAL's bytes alone show no damage: that is the finding";
    const std::string main_before = read_file(db), mark_before = read_file(db + "-acked");
    try {
      Journal j(db);
      FAIL() << "the journal opened without acknowledged job 5";
    } catch (const JournalError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(db + ": 1 acknowledged transaction (submitted jobs, added circuits) missing"), std::string::npos)
          << m;
      EXPECT_NE(m.find(db + "-acked records 5 acknowledged, the journal holds 4"), std::string::npos) << m;
      EXPECT_NE(m.find("mv " + db + "-acked"), std::string::npos) << m;
    }
    EXPECT_EQ(read_file(wal), bytes);  // refused without touching any file
    EXPECT_EQ(read_file(db), main_before);
    EXPECT_EQ(read_file(db + "-acked"), mark_before);
    // What the mark prevents: SQLite alone opens it and silently drops job 5.
    EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM jobs"), "4");
    // The way out the message gives: the mark moved aside, the journal opens with what it holds.
    ASSERT_EQ(::rename((db + "-acked").c_str(), (db + "-acked.lost").c_str()), 0);
    Journal j(db);
    EXPECT_EQ(ids_of(j.load()), (std::set<uint64_t>{1, 2, 3, 4}));
  }
}

// What the mark must not refuse: a kill in the middle of a write that was
// never acknowledged (its commit frame torn before the mark was written).
TEST(WalCheck, ATornUnacknowledgedWriteOpensWithEveryAcknowledgedJob) {
  TempDir dir("zkfarm-wal");
  const std::string db = dir / "journal.sqlite", wal = db + "-wal";
  std::string mark_after_four;
  in_killed_child([&] {
    Journal j(db);
    for (int i = 1; i <= 4; ++i) j.add_job(make_job(i, 1));
    mark_after_four = read_file(db + "-acked");
    // Job 5's frames reach the WAL, the kill comes before its mark: write
    // the mark of four back to stand for "killed between commit and mark".
    j.add_job(make_job(5, 1));
    write_file(db + "-acked", mark_after_four);
    raise(SIGKILL);
  });
  const WalReport full = check_wal(wal);
  const uint64_t cut = full.file_bytes - (24 + full.page_size) / 2;  // and the kill came in its last frame's write
  ASSERT_EQ(truncate(wal.c_str(), off_t(cut)), 0);
  const WalReport torn = check_wal(wal);
  EXPECT_FALSE(torn.damage.has_value());
  EXPECT_EQ(torn.commits, 4u);
  EXPECT_EQ(torn.torn_bytes, (24 + full.page_size) - (24 + full.page_size) / 2);

  Journal j(db);
  EXPECT_EQ(ids_of(j.load()), (std::set<uint64_t>{1, 2, 3, 4}));  // job 5 was never acknowledged
  EXPECT_EQ(check_wal(wal).file_bytes, 0u);  // the open checkpointed and truncated the WAL
  EXPECT_GT(j.add_job(make_job(6)), 4u);
  EXPECT_EQ(j.load().size(), 5u);
}

TEST(AckedMark, SlotsSurviveATornWriteAndAMissingJournalIsRefused) {
  TempDir dir("zkfarm-mark");
  const std::string path = dir / "m";
  EXPECT_FALSE(read_acked_mark(path).exists);
  {
    AckedMark m(path);
    EXPECT_EQ(m.write(7), "");
    EXPECT_EQ(m.write(8), "");
  }
  EXPECT_EQ(read_acked_mark(path).seq, std::optional<uint64_t>(8));
  std::string bytes = read_file(path);
  ASSERT_EQ(bytes.size(), 64u);
  bytes[0 * 32 + 9] ^= 1;  // slot of 8 (even) torn: the mark falls back to 7, never forward
  write_file(path, bytes);
  EXPECT_EQ(read_acked_mark(path).seq, std::optional<uint64_t>(7));
  bytes[1 * 32 + 3] ^= 1;  // both damaged: a mark that says nothing (the check is skipped)
  write_file(path, bytes);
  const AckedMarkRead none = read_acked_mark(path);
  EXPECT_TRUE(none.exists);
  EXPECT_FALSE(none.seq.has_value());
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::symlink("/etc/passwd", path.c_str()), 0);
  EXPECT_THROW(read_acked_mark(path), JournalError);  // never followed
  EXPECT_THROW(AckedMark{path}, JournalError);

  // A journal removed (or never there) beside a mark that records jobs.
  const std::string db = dir / "journal.sqlite";
  killed_after_jobs(db, 2);
  ASSERT_EQ(::unlink(db.c_str()), 0);
  ::unlink((db + "-wal").c_str());
  ::unlink((db + "-shm").c_str());
  try {
    Journal j(db);
    FAIL() << "an empty journal opened beside a mark of 2 acknowledged jobs";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find("is missing or empty"), std::string::npos) << e.what();
  }
}

TEST(WalCheck, LeftoversOfAnOlderGenerationOpen) {
  TempDir dir("zkfarm-wal");
  const std::string db = dir / "journal.sqlite", wal = db + "-wal";
  in_killed_child([&] {
    Journal j(db);
    for (int i = 1; i <= 4; ++i) j.add_job(make_job(i, 1));
    // An older zkfarmd (SQLite's PASSIVE autocheckpoint, no size limit): the
    // next write starts the WAL again from its start, with new salts, over
    // the frames of the previous generation.
    sqlite3* c = nullptr;
    if (sqlite3_open(db.c_str(), &c) != SQLITE_OK) throw std::runtime_error("open");
    const char* sql =
        "PRAGMA wal_checkpoint(PASSIVE);"
        "INSERT INTO jobs (priority, zkey, out, slot_bytes, n_public, state, submitted_ms)"
        " VALUES (1, '/k.zkey', '/o', 1, 1, 'queued', 1);";
    if (sqlite3_exec(c, sql, nullptr, nullptr, nullptr) != SQLITE_OK) throw std::runtime_error(sqlite3_errmsg(c));
    raise(SIGKILL);
  });
  const WalReport r = check_wal(wal);
  EXPECT_FALSE(r.damage.has_value());
  EXPECT_GE(r.commits, 1u);
  EXPECT_GT(r.leftover_frames, 0u);  // frames of the first generation after the new one
  Journal j(db);
  EXPECT_EQ(ids_of(j.load()), (std::set<uint64_t>{1, 2, 3, 4, 5}));
}

TEST(WalCheck, UnreadableWalIsAnError) {
  TempDir dir("zkfarm-wal");
  const std::string wal = dir / "journal.sqlite-wal";
  std::filesystem::create_directory(wal);  // exists, cannot be read as a file
  try {
    check_wal(wal);
    FAIL() << "a directory was read as a WAL";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find(wal), std::string::npos) << e.what();
  }
}

// ---- SIGKILL ----------------------------------------------------------------

TEST(Journal, AcknowledgedJobsSurviveSigkill) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  std::set<uint64_t> acknowledged;
  std::mt19937 rng(12345);
  for (int round = 0; round < 5; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // a supervisor accepting jobs as fast as it can
      close(fds[0]);
      try {
        Journal j(db);
        for (int tag = 0;; ++tag) {
          const uint64_t id = j.add_job(make_job(tag, 2));
          if (write(fds[1], &id, sizeof id) != sizeof id) _exit(5);  // "accepted", told to the client
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        _exit(3);
      }
    }
    close(fds[1]);
    const size_t want = acknowledged.size() + 10 + rng() % 40;
    uint64_t id;
    while (acknowledged.size() < want && read(fds[0], &id, sizeof id) == sizeof id) acknowledged.insert(id);
    kill(pid, SIGKILL);
    while (read(fds[0], &id, sizeof id) == sizeof id) acknowledged.insert(id);  // told before it died
    close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited " << WEXITSTATUS(status) << " in round " << round;

    Journal j(db);  // the WAL the kill left passes the check
    const std::vector<Job> jobs = j.load();
    const std::set<uint64_t> loaded = ids_of(jobs);
    for (uint64_t a : acknowledged) EXPECT_TRUE(loaded.count(a)) << "acknowledged job " << a << " lost in round " << round;
    for (const Job& job : jobs) {
      ASSERT_EQ(job.parts.size(), 2u);
      EXPECT_EQ(job.parts[1].wtns.rfind("/w/", 0), 0u);
    }
  }
}

// ---- a full disk ------------------------------------------------------------

// Writes into `path` until the filesystem refuses (ENOSPC).
void fill(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  ASSERT_GE(fd, 0);
  std::vector<char> block(65536, 'x');
  for (size_t n = block.size(); n > 0; n /= 2)
    while (write(fd, block.data(), n) == ssize_t(n)) {
    }
  ASSERT_EQ(errno, ENOSPC);
  close(fd);
}

// A tmpfs of 512 KiB mounted for the test (root only; skipped otherwise).
struct SmallDisk {
  TempDir dir{"zkfarm-fulldisk"};
  std::string mnt = dir / "mnt";
  std::string error;
  bool mounted = false;
  SmallDisk() {
    std::filesystem::create_directory(mnt);
    if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=512k,mode=0700") == 0)
      mounted = true;
    else
      error = std::strerror(errno);
  }
  ~SmallDisk() {
    if (mounted) umount2(mnt.c_str(), MNT_DETACH);
  }
};

TEST(Journal, FullDiskRefusesWritesKeepsReadsAndRecovers) {
  SmallDisk disk;
  if (!disk.mounted) GTEST_SKIP() << "cannot mount a tmpfs here (" << disk.error << "); needs root";
  const std::string db = disk.mnt + "/journal.sqlite", filler = disk.mnt + "/filler";
  std::set<uint64_t> acknowledged;
  {
    Journal j(db);
    for (int i = 0; i < 3; ++i) acknowledged.insert(j.add_job(make_job(i)));
    fill(filler);
    std::string fault;
    for (int i = 3; i < 200 && fault.empty(); ++i) {
      try {
        acknowledged.insert(j.add_job(make_job(i)));
      } catch (const JournalError& e) {
        fault = e.what();
        EXPECT_EQ(e.sqlite_code() & 0xff, SQLITE_FULL) << fault;
        EXPECT_TRUE(e.storage_fault());
      }
    }
    ASSERT_FALSE(fault.empty()) << "add_job never failed on a full disk";
    EXPECT_NE(fault.find(db + ": add_job: database or disk is full"), std::string::npos) << fault;
    EXPECT_EQ(ids_of(j.load()), acknowledged);  // reads go on

    // The probe's clean-up may free the WAL's space (a checkpoint that
    // truncates it); fill that too: the probe must then fail.
    bool writable = true;
    for (int i = 0; i < 5 && writable; ++i) {
      fill(filler);
      writable = j.writable();
    }
    EXPECT_FALSE(writable);
    EXPECT_NE(j.last_error().find("database or disk is full"), std::string::npos) << j.last_error();
    EXPECT_THROW(j.add_job(make_job(500)), JournalError);
    EXPECT_EQ(ids_of(j.load()), acknowledged);

    ASSERT_EQ(unlink(filler.c_str()), 0);
    EXPECT_TRUE(j.writable()) << j.last_error();
    EXPECT_EQ(j.last_error(), "");
    acknowledged.insert(j.add_job(make_job(501)));
  }
  Journal j(db);
  EXPECT_EQ(ids_of(j.load()), acknowledged);  // nothing acknowledged was lost, nothing refused is there
}

TEST(Journal, PageCapIsAFullDiskAndTheJournalStaysUsable) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  std::set<uint64_t> acknowledged;
  {
    Journal j(db);
    acknowledged.insert(j.add_job(make_job(0)));
    j.set_max_pages(1);  // SQLite keeps the current size: no page more
    std::string fault;
    for (int i = 1; i < 100 && fault.empty(); ++i) {
      try {
        acknowledged.insert(j.add_job(make_job(i, 2, 3000)));
      } catch (const JournalError& e) {
        fault = e.what();
        EXPECT_EQ(e.sqlite_code() & 0xff, SQLITE_FULL);
      }
    }
    EXPECT_NE(fault.find(db + ": add_job: database or disk is full (SQLITE_FULL)"), std::string::npos) << fault;
    EXPECT_EQ(j.last_error(), fault);
    EXPECT_EQ(ids_of(j.load()), acknowledged);
    // No transaction was left open: the next write fails for the same reason,
    // and a write that needs no new page goes through.
    try {
      j.add_job(make_job(100, 2, 3000));
      FAIL() << "a write beyond the cap went through";
    } catch (const JournalError& e) {
      EXPECT_NE(std::string(e.what()).find("database or disk is full"), std::string::npos) << e.what();
    }
    j.finish_job(*acknowledged.begin(), JobState::kDone, "", 1'700'000'001'000);
    j.set_max_pages(0);
    acknowledged.insert(j.add_job(make_job(101, 2, 3000)));
  }
  Journal j(db);
  const std::vector<Job> jobs = j.load();
  EXPECT_EQ(ids_of(jobs), acknowledged);
  EXPECT_EQ(jobs.front().state, JobState::kDone);
}

// ---- injected I/O errors ----------------------------------------------------

// A VFS over SQLite's default one that fails writes or syncs on demand.
std::atomic<bool> g_fail_write{false}, g_fail_sync{false};

struct FaultFile {
  sqlite3_file base;
  sqlite3_file* real;  // the default VFS's file, allocated right after this struct
};
sqlite3_vfs* g_real_vfs = nullptr;
sqlite3_io_methods g_methods;

sqlite3_file* real_of(sqlite3_file* f) { return reinterpret_cast<FaultFile*>(f)->real; }

int fault_open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  auto* ff = reinterpret_cast<FaultFile*>(f);
  ff->real = reinterpret_cast<sqlite3_file*>(ff + 1);
  const int rc = g_real_vfs->xOpen(g_real_vfs, name, ff->real, flags, out_flags);
  ff->base.pMethods = rc == SQLITE_OK ? &g_methods : nullptr;
  if (rc == SQLITE_OK && g_methods.iVersion == 0) {
    // Every method delegates; xWrite and xSync fail while their flag is set.
    g_methods = *ff->real->pMethods;
    g_methods.xClose = [](sqlite3_file* f) { return real_of(f)->pMethods->xClose(real_of(f)); };
    g_methods.xRead = [](sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
      return real_of(f)->pMethods->xRead(real_of(f), b, n, o);
    };
    g_methods.xWrite = [](sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
      return g_fail_write ? SQLITE_IOERR_WRITE : real_of(f)->pMethods->xWrite(real_of(f), b, n, o);
    };
    g_methods.xTruncate = [](sqlite3_file* f, sqlite3_int64 n) { return real_of(f)->pMethods->xTruncate(real_of(f), n); };
    g_methods.xSync = [](sqlite3_file* f, int fl) {
      return g_fail_sync ? SQLITE_IOERR_FSYNC : real_of(f)->pMethods->xSync(real_of(f), fl);
    };
    g_methods.xFileSize = [](sqlite3_file* f, sqlite3_int64* n) { return real_of(f)->pMethods->xFileSize(real_of(f), n); };
    g_methods.xLock = [](sqlite3_file* f, int l) { return real_of(f)->pMethods->xLock(real_of(f), l); };
    g_methods.xUnlock = [](sqlite3_file* f, int l) { return real_of(f)->pMethods->xUnlock(real_of(f), l); };
    g_methods.xCheckReservedLock = [](sqlite3_file* f, int* r) {
      return real_of(f)->pMethods->xCheckReservedLock(real_of(f), r);
    };
    g_methods.xFileControl = [](sqlite3_file* f, int op, void* a) {
      return real_of(f)->pMethods->xFileControl(real_of(f), op, a);
    };
    g_methods.xSectorSize = [](sqlite3_file* f) { return real_of(f)->pMethods->xSectorSize(real_of(f)); };
    g_methods.xDeviceCharacteristics = [](sqlite3_file* f) {
      return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
    };
    g_methods.xShmMap = [](sqlite3_file* f, int pg, int sz, int ext, void volatile** p) {
      return real_of(f)->pMethods->xShmMap(real_of(f), pg, sz, ext, p);
    };
    g_methods.xShmLock = [](sqlite3_file* f, int o, int n, int fl) {
      return real_of(f)->pMethods->xShmLock(real_of(f), o, n, fl);
    };
    g_methods.xShmBarrier = [](sqlite3_file* f) { real_of(f)->pMethods->xShmBarrier(real_of(f)); };
    g_methods.xShmUnmap = [](sqlite3_file* f, int d) { return real_of(f)->pMethods->xShmUnmap(real_of(f), d); };
    g_methods.xFetch = [](sqlite3_file* f, sqlite3_int64 o, int n, void** p) {
      return real_of(f)->pMethods->xFetch(real_of(f), o, n, p);
    };
    g_methods.xUnfetch = [](sqlite3_file* f, sqlite3_int64 o, void* p) {
      return real_of(f)->pMethods->xUnfetch(real_of(f), o, p);
    };
  }
  return rc;
}

const char* register_fault_vfs() {
  static sqlite3_vfs vfs = [] {
    g_real_vfs = sqlite3_vfs_find(nullptr);
    sqlite3_vfs v = *g_real_vfs;
    v.szOsFile = int(sizeof(FaultFile)) + g_real_vfs->szOsFile;
    v.zName = "zkfarm-test-faults";
    v.pNext = nullptr;
    v.xOpen = fault_open;
    return v;
  }();
  static const int rc = sqlite3_vfs_register(&vfs, 0);
  EXPECT_EQ(rc, SQLITE_OK);
  return vfs.zName;
}

TEST(Journal, IoErrorsAreErrorsAndTheJournalRecovers) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  std::set<uint64_t> acknowledged;
  {
    Journal j(db, JournalOptions{register_fault_vfs()});
    acknowledged.insert(j.add_job(make_job(1)));
    acknowledged.insert(j.add_job(make_job(2)));

    g_fail_write = true;  // the WAL cannot be written
    try {
      j.add_job(make_job(3));
      FAIL() << "add_job succeeded while every write failed";
    } catch (const JournalError& e) {
      EXPECT_EQ(e.sqlite_code() & 0xff, SQLITE_IOERR) << e.what();
      EXPECT_TRUE(e.storage_fault());
      EXPECT_NE(std::string(e.what()).find(db + ": add_job: disk I/O error"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(j.writable());
    EXPECT_THROW(j.set_started(1, 5), JournalError);
    EXPECT_EQ(ids_of(j.load()), acknowledged);
    g_fail_write = false;
    EXPECT_TRUE(j.writable()) << j.last_error();
    acknowledged.insert(j.add_job(make_job(4)));

    g_fail_sync = true;  // the commit frame is written, its fsync fails
    EXPECT_THROW(j.add_job(make_job(5)), JournalError);
    EXPECT_THROW(j.add_proof(1, 0, rec(std::string(256, 'p'), 1, 1, 1)), JournalError);
    g_fail_sync = false;
    EXPECT_TRUE(j.writable()) << j.last_error();
    EXPECT_TRUE(j.add_proof(1, 0, rec(std::string(256, 'p'), 1, 1, 1)) == ProofStored::kStored);  // the replay of the failed write
    acknowledged.insert(j.add_job(make_job(6)));
    EXPECT_EQ(ids_of(j.load()), acknowledged);
  }
  Journal j(db);
  const std::vector<Job> jobs = j.load();
  EXPECT_EQ(ids_of(jobs), acknowledged);
  std::set<std::string> keys;
  for (const Job& job : jobs) keys.insert(job.zkey);
  // The jobs whose write or fsync failed did not come back.
  EXPECT_EQ(keys, (std::set<std::string>{"/keys/k1.zkey", "/keys/k2.zkey", "/keys/k4.zkey", "/keys/k6.zkey"}));
  EXPECT_TRUE(j.proof(1, 0).has_value());
}

// A commit whose fsync failed wrote all its frames, commit frame included,
// after the WAL's last commit. Left there, a restart would replay the job that
// add_job reported as failed, and a shorter write over its first frames would
// leave complete frames with matching salts and a broken chain behind, which
// the check refuses. The write after a fault therefore starts from an empty WAL.
TEST(Journal, AFailedCommitLeavesNothingInTheWalForARestart) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  const char* vfs = register_fault_vfs();
  in_killed_child([&] {
    Journal j(db, JournalOptions{vfs});
    j.add_job(make_job(1, 1));
    g_fail_sync = true;
    try {
      j.add_job(make_job(2, 40, 3000));  // dozens of frames
      _exit(6);
    } catch (const JournalError&) {
    }
    g_fail_sync = false;
    j.add_job(make_job(3, 1));  // a few frames
    raise(SIGKILL);
  });
  const WalReport r = check_wal(db + "-wal");
  EXPECT_FALSE(r.damage.has_value()) << r.damage->fault;
  EXPECT_EQ(r.commits, 1u);  // the WAL was emptied before job 3's commit
  Journal j(db);
  std::vector<std::string> keys;
  for (const Job& job : j.load()) keys.push_back(job.zkey);
  EXPECT_EQ(keys, (std::vector<std::string>{"/keys/k1.zkey", "/keys/k3.zkey"}));
}

// ---- the main file ----------------------------------------------------------

TEST(Journal, CorruptMainFileIsRefusedUntouched) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  {
    Journal j(db);
    for (int i = 0; i < 20; ++i) j.add_job(make_job(i, 4, 200));
  }  // closed: everything checkpointed into the main file
  std::string bytes = read_file(db);
  const uint32_t page = uint32_t(uint8_t(bytes[16])) << 8 | uint8_t(bytes[17]);
  ASSERT_GE(bytes.size(), 4u * page);
  bytes[page * 2 + 0] = 0x07;  // page 3's b-tree page type: not one of SQLite's
  write_file(db, bytes);
  try {
    Journal j(db);
    FAIL() << "a corrupt journal was opened";
  } catch (const JournalError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(db + ": journal is corrupt"), std::string::npos) << m;
    EXPECT_NE(m.find("restore a backup"), std::string::npos) << m;
  }
  EXPECT_EQ(read_file(db), bytes);
}

// ---- pruning and the schema additions --------------------------------------

TEST(Journal, PruneDeletesFinishedJobsByTheIndex) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  {
    Journal j(db);
    const uint64_t old_done = j.add_job(make_job(1, 2)), old_cancelled = j.add_job(make_job(2, 1));
    const uint64_t recent = j.add_job(make_job(3, 1)), running = j.add_job(make_job(4, 1));
    ASSERT_TRUE(j.add_proof(old_done, 0, rec(std::string(256, 'a'), 1, 1, 1)) == ProofStored::kStored);
    j.finish_job(old_done, JobState::kDone, "", 1'000);
    j.finish_job(old_cancelled, JobState::kCancelled, "", 2'000);
    j.finish_job(recent, JobState::kFailed, "x", 9'000);
    j.set_started(running, 500);
    EXPECT_EQ(j.prune(5'000), 2u);
    EXPECT_EQ(j.prune(5'000), 0u);
    EXPECT_EQ(ids_of(j.load()), (std::set<uint64_t>{recent, running}));
    EXPECT_FALSE(j.proof(old_done, 0).has_value());
  }
  EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM partitions"), "2");  // cascaded
  EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM proofs"), "0");
  const std::string plan = raw_sql(db,
                                   "EXPLAIN QUERY PLAN DELETE FROM jobs WHERE finished_ms > 0 AND finished_ms < 5000 "
                                   "AND state IN ('done', 'failed', 'cancelled')");
  EXPECT_NE(plan.find("USING INDEX jobs_finished"), std::string::npos) << plan;
}

TEST(Journal, AJournalWithoutTheAdditionsGetsThemAtOpen) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  { Journal j(db); j.add_job(make_job(1)); }
  raw_sql(db, "DROP TABLE meta");  // as a journal of the first schema 1 zkfarmd
  raw_sql(db, "DROP INDEX jobs_finished");
  EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM sqlite_master WHERE name IN ('meta', 'jobs_finished')"), "0");
  {
    Journal j(db);
    EXPECT_TRUE(j.writable()) << j.last_error();
    EXPECT_TRUE(j.writable());
    EXPECT_EQ(j.load().size(), 1u);
  }
  EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM sqlite_master WHERE name IN ('meta', 'jobs_finished')"), "2");
  EXPECT_EQ(raw_sql(db, "SELECT probes FROM meta"), "2");
  EXPECT_EQ(raw_sql(db, "PRAGMA user_version"), "1");
}

}  // namespace
}  // namespace zkfarm::supervisor
