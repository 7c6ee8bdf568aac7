// The journal under faults: durability across SIGKILL, a real full disk (a
// small tmpfs), SQLite's own page cap, injected I/O errors
// and pruning by index. The WAL check at open and the acknowledged mark:
// wal_check_test.cpp.
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
#include "journal_test_util.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {

using namespace journal_test;
using test::read_file;
using test::TempDir;

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


// Proofs arriving together are stored in one transaction (issue 36): each
// gets the verdict add_proof would give it (a second proof of a partition,
// in the batch or before it, is a duplicate and the first one is kept), and
// a batch with a proof of a partition that does not exist stores nothing.
TEST(Journal, ProofsOfABatchAreStoredTogetherWithTheirOwnVerdicts) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  Journal j(db);
  const uint64_t a = j.add_job(make_job(7, 4));
  EXPECT_EQ(j.add_proof(a, 0, rec(std::string(256, 'x'), 1, 1, 1)), ProofStored::kStored);
  const std::vector<ProofToStore> batch = {{a, 1, rec(std::string(256, '1'), 2, 2, 2)},
                                           {a, 0, rec(std::string(256, 'y'), 3, 3, 3)},  // proved before
                                           {a, 2, rec(std::string(256, '2'), 4, 4, 4)},
                                           {a, 1, rec(std::string(256, 'z'), 5, 5, 5)}};  // twice in the batch
  EXPECT_EQ(j.add_proofs(batch), (std::vector<ProofStored>{ProofStored::kStored, ProofStored::kDuplicate,
                                                           ProofStored::kStored, ProofStored::kDuplicate}));
  EXPECT_EQ(j.proof(a, 0)->proof, std::string(256, 'x'));
  EXPECT_EQ(j.proof(a, 1)->proof, std::string(256, '1'));
  EXPECT_EQ(j.proof(a, 2)->proof, std::string(256, '2'));
  const std::vector<ProofToStore> bad = {{a, 3, rec(std::string(256, '3'), 6, 6, 6)},
                                         {a, 9, rec(std::string(256, '9'), 7, 7, 7)}};
  EXPECT_THROW(j.add_proofs(bad), JournalError);
  EXPECT_FALSE(j.proof(a, 3).has_value()) << "a failed batch stored part of itself";
}

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

// ---- pruning --------------------------------------

// Issue 49 item 4: a proof's stage times survive a restart; delivery comes
// with the job's end; a proof journaled before these times were kept (its
// columns NULL) reads as unknown, not as 0 ms.
TEST(Journal, AProofsStageTimesAreReadBackAndUnknownOnesStayUnknown) {
  TempDir dir("zkfarm-journal");
  const std::string db = dir / "journal.sqlite";
  uint64_t a = 0;
  {
    Journal j(db);
    a = j.add_job(make_job(7, 3));
    ProofRecord r = rec(std::string(256, '\x5a'), 1'700'000'000'500, 40, 90);
    r.queue_ms = 12;
    r.verify_ms = 3;
    for (uint32_t k = 0; k < 3; ++k) ASSERT_EQ(j.add_proof(a, k, r), ProofStored::kStored);
    const std::vector<DeliveryTime> times = {{0, 7}, {1, 8}};  // partition 2's write is not known
    j.record_deliveries(a, times);
  }
  raw_sql(db, "UPDATE proofs SET queue_ms = NULL, verify_ms = NULL WHERE idx = 1");  // as an older zkfarmd wrote it
  Journal j(db);
  EXPECT_EQ(j.proof(a, 0)->timing, (PartitionTiming{40, 12, 90, 3, 7}));
  EXPECT_EQ(j.proof(a, 1)->timing, (PartitionTiming{40, std::nullopt, 90, std::nullopt, 8}));
  EXPECT_EQ(j.proof(a, 2)->timing, (PartitionTiming{40, 12, 90, 3, std::nullopt}));
}

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

// The schema's migrations: tests/supervisor/ledger/journal_schema_test.cpp.

}  // namespace
}  // namespace zkfarm::supervisor
