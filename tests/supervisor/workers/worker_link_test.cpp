// The worker link (supervisor/workers/worker_link.hpp) as a part on its own:
// a frame is taken only from the process zkfarmd started under that id (the
// kernel's credentials and the pid in the route); READY moves a starting
// worker to idle by the model's table; STARTED and SYNTH_DONE/PROVE_DONE
// reach the pipeline as events; a frame of another protocol version from a
// starting worker asks it to exit; a garbled frame is dropped with a warning
// and counts as a sign of life only when it decodes. No process runs: the
// workers have made-up pids, and the peer credentials are passed in as the
// socket would report them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "protocol/messages.hpp"
#include "protocol/worker_messages.hpp"
#include "supervisor/workers/worker_link.hpp"

#include "supervisor/part_fixture.hpp"

namespace zkfarm::supervisor {
namespace {

struct WorkerLinkFixture : ::testing::Test, fakes::WorkerGround {
  std::vector<std::string> warnings;
  WorkerLink link{cfg, log, std::make_unique<WorkerSocket>(cfg.state_dir, 8, log), workers, bus, [this](const std::string& line) { warnings.push_back(line); }};
  std::vector<std::pair<std::string, protocol::WorkRef>> started, answered;

  WorkerLinkFixture() : WorkerGround("zkfarm-worker-link", [](Config& c) { c.synth_workers = 1; }) {
    bus.on<WorkerStarted>([this](const WorkerStarted& e) { started.emplace_back(e.worker.id, e.msg.ref); });
    bus.on<WorkerAnswered>([this](const WorkerAnswered& e) { answered.emplace_back(e.worker.id, e.ref); });
    Worker& w = synth();
    w.pid = 424242;
    EXPECT_TRUE(w.state.on(WorkerEvent::kSpawned));
  }
  Worker& synth() { return *workers.find("synth-0"); }
  /// The peer the kernel reports for the worker's own process.
  Peer own() const { return Peer{::geteuid(), ::getegid(), 424242}; }
  std::string route() const { return protocol::worker_route("synth-0", 424242); }
  std::string ready() const {
    return protocol::encode(protocol::Ready{.worker = "synth-0", .kind = "synth", .version = "t", .pid = 424242,
                                            .backend = "cpu"});
  }
};

TEST_F(WorkerLinkFixture, ReadyFromTheWorkersOwnProcessMakesItIdle) {
  link.on_frame(route(), ready(), own());
  EXPECT_EQ(synth().state, WorkerState::kIdle);
  EXPECT_EQ(synth().backend, "cpu");
  EXPECT_TRUE(warnings.empty());
  link.on_frame(route(), ready(), own());  // a second READY changes nothing
  EXPECT_EQ(synth().state, WorkerState::kIdle);
}

TEST_F(WorkerLinkFixture, AFrameFromAnyOtherProcessIsDroppedUnheard) {
  Peer other = own();
  other.pid = 1;
  link.on_frame(route(), ready(), other);  // another process under the worker's route
  Peer stranger = own();
  stranger.uid = own().uid + 1;
  link.on_frame(route(), ready(), stranger);  // the worker's pid, another user
  link.on_frame(protocol::worker_route("synth-0", 1), ready(), own());  // a route naming another pid
  link.on_frame(route(), ready(), std::nullopt);  // no credentials
  link.on_frame(protocol::worker_route("gpu-7", 424242), ready(), own());  // no such worker
  EXPECT_EQ(synth().state, WorkerState::kStarting) << "nothing was heard";
  EXPECT_EQ(warnings.size(), 5u);
}

TEST_F(WorkerLinkFixture, StartedAndAnswersReachThePipelineAsEvents) {
  link.on_frame(route(), ready(), own());
  const protocol::WorkRef ref{.job = 3, .partition = 1, .slot = 2, .generation = 9};
  link.on_frame(route(), protocol::encode(protocol::Started{ref}), own());
  link.on_frame(route(), protocol::encode(protocol::SynthDone{.ref = ref, .result = {}}), own());
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].first, "synth-0");
  EXPECT_EQ(started[0].second, ref);
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].second, ref);
}

TEST_F(WorkerLinkFixture, AnotherProtocolVersionFromAStartingWorkerAsksItToExit) {
  protocol::Message m = protocol::make("READY");
  m["v"] = protocol::kProtocolVersion + 1;
  link.on_frame(route(), protocol::encode(m), own());
  EXPECT_EQ(synth().state, WorkerState::kStopping);
  EXPECT_GT(synth().stop_deadline_ms, 0);
  ASSERT_EQ(warnings.size(), 1u);
}

TEST_F(WorkerLinkFixture, AGarbledFrameIsDroppedWithAWarningAndIsNoSignOfLife) {
  synth().last_seen_ms = 0;
  link.on_frame(route(), std::string("\xc1 not msgpack", 13), own());
  EXPECT_EQ(synth().state, WorkerState::kStarting);
  EXPECT_EQ(synth().last_seen_ms, 0);
  EXPECT_EQ(warnings.size(), 1u);
}

}  // namespace
}  // namespace zkfarm::supervisor
