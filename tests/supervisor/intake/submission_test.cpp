// What intake takes from a client (supervisor/intake/submission.hpp): a file
// a client names is opened with the client's rights and only when it is a
// regular file, never blocking on a FIFO, never following a path to
// something else; the tokens that name submit folders are random hex.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>

#include "files/file_error.hpp"
#include "supervisor/intake/submission.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {

Peer me() { return Peer{::getuid(), ::getgid(), ::getpid()}; }

TEST(Submission, AClientsRegularFileOpensAndAFifoOrAFolderIsRefusedAtOnceNamingThePath) {
  test::TempDir dir("zkfarm-submission");
  const std::string file = dir / "w.wtns", fifo = dir / "fifo.wtns", folder = dir / "folder.wtns";
  std::ofstream(file) << "wtns";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::mkdir(folder.c_str(), 0700), 0);
  EXPECT_GE(open_client_file(file, me()).get(), 0);
  for (const std::string& bad : {fifo, folder}) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      open_client_file(bad, me());
      ADD_FAILURE() << bad << " was opened";
    } catch (const files::FileError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
    // A FIFO with no writer would block an open without O_NONBLOCK forever.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  }
  try {
    open_client_file(dir / "missing.wtns", me());
    ADD_FAILURE() << "a missing file was opened";
  } catch (const files::FileError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.wtns"), std::string::npos) << e.what();
  }
}

TEST(Submission, TokensAre96RandomBitsInHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    const std::string t = random_token();
    EXPECT_EQ(t.size(), 24u);
    EXPECT_EQ(t.find_first_not_of("0123456789abcdef"), std::string::npos) << t;
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 64u);
}

}  // namespace
}  // namespace zkfarm::supervisor
