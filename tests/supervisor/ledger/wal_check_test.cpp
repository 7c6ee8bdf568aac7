// The WAL check at open (supervisor/ledger/wal_check.*) on real WAL files
// written by the Journal and damaged on purpose, and the acknowledged mark
// (supervisor/ledger/acked_mark.*) that catches what no reading of the WAL can.
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
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
#include "journal_test_util.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {

using namespace journal_test;
using test::read_file;
using test::TempDir;
namespace fs = std::filesystem;

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

// Issue 45: the mark itself attacked or lost. (a) Deleted while zkfarmd
// runs: made anew at the next acknowledged write, and said. (b, c) Deleted, or
// both slots overwritten with random bytes, then a kill and a cut WAL tail:
// the open refuses (nothing proves no acknowledged job is missing) with the
// way out, which then works once.
TEST(AckedMark, DeletedWhileRunningItIsMadeAnewAndSaid) {
  TempDir dir("zkfarm-mark");
  const std::string db = dir / "journal.sqlite";
  Journal j(db);
  for (int i = 1; i <= 3; ++i) j.add_job(make_job(i, 1));
  ASSERT_EQ(::unlink((db + "-acked").c_str()), 0);
  j.add_job(make_job(4, 1));
  EXPECT_EQ(read_acked_mark(db + "-acked").seq, std::optional<uint64_t>(4));
  EXPECT_EQ(j.acknowledgement_fault(), "");
  const std::string notice = j.take_acknowledgement_notice();
  EXPECT_NE(notice.find("removed or replaced while zkfarmd ran; made anew"), std::string::npos) << notice;
  EXPECT_EQ(j.take_acknowledgement_notice(), "");  // said once
}

TEST(AckedMark, AMissingOrRandomMarkAndACutWalAreRefusedWithTheWayOut) {
  for (const bool random : {false, true}) {
    SCOPED_TRACE(random ? "both slots random" : "mark deleted");
    TempDir dir("zkfarm-mark");
    const std::string db = dir / "journal.sqlite", wal = db + "-wal", mark = db + "-acked";
    killed_after_jobs(db, 5);
    if (random) {
      std::mt19937_64 rng(7);
      std::string junk(64, '\0');
      for (auto& c : junk) c = char(rng());
      write_file(mark, junk);
    } else {
      ASSERT_EQ(::unlink(mark.c_str()), 0);
    }
    const WalReport full = check_wal(wal);
    ASSERT_EQ(::truncate(wal.c_str(), off_t(full.file_bytes - (24 + full.page_size) / 2)), 0);  // job 5's tail cut
    try {
      Journal j(db);
      FAIL() << "the journal opened without acknowledged job 5 and nothing said";
    } catch (const JournalError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(random ? "the acknowledged mark is damaged" : "the acknowledged mark is missing"),
                std::string::npos) << m;
      EXPECT_NE(m.find(random ? "mv " + mark + " " + mark + ".lost" : "touch " + mark + ".lost"), std::string::npos)
          << m;
    }
    EXPECT_EQ(raw_sql(db, "SELECT count(*) FROM jobs"), "4");  // what SQLite alone would have started with
    // The way out: the operator sets the mark aside; the journal opens once with what it holds.
    if (random) ASSERT_EQ(::rename(mark.c_str(), (mark + ".lost").c_str()), 0);
    else write_file(mark + ".lost", "");
    {
      Journal j(db);
      EXPECT_EQ(ids_of(j.load()), (std::set<uint64_t>{1, 2, 3, 4}));
      EXPECT_NE(j.take_acknowledgement_notice().find("the operator set it aside"), std::string::npos);
      EXPECT_EQ(read_acked_mark(mark).seq, std::optional<uint64_t>(4));  // a new mark, at once
      EXPECT_FALSE(fs::exists(mark + ".lost"));  // used once: kept under another name
    }
    // A later loss of the mark is not accepted by the same file.
    ASSERT_EQ(::unlink(mark.c_str()), 0);
    EXPECT_THROW(Journal{db}, JournalError);
  }
}

