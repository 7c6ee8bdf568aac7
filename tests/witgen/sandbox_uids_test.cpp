// One sandbox uid per build and per generator run (witgen/sandbox_uids.hpp,
// issue 45), with real processes: two leases at once never share a uid; a
// process a build left behind (setsid, in the background) is gone when the
// lease is given back; what the uid left in /tmp goes too; a build's folder
// is the leased uid's alone (0700) while it builds, no other local user can
// list or read the circuit; circuit code sees a fixed environment, not the
// caller's; a lock folder anyone may write is refused.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "witgen/generator_cache.hpp"
#include "witgen/sandbox.hpp"
#include "witgen/sandbox_uids.hpp"
#include "witgen/subprocess.hpp"

namespace zkfarm::witgen {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPoolUser = "zkfarm-sandbox";  // scripts/setup.sh and the package make it

// A pool of its own per test (base from the test's pid), locked in a folder of its own.
struct TestPool {
  fs::path dir;
  SandboxPool pool;
  TestPool() {
    dir = fs::temp_directory_path() / ("zkfarm-uid-locks-" + std::to_string(::getpid()) + "-" +
                                       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    // Clear of zkfarmd's default pool (0x70000000 + 1024), which farms of
    // other tests lease beside this one through another lock folder.
    pool.base = 0x70100000u + 4096u * uint32_t(::getpid() % 4096);
    pool.count = 4;
    pool.lock_dir = dir.string();
  }
  ~TestPool() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// A /proc file's bytes; "" when it cannot be read (the process is gone: a
// read then fails with ESRCH, which must not end the scan).
std::string proc_file(const fs::path& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  ::close(fd);
  return out;
}

// Pids of live (not zombie) processes whose command line contains `needle`.
std::set<pid_t> processes_with(const std::string& needle) {
  std::set<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string text = proc_file(e.path() / "cmdline");
    const std::string st = proc_file(e.path() / "stat");
    for (auto& c : text) c = c == '\0' ? ' ' : c;
    const auto paren = st.rfind(')');
    const bool zombie = paren != std::string::npos && paren + 2 < st.size() && st[paren + 2] == 'Z';
    if (!zombie && text.find(needle) != std::string::npos) out.insert(pid_t(std::stol(name)));
  }
  return out;
}

}  // namespace

TEST(SandboxUids, TwoLeasesAtOnceNeverShareAUidAndAGivenBackOneIsTakenAgain) {
  if (::geteuid() != 0) GTEST_SKIP() << "uids are leased only by root";
  TestPool p;
  Sandbox a = make_sandbox(kPoolUser, 0, p.pool), b = a;
  UidLease la = lease_sandbox_uid(a), lb = lease_sandbox_uid(b);
  ASSERT_TRUE(la.held() && lb.held());
  EXPECT_NE(a.uid, b.uid);
  EXPECT_GE(a.uid, p.pool.base);
  EXPECT_LT(a.uid, p.pool.base + p.pool.count);
  EXPECT_EQ(a.gid, gid_t(a.uid));  // a group of its own
  // Each child runs as its own lease's uid.
  RunSpec spec;
  spec.argv = {"sh", "-c", "id -u; id -G"};
  spec.sandbox = a;
  spec.timeout = std::chrono::minutes(1);
  const RunResult r = run(spec);
  ASSERT_TRUE(r.ok()) << r.output;
  EXPECT_EQ(r.output, std::to_string(a.uid) + "\n" + std::to_string(a.uid) + "\n");
  // Every uid taken: a third lease waits, then says so.
  Sandbox c = a, d = a;
  UidLease lc = lease_sandbox_uid(c), ld = lease_sandbox_uid(d);
  Sandbox e = a;
  try {
    lease_sandbox_uid(e, std::chrono::milliseconds(100));
    FAIL() << "a fifth lease of a pool of 4";
  } catch (const SandboxError& err) {
    EXPECT_NE(std::string(err.what()).find("every one of the 4 sandbox uids"), std::string::npos) << err.what();
  }
  const uid_t freed = a.uid;
  la.release();
  Sandbox f = b;
  UidLease lf = lease_sandbox_uid(f, std::chrono::seconds(5));
  EXPECT_EQ(f.uid, freed);
}

TEST(SandboxUids, WhatABuildLeftRunningOrInTmpIsGoneWhenItsUidIsGivenBack) {
  if (::geteuid() != 0) GTEST_SKIP() << "uids are leased only by root";
  TestPool p;
  Sandbox sb = make_sandbox(kPoolUser, 0, p.pool);
  UidLease lease = lease_sandbox_uid(sb);
  const std::string tag = std::to_string(600 + ::getpid() % 300) + ".25";  // sleep's argument: ours alone
  const std::string left = "/tmp/zkfarm-left-" + std::to_string(::getpid());
  RunSpec spec;
  // Out of the run's process group and session, stdout and stderr closed:
  // nothing of run() itself waits for it. The run ends only once it has its
  // own session (run() kills the run's group when the run ends: one still in
  // it would die there, not with the lease).
  // And a tree deeper than the sweep walks (64): what is left is sealed.
  const std::string deep = left + "-deep";
  std::string nested = deep;
  for (int i = 0; i < 100; ++i) nested += "/d";
  spec.argv = {"sh", "-c", "mkdir -p " + left + "/deep && echo secret > " + left + "/deep/file; mkdir -p " + nested +
               " && echo secret > " + nested + "/file; "
               "setsid sh -c 'touch " + left + "/started; exec sleep " + tag + "' >/dev/null 2>&1 </dev/null & "
               "while [ ! -e " + left + "/started ]; do sleep 0.01; done; echo started"};
  spec.sandbox = sb;
  spec.timeout = std::chrono::minutes(1);
  const RunResult r = run(spec);
  ASSERT_TRUE(r.ok()) << r.output;
  // It runs on after the run: run() kills only its own group.
  std::set<pid_t> alive;
  for (int i = 0; i < 500 && alive.empty(); ++i) {
    alive = processes_with("sleep " + tag);
    if (alive.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(alive.empty()) << "the left-behind process never started";
  ASSERT_TRUE(fs::exists(left + "/deep/file"));
  lease.release();
  EXPECT_TRUE(processes_with("sleep " + tag).empty()) << "a process of the build outlived its uid's lease";
  EXPECT_FALSE(fs::exists(left)) << "the uid's files in /tmp outlived its lease";
  struct stat st{};
  ASSERT_EQ(::lstat(deep.c_str(), &st), 0) << "a tree of 100 folders is left, sealed, not walked to its end";
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  std::error_code ec;
  fs::remove_all(deep, ec);
}

// A holder that dies (SIGKILL, no release) leaves its uid unwiped: the lock
// file says "in use", and the next lease of that uid wipes it first; one
// given back cleanly is marked wiped and handed out without a second wipe.
TEST(SandboxUids, AUidWhoseHolderDiedIsWipedBeforeItIsHandedOutAgain) {
  if (::geteuid() != 0) GTEST_SKIP() << "uids are leased only by root";
  TestPool p;
  p.pool.count = 1;
  const std::string tag = std::to_string(400 + ::getpid() % 150) + ".125";
  const std::string started = (p.dir.string()) + "-started";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Sandbox sb = make_sandbox(kPoolUser, 0, p.pool);
    UidLease lease = lease_sandbox_uid(sb);
    RunSpec spec;
    spec.argv = {"sh", "-c", "setsid sh -c 'touch " + started + "; exec sleep " + tag +
                             "' >/dev/null 2>&1 </dev/null & while [ ! -e " + started + " ]; do sleep 0.01; done"};
    spec.sandbox = sb;
    spec.timeout = std::chrono::minutes(1);
    _exit(run(spec).ok() ? 0 : 1);  // no release: as if killed
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::unlink(started.c_str());
  ASSERT_FALSE(processes_with("sleep " + tag).empty()) << "the dead holder's process should still run";
  {
    std::ifstream state(p.dir / std::to_string(p.pool.base));
    EXPECT_EQ(state.get(), 'u');
  }
  Sandbox sb = make_sandbox(kPoolUser, 0, p.pool);
  UidLease lease = lease_sandbox_uid(sb);
  EXPECT_TRUE(processes_with("sleep " + tag).empty()) << "a dead holder's process outlived the next lease";
  lease.release();
  std::ifstream state(p.dir / std::to_string(p.pool.base));
  EXPECT_EQ(state.get(), 'w');
}

TEST(SandboxUids, ALockFolderOthersMayWriteIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "uids are leased only by root";
  TestPool p;
  fs::create_directories(p.dir);
  fs::permissions(p.dir, fs::perms(0777));
  Sandbox sb = make_sandbox(kPoolUser, 0, p.pool);
  try {
    lease_sandbox_uid(sb);
    FAIL() << "a world-writable lock folder was used";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("writable by nobody else"), std::string::npos) << e.what();
  }
}

TEST(SandboxUids, CircuitCodeGetsAFixedEnvironmentNotTheCallers) {
  ::setenv("ZKFARM_TEST_SECRET", "do-not-leak", 1);
  RunSpec spec;
  spec.argv = {"sh", "-c", "env"};
  spec.sandbox = make_sandbox(kPoolUser, 0);
  spec.timeout = std::chrono::minutes(1);
  const RunResult r = run(spec);
  ::unsetenv("ZKFARM_TEST_SECRET");
  ASSERT_TRUE(r.ok()) << r.output;
  EXPECT_EQ(r.output.find("ZKFARM_TEST_SECRET"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PATH="), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("HOME=/nonexistent"), std::string::npos) << r.output;
}

// A wasm build under a leased uid, with fake compilers first on PATH (the
// operator's PATH is the compilers'): the first one reports what it can see
// of its folder and leaves a process behind, then fails the build.
TEST(SandboxUids, AWasmBuildsFolderIsItsUidsAloneAndItsLeftoversDieWithIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "uids are leased only by root";
  TestPool p;
  const fs::path tools = fs::temp_directory_path() / ("zkfarm-fake-cc-" + std::to_string(::getpid()));
  fs::create_directories(tools);
  const std::string tag = std::to_string(300 + ::getpid() % 300) + ".75";
  {
    std::ofstream f(tools / "wasm2c");
    f << "#!/bin/sh\n"
         "setsid sh -c 'exec sleep " << tag << "' >/dev/null 2>&1 </dev/null &\n"
         "w=$(dirname $(dirname $PWD))\n"  // cwd is WORK/out/build
         "echo \"work=$(stat -c %a:%u $w) src=$(stat -c %a:%u $w/src) wasm=$(stat -c %a:%u $w/src/*)\"\n"
         "echo \"me=$(id -u) tmp=$TMPDIR\"\n"
         "exit 1\n";
  }
  fs::permissions(tools, fs::perms(0755));
  fs::permissions(tools / "wasm2c", fs::perms(0755));
  const fs::path src = tools / "in";
  fs::create_directories(src);
  { std::ofstream(src / "circuit.wasm") << std::string("\0asm\1\0\0\0", 8); }
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (tools.string() + ":" + old_path).c_str(), 1);
  GeneratorSources gs{GeneratorKind::kWasm, src.string(), {"circuit.wasm"}};
  BuildOptions opt;
  opt.witgen_root = ZKFARM_SOURCE_DIR;
  opt.timeout = std::chrono::minutes(2);
  opt.sandbox = make_sandbox(kPoolUser, 0, p.pool);
  std::string said;
  const fs::path cache = tools / "cache";
  try {
    cached_generator(gs, source_hash(gs), cache.string(), opt);
  } catch (const BuildError& e) {
    said = e.what();
  }
  ::setenv("PATH", old_path.c_str(), 1);
  std::error_code ec;
  fs::remove_all(tools, ec);
  ASSERT_NE(said.find("work=700:"), std::string::npos) << said;
  // The work folder, src/ and the circuit: the leased uid's, no access for anyone else.
  const auto at = said.find("work=700:");
  const std::string uid = said.substr(at + 9, said.find(' ', at) - at - 9);
  EXPECT_GE(std::stoull(uid), p.pool.base) << said;
  EXPECT_NE(said.find("src=700:" + uid), std::string::npos) << said;
  EXPECT_NE(said.find("wasm=400:" + uid), std::string::npos) << said;
  EXPECT_NE(said.find("me=" + uid), std::string::npos) << said;
  // Compilers' temporary files in the build's own folder, not the shared /tmp itself.
  EXPECT_NE(said.find("/zkfarm-build-"), std::string::npos) << said;
  EXPECT_EQ(said.find("tmp=/tmp "), std::string::npos) << said;
  EXPECT_TRUE(processes_with("sleep " + tag).empty()) << "a process the build left outlived the build";
}

}  // namespace zkfarm::witgen
