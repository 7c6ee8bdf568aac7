// Which binaries an upgrade may run (supervisor/workers/trusted_binary.hpp).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include "files/sha256.hpp"
#include "supervisor/check_pool.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/model/peer.hpp"
#include "supervisor/workers/trusted_binary.hpp"
#include "supervisor/workers/worker_output.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {
namespace fs = std::filesystem;

struct RunDir {
  fs::path path;
  RunDir() {
    std::string tmpl = ::geteuid() == 0 && ::access("/run", W_OK) == 0 ? "/run/zkfarm-bin-XXXXXX"
                                                                         : (fs::temp_directory_path() / "zkfarm-bin-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~RunDir() { fs::remove_all(path); }
};
struct BinDir {
  RunDir dir;
  fs::path bin;
  BinDir() {
    ::chmod(dir.path.c_str(), 0755);
    bin = dir.path / "zkfarm-synth-v2";
    std::ofstream(bin) << "#!/bin/sh\nexit 0\n";
    ::chmod(bin.c_str(), 0755);
  }
};

TEST(TrustedBinary, AcceptsARootOwnedBinaryInRootOwnedFoldersAndResolvesLinks) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (the folders above the temp dir must be root's)";
  BinDir b;
  if (b.dir.path.string().rfind("/run/", 0) != 0) GTEST_SKIP() << "no /run to make a trusted folder in";
  EXPECT_EQ(trusted_binary(b.bin), fs::canonical(b.bin).string());
  fs::create_symlink(b.bin, b.dir.path / "current");
  EXPECT_EQ(trusted_binary(b.dir.path / "current"), fs::canonical(b.bin).string());
}

TEST(TrustedBinary, RefusesWhatOthersCouldHaveWritten) {
  BinDir b;
  auto refusal = [](const std::string& path) {
    try {
      trusted_binary(path);
      return std::string("accepted");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  };
  EXPECT_NE(refusal("relative/bin").find("not an absolute path"), std::string::npos);
  EXPECT_NE(refusal(b.dir.path / "missing").find("cannot resolve"), std::string::npos);
  // Attack from the sweep: `upgrade --synth /tmp/x` ran any program as root.
  EXPECT_NE(refusal("/tmp").find("not a regular file"), std::string::npos);
  ::chmod(b.bin.c_str(), 0775);
  EXPECT_NE(refusal(b.bin).find("writable by its group or by others"), std::string::npos) << refusal(b.bin);
  ::chmod(b.bin.c_str(), 0644);
  EXPECT_NE(refusal(b.bin).find("not executable"), std::string::npos);
  ::chmod(b.bin.c_str(), 0755);
  ::chmod(b.dir.path.c_str(), 0777);
  EXPECT_NE(refusal(b.bin).find("folder " + b.dir.path.string() + " is writable"), std::string::npos) << refusal(b.bin);
  ::chmod(b.dir.path.c_str(), 0755);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(b.bin.c_str(), 65534, 65534), 0);
    EXPECT_NE(refusal(b.bin).find("belongs to uid 65534"), std::string::npos) << refusal(b.bin);
  }
}

}  // namespace
}  // namespace zkfarm::supervisor
