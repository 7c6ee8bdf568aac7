// The control API (supervisor/control/control_api.hpp) as a part on its own,
// on a real control.sock: a client connects, sends framed requests and reads
// framed replies while the test drives the API's serve pass. What it hands
// on goes to hooks recorded here; a held answer comes back through the
// ControlReply event; a long-polled `job` and a `stop --wait` are held until
// answer_held; a user who is not an admin (a child process as nobody) is
// refused an admin verb and nothing stops. Every wait is on an event (the
// client's socket), bounded only to fail instead of hang.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "protocol/control_requests.hpp"
#include "protocol/messages.hpp"
#include "protocol/stream_frame.hpp"
#include "supervisor/clock.hpp"
#include "supervisor/control/control_api.hpp"

#include "supervisor/control/unix_client.hpp"
#include "supervisor/part_fixture.hpp"

namespace zkfarm::supervisor {
namespace {

bool send_request(int fd, const protocol::Message& m) {
  const std::string frame = protocol::frame_of(protocol::encode(m));
  return ::write(fd, frame.data(), frame.size()) == ssize_t(frame.size());
}

struct ControlApiFixture : ::testing::Test, fakes::WorkerGround {
  std::string sock = dir / "control.sock";
  Lifecycle lifecycle{cfg, log, workers, jobs, metrics, bus, [](const Worker&) {}};
  CircuitRegistry circuits{cfg, log, false, "", bus, {}};
  std::vector<std::string> submits;                    ///< identities the submit hook got
  std::vector<std::optional<uint32_t>> status_owners;  ///< the status hook's `owner` each time
  std::vector<std::string> warnings;
  ControlApi api{cfg,
                 log,
                 std::make_unique<ControlChannel>(sock, std::nullopt, 8, log),
                 jobs,
                 lifecycle,
                 circuits,
                 metrics,
                 bus,
                 ControlApi::Hooks{
                     .submit = [this](const std::string& id, const protocol::Submit&, const Peer&) { submits.push_back(id); },
                     .result = nullptr,
                     .status = [this](std::optional<uint32_t> owner) {
                       status_owners.push_back(owner);
                       return nlohmann::json{{"marker", "from the status hook"}};
                     },
                     .cancel = nullptr,
                     .kill_worker = nullptr,
                     .warn = [this](const std::string& w) { warnings.push_back(w); }}};
  int fd = fakes::connect_unix(sock);

  ControlApiFixture() : WorkerGround("zkfarm-control-api", [](Config& c) { c.synth_workers = 1; }) {}
  ~ControlApiFixture() override {
    if (fd >= 0) ::close(fd);
  }

