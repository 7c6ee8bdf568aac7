// The release wait (supervisor/workers/release.hpp): the fake check's timing, the
// wait's deadline, the host check on real child processes, and NVML's absence.
#include "supervisor/workers/release.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace zs = zkfarm::supervisor;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

pid_t fork_or_die(bool exit_at_once) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (exit_at_once) ::_exit(0);
    for (;;) ::pause();
  }
  if (pid < 0) throw std::runtime_error("fork failed");
  return pid;
}

void reap(pid_t pid) {
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
}

/// Waits until the child has exited, without reaping it (it stays a zombie).
void wait_exited_not_reaped(pid_t pid) {
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
}

}  // namespace

TEST(ReleaseFake, ReleasesAfterItsDurationAndNotBefore) {
  zs::FakeReleaseCheck fake(300ms);
  // The fake's clock starts inside the first check, somewhere in [t0, t1]. So
  // "released" at a check that ended at `after` implies after − t0 ≥ 300 ms,
  // and "not released" at a check that began at `before` implies
  // before − t1 < 300 ms — whatever the machine's load (no upper bound on how
  // long anything takes).
  const auto t0 = Clock::now();
  auto st = fake.check(4242, "0");
  const auto t1 = Clock::now();
  EXPECT_FALSE(st.released);
  EXPECT_NE(st.detail.find("fake: "), std::string::npos) << st.detail;
  EXPECT_NE(st.detail.find(" ms left"), std::string::npos) << st.detail;

  for (int i = 0; i < 100000 && !st.released; ++i) {  // bounded only to stop a hang
    const auto before = Clock::now();
    st = fake.check(4242, "0");
    const auto after = Clock::now();
    if (st.released) {
      EXPECT_GE(after - t0, 300ms) << "released early";
    } else {
      EXPECT_LT(before - t1, 300ms) << "not released although 300 ms have passed: " << st.detail;
      std::this_thread::sleep_for(5ms);
    }
  }
  ASSERT_TRUE(st.released);
  EXPECT_EQ(st.detail, "released");
  EXPECT_TRUE(fake.check(4242, "0").released);  // stays released

  // Each pid has its own clock, started by its first check.
  EXPECT_FALSE(fake.check(4343, "0").released);
  EXPECT_THROW(fake.check(0, ""), std::invalid_argument);
}

TEST(ReleaseFake, FromEnv) {
  ::unsetenv("ZKFARM_TEST_RELEASE_MS");
  EXPECT_EQ(zs::FakeReleaseCheck::from_env(), nullptr);
  ::setenv("ZKFARM_TEST_RELEASE_MS", "0", 1);
  auto zero = zs::FakeReleaseCheck::from_env();
  ASSERT_NE(zero, nullptr);
  EXPECT_STREQ(zero->name(), "fake");
  EXPECT_TRUE(zero->check(77, "").released);
  ::setenv("ZKFARM_TEST_RELEASE_MS", "5000", 1);
  auto five = zs::FakeReleaseCheck::from_env();
  ASSERT_NE(five, nullptr);
  EXPECT_FALSE(five->check(77, "").released);
  ::setenv("ZKFARM_TEST_RELEASE_MS", "soon", 1);
  EXPECT_THROW(zs::FakeReleaseCheck::from_env(), std::invalid_argument);
  ::setenv("ZKFARM_TEST_RELEASE_MS", "-5", 1);
  EXPECT_THROW(zs::FakeReleaseCheck::from_env(), std::invalid_argument);
  ::unsetenv("ZKFARM_TEST_RELEASE_MS");
}

