// Circuit code's confinement (witgen/sandbox.hpp) with real programs: the uid
// and groups it runs with, a memory bomb stopped at its limit, an endless
// loop ended by its CPU limit, sockets and ptrace refused by the seccomp
// filter, and a missing sandbox user refused instead of running as root.
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include "witgen/sandbox.hpp"
#include "witgen/subprocess.hpp"

using zkfarm::witgen::make_sandbox;
using zkfarm::witgen::run;
using zkfarm::witgen::RunResult;
using zkfarm::witgen::RunSpec;
using zkfarm::witgen::Sandbox;
using zkfarm::witgen::SandboxError;

namespace {

constexpr const char* kUser = "zkfarm-sandbox";  // scripts/setup.sh and the package make it

RunResult run_confined(std::vector<std::string> argv, const Sandbox& sb, uint64_t memory_bytes = 0) {
  RunSpec spec;
  spec.argv = std::move(argv);
  spec.sandbox = sb;
  spec.memory_bytes = memory_bytes;
  spec.timeout = std::chrono::minutes(5);  // a guard against a hang, not a measurement
  return run(spec);
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

TEST(Sandbox, AsRootCircuitCodeRunsAsTheSandboxUserWithNoOtherGroup) {
  if (::geteuid() != 0) GTEST_SKIP() << "the uid is dropped only by root";
  const passwd* pw = ::getpwnam(kUser);
  ASSERT_NE(pw, nullptr) << kUser << " is missing: scripts/setup.sh makes it";
  const Sandbox sb = make_sandbox(kUser, 0);
  EXPECT_TRUE(sb.drop_uid);
  const RunResult r = run_confined({"sh", "-c", "id -u; id -g; id -G"}, sb);
  ASSERT_TRUE(r.ok()) << r.how() << ": " << r.output;
  const std::string g = std::to_string(pw->pw_gid);
  EXPECT_EQ(trimmed(r.output), std::to_string(pw->pw_uid) + "\n" + g + "\n" + g);
}

TEST(Sandbox, AMissingOrPrivilegedSandboxUserIsRefusedNeverRunAsRoot) {
  if (::geteuid() != 0) {
    const Sandbox sb = make_sandbox("no-such-user-zkfarm", 0);  // not root: nothing to drop to
    EXPECT_FALSE(sb.drop_uid);
    EXPECT_EQ(sb.uid, ::getuid());
    return;
  }
  try {
    make_sandbox("no-such-user-zkfarm", 0);
    ADD_FAILURE() << "a missing user was taken";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("adduser --system --group --no-create-home no-such-user-zkfarm"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(make_sandbox("root", 0), SandboxError);
  EXPECT_THROW(make_sandbox("", 0), SandboxError);
}

TEST(Sandbox, AMemoryBombStopsAtItsLimit) {
  const Sandbox sb = make_sandbox(kUser, 0);
  // Allocates and touches 1 MiB at a time; says how far it got when refused.
  const RunResult r = run_confined(
      {"python3", "-c",
       "b = []\ntry:\n  while True: b.append(bytearray(1 << 20))\nexcept MemoryError:\n  print(len(b)); raise SystemExit(3)"},
      sb, uint64_t(64) << 20);
  EXPECT_EQ(r.exit_code, 3) << r.how() << ": " << r.tail();
  const int mib = std::stoi(trimmed(r.output));
  EXPECT_GT(mib, 0);
  EXPECT_LT(mib, 64) << "allocated " << mib << " MiB under a 64 MiB limit";
}

TEST(Sandbox, AnEndlessLoopEndsAtItsCpuLimit) {
  const Sandbox sb = make_sandbox(kUser, 1);
  const RunResult r = run_confined({"sh", "-c", "while :; do :; done"}, sb);
  EXPECT_FALSE(r.timed_out) << "the CPU limit did not end it";
  EXPECT_TRUE(r.signal == SIGXCPU || r.signal == SIGKILL) << r.how();
}

TEST(Sandbox, SocketsAndPtraceAreRefused) {
  const Sandbox sb = make_sandbox(kUser, 0);
  const RunResult net = run_confined(
      {"python3", "-c",
       "import socket\ntry:\n  socket.create_connection(('127.0.0.1', 9), timeout=5)\nexcept PermissionError:\n"
       "  raise SystemExit(13)\nexcept OSError as e:\n  print(e); raise SystemExit(1)"},
      sb);
  EXPECT_EQ(net.exit_code, 13) << net.how() << ": " << net.tail();
  const RunResult trace = run_confined(
      {"python3", "-c",
       "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
       "r = libc.ptrace(0, 0, 0, 0)\nprint(r, ctypes.get_errno())"},
      sb);
  ASSERT_TRUE(trace.ok()) << trace.how() << ": " << trace.tail();
  EXPECT_EQ(trimmed(trace.output), "-1 1");  // PTRACE_TRACEME: EPERM
  // Unconfined, the same call is allowed: the filter is what refused it.
  const RunResult free = run_confined({"python3", "-c",
                                       "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                                       "print(libc.ptrace(0, 0, 0, 0))"},
                                      Sandbox{});
  EXPECT_EQ(trimmed(free.output), "0");
}

TEST(Sandbox, TheSeccompProgramIsBuilt) {
  EXPECT_EQ(zkfarm::witgen::seccomp_status(), "");
  EXPECT_FALSE(zkfarm::witgen::seccomp_program().empty());
}
