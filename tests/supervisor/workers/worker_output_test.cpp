// A worker's output into the log (supervisor/workers/worker_output.hpp): long
// lines cut, floods counted.
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

TEST(WorkerOutput, LinesGoToTheLogWithLongLinesCutAndFloodsCounted) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  WorkerOutput out(p[0]);
  ASSERT_EQ(::fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
  std::vector<std::string> lines;
  auto sink = [&](std::string_view l) { lines.emplace_back(l); };
  const std::string first = "zkfarm-gpu: CUDA error: out of memory\npartial";
  ASSERT_EQ(::write(p[1], first.data(), first.size()), ssize_t(first.size()));
  out.pump(0, sink);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "zkfarm-gpu: CUDA error: out of memory");
  const std::string rest = " line\n" + std::string(5000, 'x') + "\n";
  ASSERT_EQ(::write(p[1], rest.data(), rest.size()), ssize_t(rest.size()));
  out.pump(1, sink);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "partial line");
  EXPECT_EQ(lines[2].substr(0, WorkerOutput::kMaxLine), std::string(WorkerOutput::kMaxLine, 'x'));
  EXPECT_NE(lines[2].find("line cut at 2000 bytes"), std::string::npos);
  // A flood: only kMaxLinesPerSecond a second, the rest counted once the second is over.
  lines.clear();
  std::string flood;
  for (int i = 0; i < 500; ++i) flood += "spam " + std::to_string(i) + "\n";
  ASSERT_EQ(::write(p[1], flood.data(), flood.size()), ssize_t(flood.size()));
  out.pump(5000, sink);
  EXPECT_EQ(lines.size(), size_t(WorkerOutput::kMaxLinesPerSecond));
  ::close(p[1]);
  out.close(7000, sink);
  EXPECT_NE(lines.back().find(std::to_string(500 - WorkerOutput::kMaxLinesPerSecond) + " lines suppressed"),
            std::string::npos)
      << lines.back();
  EXPECT_EQ(out.last_line(), "spam 499");
  EXPECT_EQ(out.fd(), -1);
}

}  // namespace
}  // namespace zkfarm::supervisor
