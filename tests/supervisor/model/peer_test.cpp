// Who a peer is (supervisor/model/peer.hpp): libzmq's Peer-Address read from
// the right, and which users are admins.
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

TEST(Peer, ParsesLibzmqPeerAddressFromTheRight) {
  auto p = parse_peer_address("localhost:1000:1001:4242");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->uid, 1000u);
  EXPECT_EQ(p->gid, 1001u);
  EXPECT_EQ(p->pid, 4242);
  auto q = parse_peer_address("host:with:colons:0:0:7");  // the host part may hold colons
  ASSERT_TRUE(q);
  EXPECT_EQ(q->uid, 0u);
  EXPECT_EQ(q->pid, 7);
  for (const char* bad : {"", "localhost", "localhost:1:2", ":1:2:0", "h:x:2:3", "h:1:2:-5", "h:1:2:3x",
                          "h:99999999999:2:3"})
    EXPECT_FALSE(parse_peer_address(bad)) << bad;
}

TEST(Peer, RootAndOurOwnUserAreAdminsOthersAreUsers) {
  EXPECT_EQ(role_of(Peer{0, 0, 1}, ""), Role::kAdmin);
  EXPECT_EQ(role_of(Peer{::geteuid(), ::getegid(), 1}, ""), Role::kAdmin);
  const uid_t other = ::geteuid() == 65534 ? 65533 : 65534;
  EXPECT_EQ(role_of(Peer{other, 65534, 1}, ""), Role::kUser);
  EXPECT_EQ(role_of(Peer{other, 65534, 1}, "no-such-group-zkfarm"), Role::kUser);
}

}  // namespace
}  // namespace zkfarm::supervisor