  /// The next reply on `client`, serving the API meanwhile; nullopt when none
  /// comes within `limit_ms` (a held request).
  std::optional<nlohmann::json> next_reply(int client, int limit_ms = 10000) {
    protocol::FrameReader reader;
    const auto deadline = steady_ms() + limit_ms;
    while (steady_ms() < deadline) {
      api.serve(steady_ms());
      pollfd p{client, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::read(client, buf, std::min(sizeof buf, reader.room()));
      if (n <= 0) return std::nullopt;
      reader.feed(buf, size_t(n));
      if (auto body = reader.take()) return protocol::decode(*body);
    }
    return std::nullopt;
  }
  uint64_t add_job() {
    Job j;
    j.owner_uid = ::getuid();
    j.parts.resize(2);
    return jobs.add(std::move(j));
  }
};

TEST_F(ControlApiFixture, StatusFromZkfarmdsOwnUserIsTheWholeFarmsThroughTheHook) {
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_request(fd, protocol::make("status")));
  const auto reply = next_reply(fd);
  ASSERT_TRUE(reply) << "no reply";
  EXPECT_EQ((*reply)["ok"], true);
  EXPECT_EQ((*reply)["status"]["marker"], "from the status hook");
  ASSERT_EQ(status_owners.size(), 1u);
  EXPECT_FALSE(status_owners[0].has_value()) << "an admin sees every job, not its own only";
}

TEST_F(ControlApiFixture, AnUnknownVerbAndAGarbledFrameAreAnsweredNotDropped) {
  ASSERT_TRUE(send_request(fd, protocol::make("frobnicate")));
  auto reply = next_reply(fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["ok"], false);
  EXPECT_NE((*reply)["error"].get<std::string>().find("unknown request 'frobnicate'"), std::string::npos);
  const std::string garbage = protocol::frame_of("\xc1 not msgpack");
  ASSERT_EQ(::write(fd, garbage.data(), garbage.size()), ssize_t(garbage.size()));
  reply = next_reply(fd);
  ASSERT_TRUE(reply);
  EXPECT_NE((*reply)["error"].get<std::string>().find("bad request"), std::string::npos) << reply->dump();
  EXPECT_FALSE(warnings.empty()) << "the bad frame is logged (rate-limited by the loop)";
}

TEST_F(ControlApiFixture, ASubmitIsHandedOnAndItsAnswerComesBackAsAControlReplyEvent) {
  protocol::Submit s;
  s.zkey = "/k.zkey";
  s.wtns = {"/0.wtns"};
  ASSERT_TRUE(send_request(fd, protocol::to_message(s)));
  for (int i = 0; i < 500 && submits.empty(); ++i) next_reply(fd, 20);  // serve until it is handed on
  ASSERT_EQ(submits.size(), 1u);
  EXPECT_FALSE(next_reply(fd, 100)) << "no answer before its check ends";
  bus.emit(ControlReply{submits[0], {{"ok", true}, {"job", 7}}});
  const auto reply = next_reply(fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["job"], 7);
}

TEST_F(ControlApiFixture, ALongPolledJobIsHeldUntilTheJobChanges) {
  const uint64_t id = add_job();
  protocol::JobQuery q;
  q.job = id;
  q.wait_ms = 60000;
  q.seen_state = job_state_name(jobs.find(id)->state);
  q.seen_done = 0;
  ASSERT_TRUE(send_request(fd, protocol::to_message(q)));
  EXPECT_FALSE(next_reply(fd, 200)) << "held: nothing changed";
  api.answer_held(false, 0, "");
  EXPECT_FALSE(next_reply(fd, 100)) << "still held: still nothing changed";
  ASSERT_TRUE(jobs.start_synthesis({id, 0}, shm::Slot{}, "synth-0", steady_ms(), wall_ms()));
  api.answer_held(false, 0, "");
  const auto reply = next_reply(fd);
  ASSERT_TRUE(reply) << "answered once the job changed";
  EXPECT_EQ((*reply)["ok"], true);
  EXPECT_EQ((*reply)["job"]["id"], id);
  EXPECT_NE((*reply)["job"]["state"], *q.seen_state);
}

TEST_F(ControlApiFixture, AStopWithWaitIsAnsweredAsZkfarmdExitsWithItsExitCode) {
  protocol::Stop stop;
  stop.wait = true;
  ASSERT_TRUE(send_request(fd, protocol::to_message(stop)));
  EXPECT_FALSE(next_reply(fd, 200)) << "held until exit";
  EXPECT_TRUE(lifecycle.stopping());
  api.answer_held(false, 0, "");
  EXPECT_FALSE(next_reply(fd, 100)) << "not before exit";
  api.answer_held(true, 4, "the journal is not writable");
  const auto reply = next_reply(fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["ok"], false);
  EXPECT_EQ((*reply)["exit_code"], 4);
  EXPECT_NE((*reply)["error"].get<std::string>().find("the journal is not writable"), std::string::npos);
}

// A user who is not an admin (uid nobody, in a child process) asks to stop
// zkfarmd: refused by the verb table, naming the verb; nothing stops.
TEST_F(ControlApiFixture, AnAdminVerbFromAnotherUserIsRefusedAndNothingStops) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  // control.sock is 0660 (zkfarmd's group); the test opens it to every user
  // as an operator's group would, so that the verb table is what refuses.
  ASSERT_EQ(::chmod(dir.path.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(sock.c_str(), 0666), 0);
  // Built before the fork: the child of a process with threads only makes
  // system calls (no allocation) until it exits.
  const std::string frame = protocol::frame_of(protocol::encode(protocol::to_message(protocol::Stop{})));
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the client, as nobody: connects, asks, writes the reply's bytes to the pipe
    ::close(out[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const int c = fakes::connect_unix(sock);
    if (c < 0 || ::write(c, frame.data(), frame.size()) != ssize_t(frame.size())) ::_exit(4);
    // One whole frame (a 4-byte big-endian length, then the body), which
    // may come in several reads.
    char buf[4096];
    size_t have = 0, want = 4;
    while (have < want) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0) ::_exit(5);
      const ssize_t n = ::read(c, buf + have, sizeof buf - have);
      if (n <= 0) ::_exit(6);
      have += size_t(n);
      if (have >= 4)
        want = 4 + (size_t(uint8_t(buf[0])) << 24 | size_t(uint8_t(buf[1])) << 16 | size_t(uint8_t(buf[2])) << 8 |
                    size_t(uint8_t(buf[3])));
      if (want > sizeof buf) ::_exit(7);
    }
    if (::write(out[1], buf, have) != ssize_t(have)) ::_exit(8);
    ::_exit(0);
  }
  ::close(out[1]);
  int status = 0;
  for (int i = 0; i < 1000 && ::waitpid(child, &status, WNOHANG) == 0; ++i) api.serve(steady_ms()), ::poll(nullptr, 0, 10);
  ASSERT_TRUE(WIFEXITED(status)) << "the client did not end: status " << status
                                 << (WIFSIGNALED(status) ? ", signal " + std::to_string(WTERMSIG(status)) : "");
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the client failed at step " << WEXITSTATUS(status);
  protocol::FrameReader reader;  // it asks for the header first, then the body
  std::optional<std::string> body;
  char buf[4096];
  for (ssize_t n = 1; n > 0 && !body;) {
    n = ::read(out[0], buf, std::min(sizeof buf, reader.room()));
    if (n > 0) reader.feed(buf, size_t(n));
    body = reader.take();
  }
  ::close(out[0]);
  ASSERT_TRUE(body) << "no whole reply from the client";
  const auto reply = protocol::decode(*body);
  EXPECT_EQ(reply["ok"], false);
  EXPECT_NE(reply["error"].get<std::string>().find("permission denied: 'zkfarmctl stop' (request 'stop')"), std::string::npos) << reply.dump();
  EXPECT_FALSE(lifecycle.stopping());
  EXPECT_FALSE(warnings.empty()) << "the refusal is logged with the uid";
}

}  // namespace
}  // namespace zkfarm::supervisor
