// control.sock's channel (supervisor/control/control_channel.*) on a real
// Unix socket: a frame in is a request with the kernel's credentials of its
// sender, a reply goes back framed, and a header announcing more than the
// frame limit closes the connection before any body is held. Every wait is
// for an event (epoll through pollitem, or the client socket), bounded only
// to fail instead of hang.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <zmq.hpp>

#include "protocol/messages.hpp"
#include "protocol/stream_frame.hpp"
#include "supervisor/control/control_channel.hpp"
#include "supervisor/control/unix_client.hpp"
#include "test_util.hpp"

namespace zkfarm::supervisor {
namespace {

// Requests from the channel, waiting on its epoll descriptor until one is
// whole (at most ~10 s).
std::vector<ControlChannel::Request> next_requests(ControlChannel& ch, std::vector<std::string>* warnings) {
  for (int i = 0; i < 100; ++i) {
    auto got = ch.receive(8, [&](const std::string& w) { warnings->push_back(w); });
    if (!got.empty()) return got;
    zmq::pollitem_t item = ch.pollitem();
    zmq::poll(&item, 1, std::chrono::milliseconds(100));
  }
  return {};
}

// Whether the peer closed `fd` (EOF) within ~10 s, driving the channel meanwhile.
bool closed_by_peer(int fd, ControlChannel& ch, std::vector<std::string>* warnings) {
  for (int i = 0; i < 100; ++i) {
    ch.receive(8, [&](const std::string& w) { warnings->push_back(w); });
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      char b;
      if (::recv(fd, &b, 1, MSG_DONTWAIT) == 0) return true;
    }
  }
  return false;
}

class ControlChannelTest : public ::testing::Test {
 protected:
  test::TempDir dir{"zkfarm-control-channel"};
  std::string path = dir / "control.sock";
  std::shared_ptr<spdlog::logger> log = std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
};

TEST_F(ControlChannelTest, AFrameInIsARequestWithItsSendersCredentialsAndTheReplyComesBackFramed) {
  ControlChannel ch(path, std::nullopt, 4, log);
  const int fd = fakes::connect_unix(path);
  ASSERT_GE(fd, 0);
  const std::string frame = protocol::frame_of(protocol::encode(protocol::make("status")));
  ASSERT_EQ(::write(fd, frame.data(), frame.size()), ssize_t(frame.size()));
  std::vector<std::string> warnings;
  auto reqs = next_requests(ch, &warnings);
  ASSERT_EQ(reqs.size(), 1u);
  ASSERT_TRUE(reqs[0].peer.has_value());
  EXPECT_EQ(reqs[0].peer->uid, ::getuid());
  EXPECT_EQ(reqs[0].peer->pid, ::getpid());
  EXPECT_EQ(protocol::type_of(protocol::decode(reqs[0].body)), "status");
  ch.reply(reqs[0].identity, {{"ok", true}}, [&](const std::string& w) { warnings.push_back(w); });
  protocol::FrameReader reader;
  std::optional<std::string> body;
  for (int i = 0; i < 100 && !body; ++i) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, reader.room()));
    ASSERT_GT(n, 0);
    reader.feed(buf, size_t(n));
    body = reader.take();
  }
  ASSERT_TRUE(body.has_value());
  EXPECT_EQ(protocol::decode(*body).value("ok", false), true);
  EXPECT_TRUE(warnings.empty());
  ::close(fd);
}

TEST_F(ControlChannelTest, AHeaderAnnouncingMoreThanTheLimitClosesTheConnectionBeforeAnyBody) {
  ControlChannel ch(path, std::nullopt, 4, log);
  const int fd = fakes::connect_unix(path);
  ASSERT_GE(fd, 0);
  const uint32_t too_long = uint32_t(protocol::kMaxFrameBytes) + 1;
  const unsigned char header[4] = {uint8_t(too_long >> 24), uint8_t(too_long >> 16), uint8_t(too_long >> 8),
                                   uint8_t(too_long)};
  ASSERT_EQ(::write(fd, header, 4), 4);
  std::vector<std::string> warnings;
  EXPECT_TRUE(closed_by_peer(fd, ch, &warnings));
  EXPECT_FALSE(warnings.empty());  // said why
  EXPECT_EQ(ch.open_connections(), 0u);
  ::close(fd);
}

}  // namespace
}  // namespace zkfarm::supervisor