TEST(ReleaseWait, TimesOutWithAClearStatus) {
  zs::FakeReleaseCheck never(10s);
  zs::ReleaseWait wait(never, 1234, "0", 200ms);
  EXPECT_FALSE(wait.timed_out());
  zs::ReleaseStatus st = wait.poll();
  EXPECT_FALSE(st.released);
  EXPECT_FALSE(wait.timed_out());
  EXPECT_NE(st.detail.find("fake: "), std::string::npos) << st.detail;
  EXPECT_NE(st.detail.find(" s of 0.2 s)"), std::string::npos) << st.detail;  // "(waited X s of 0.2 s)"

  const auto t0 = Clock::now();
  while (!wait.timed_out() && Clock::now() - t0 < 60s) {  // only stops a hang
    st = wait.poll();
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(wait.timed_out());
  EXPECT_FALSE(wait.released());
  EXPECT_FALSE(st.released);
  EXPECT_GE(wait.elapsed(), 200ms);  // never before its timeout; how long after depends on the load
  EXPECT_NE(st.detail.find("release of pid 1234 on GPU 0 not confirmed within release_timeout 0.2 s: fake: "),
            std::string::npos)
      << st.detail;
  // Final: the same status again, and elapsed() frozen.
  const auto frozen = wait.elapsed();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(wait.poll().detail, st.detail);
  EXPECT_EQ(wait.elapsed(), frozen);
  EXPECT_EQ(wait.last().detail, st.detail);
}

TEST(ReleaseWait, ReleasesBeforeTheDeadline) {
  zs::FakeReleaseCheck fake(100ms);
  zs::ReleaseWait wait(fake, 99, "", 5s);
  const auto t0 = Clock::now();
  zs::ReleaseStatus st;
  while (Clock::now() - t0 < 3s) {
    st = wait.poll();
    if (st.released) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(st.released);
  EXPECT_TRUE(wait.released());
  EXPECT_FALSE(wait.timed_out());
  EXPECT_EQ(st.detail, "released");
  EXPECT_GE(wait.elapsed(), 100ms);
  EXPECT_TRUE(wait.poll().released);
}

TEST(ReleaseHost, ReapedChildIsReleased) {
  const pid_t pid = fork_or_die(true);
  reap(pid);
  zs::HostReleaseCheck host;
  const auto st = host.check(pid, "");
  EXPECT_TRUE(st.released) << st.detail;
  EXPECT_EQ(st.detail, "released");
}

TEST(ReleaseHost, RunningChildIsNotReleased) {
  const pid_t pid = fork_or_die(false);
  zs::HostReleaseCheck host;
  const auto st = host.check(pid, "");
  EXPECT_FALSE(st.released);
  EXPECT_NE(st.detail.find("pid " + std::to_string(pid)), std::string::npos) << st.detail;
  EXPECT_NE(st.detail.find("still running"), std::string::npos) << st.detail;
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  reap(pid);
  EXPECT_TRUE(host.check(pid, "").released);
}

TEST(ReleaseHost, ZombieIsNotReleased) {
  const pid_t pid = fork_or_die(true);
  wait_exited_not_reaped(pid);
  zs::HostReleaseCheck host;
  const auto st = host.check(pid, "");
  EXPECT_FALSE(st.released);
  EXPECT_NE(st.detail.find("zombie"), std::string::npos) << st.detail;
  reap(pid);
  EXPECT_TRUE(host.check(pid, "").released);
}

TEST(ReleaseHost, RejectsInvalidPids) {
  zs::HostReleaseCheck host;
  EXPECT_THROW(host.check(0, ""), std::invalid_argument);   // kill(0, 0) would be the process group
  EXPECT_THROW(host.check(-1, ""), std::invalid_argument);  // kill(-1, 0): every process
}

TEST(ReleaseDefault, WorksOnThisMachine) {
  auto check = zs::ReleaseCheck::make_default();
  ASSERT_NE(check, nullptr);
  void* nvml = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml) {
    ::dlclose(nvml);
  } else {
    EXPECT_STREQ(check->name(), "host");
  }
  check->baseline("");  // the CPU backend: nothing to record
  const pid_t pid = fork_or_die(true);
  wait_exited_not_reaped(pid);
  EXPECT_FALSE(check->check(pid, "").released);
  reap(pid);
  const auto st = check->check(pid, "");
  EXPECT_TRUE(st.released) << st.detail;
}

TEST(ReleaseNvml, ConstructionFailsCleanlyWithoutTheLibrary) {
  try {
    zs::NvmlReleaseCheck nvml(zs::NvmlReleaseCheck::kDefaultToleranceBytes, "libzkfarm-no-such-nvml.so.1");
    FAIL() << "constructed without a library";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot load libzkfarm-no-such-nvml.so.1"), std::string::npos) << e.what();
  }
  // A library that loads but is not NVML: a missing symbol, also a clean error.
  EXPECT_THROW(zs::NvmlReleaseCheck(zs::NvmlReleaseCheck::kDefaultToleranceBytes, "libm.so.6"), std::runtime_error);
  void* nvml = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml) {
    ::dlclose(nvml);
    GTEST_SKIP() << "libnvidia-ml.so.1 is present here";
  }
  EXPECT_THROW(zs::NvmlReleaseCheck(), std::runtime_error);
}