TEST(AckedMark, AJournalThatNeverAcknowledgedAnythingOpensWithoutAMark) {
  TempDir dir("zkfarm-mark");
  const std::string db = dir / "journal.sqlite";
  { Journal j(db); }
  ASSERT_FALSE(fs::exists(db + "-acked"));
  Journal j(db);
  EXPECT_EQ(j.add_job(make_job(1, 1)), 1u);
  EXPECT_EQ(read_acked_mark(db + "-acked").seq, std::optional<uint64_t>(1));
}

// (c) A mark that cannot be written: no submit is acknowledged that it would
// not cover. The write fails (rolled back) as a storage fault, the probe
// stays false while it cannot be written, and all works again once it can.
TEST(AckedMark, AMarkThatCannotBeWrittenFailsTheAcknowledgedWrite) {
  TempDir dir("zkfarm-mark");
  const std::string db = dir / "journal.sqlite", mark = db + "-acked";
  Journal j(db);
  j.add_job(make_job(1, 1));
  ASSERT_EQ(::unlink(mark.c_str()), 0);
  ASSERT_EQ(::mkdir(mark.c_str(), 0700), 0);  // something that is not the mark at its name
  try {
    j.add_job(make_job(2, 1));
    FAIL() << "a job was acknowledged that the mark does not cover";
  } catch (const JournalError& e) {
    EXPECT_TRUE(e.storage_fault()) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ids_of(j.load()), (std::set<uint64_t>{1}));  // rolled back
  EXPECT_FALSE(j.writable());
  EXPECT_NE(j.acknowledgement_fault(), "");
  ASSERT_EQ(::rmdir(mark.c_str()), 0);
  EXPECT_TRUE(j.writable());
  EXPECT_EQ(j.acknowledgement_fault(), "");
  const uint64_t id = j.add_job(make_job(3, 1));
  EXPECT_EQ(ids_of(j.load()), (std::set<uint64_t>{1, id}));
  EXPECT_EQ(read_acked_mark(mark).seq, std::optional<uint64_t>(2));
}

// The sweep's (c) as it was done: the mark made immutable (chattr +i) while
// zkfarmd runs. Root on a file system with the flag (ext4, xfs, btrfs) only.
TEST(AckedMark, AnImmutableMarkFailsTheAcknowledgedWriteAndNothingIsAcknowledged) {
  TempDir dir("zkfarm-mark");
  const std::string db = dir / "journal.sqlite", mark = db + "-acked";
  Journal j(db);
  j.add_job(make_job(1, 1));
  auto set_immutable = [&](bool on) {
    const int fd = ::open(mark.c_str(), O_RDONLY | O_CLOEXEC);
    int flags = 0;
    bool done = fd >= 0 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (done) {
      flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
      done = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    if (fd >= 0) ::close(fd);
    return done;
  };
  if (!set_immutable(true)) GTEST_SKIP() << "no immutable flag here (not root, or the file system has none)";
  try {
    j.add_job(make_job(2, 1));
    set_immutable(false);
    FAIL() << "a job was acknowledged that an immutable mark does not cover";
  } catch (const JournalError& e) {
    EXPECT_TRUE(e.storage_fault()) << e.what();
  }
  EXPECT_EQ(ids_of(j.load()), (std::set<uint64_t>{1}));
  EXPECT_FALSE(j.writable());
  ASSERT_TRUE(set_immutable(false));
  EXPECT_TRUE(j.writable());
  j.add_job(make_job(3, 1));
  EXPECT_EQ(read_acked_mark(mark).seq, std::optional<uint64_t>(2));
}

TEST(AckedMark, EveryRefusalOfTheMarkSaysTheWayOut) {
  TempDir dir("zkfarm-mark");
  const std::string path = dir / "journal.sqlite-acked";
  auto said = [&] {
    try {
      read_acked_mark(path);
    } catch (const JournalError& e) {
      return std::string(e.what());
    }
    return std::string("nothing");
  };
  ASSERT_EQ(::symlink("/etc/passwd", path.c_str()), 0);
  EXPECT_NE(said().find("a symbolic link"), std::string::npos) << said();
  EXPECT_NE(said().find("mv " + path + " " + path + ".lost"), std::string::npos) << said();
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_NE(said().find("(a FIFO)"), std::string::npos) << said();
  EXPECT_NE(said().find(".lost"), std::string::npos) << said();
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  EXPECT_NE(said().find("(a folder)"), std::string::npos) << said();
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

}  // namespace
}  // namespace zkfarm::supervisor
