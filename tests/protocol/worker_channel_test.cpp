// The workers end to end through their real binaries: a fake supervisor (a
// ROUTER on an ipc:// socket in a temp dir) drives zkfarm-synth and zkfarm-gpu
// over the wire protocol and a real arena; the proof they make is checked by
// snarkjs. Also: malformed frames, busy answers, SHUTDOWN, heartbeat loss,
// signals, the fault hooks and the environment exit codes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <cstring>
#include <optional>
#include <sstream>
#include <thread>
#include <zmq.hpp>

#include "groth16/proof_json.hpp"
#include "groth16/prover.hpp"
#include "groth16/verify.hpp"
#include "protocol/messages.hpp"
#include "groth16/proof_codec.hpp"
#include "protocol/worker_channel.hpp"
#include "shm/arena.hpp"
#include "test_util.hpp"

extern char** environ;

namespace zkfarm {
namespace {

namespace fs = std::filesystem;
namespace proto = zkfarm::protocol;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

using test::read_file;

struct ChannelDir : test::TempDir {
  ChannelDir() : test::TempDir("zkfarm-wc") {}
};

// A spawned worker process. Whatever way the test ends, the destructor kills
// (SIGKILL) and reaps it, so no test leaves a process or a zombie behind.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& fault = "") {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (char** e = environ; *e; ++e) {
      if (!std::string_view(*e).starts_with("ZKFARM_FAULT=")) env_.push_back(*e);
    }
    if (!fault.empty()) env_.push_back("ZKFARM_FAULT=" + fault);
    std::vector<char*> envp;
    for (auto& e : env_) envp.push_back(e.data());
    envp.push_back(nullptr);
    int rc = posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), envp.data());
    if (rc != 0) throw std::runtime_error("posix_spawn " + args[0] + ": " + std::strerror(rc));
  }
  ~Child() {
    if (pid_ > 0 && !code_) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }

  /// Exit code (128 + signal when killed) once it has exited within `timeout`;
  /// nullopt while it still runs.
  std::optional<int> wait_exit(milliseconds timeout) {
    auto end = Clock::now() + timeout;
    while (!code_) {
      int st;
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      } else if (Clock::now() >= end) {
        break;
      } else {
        std::this_thread::sleep_for(milliseconds(10));
      }
    }
    return code_;
  }

 private:
  pid_t pid_ = -1;
  std::vector<std::string> env_;
  std::optional<int> code_;
};

// An arena with a name unique to this process and test, unlinked at the end.
struct ScopedArena {
  static std::string unique_name() {
    static int counter = 0;
    return "zkfarm-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  }
  explicit ScopedArena(uint64_t bytes) : name(unique_name()), arena(create(name, bytes)) {}
  ~ScopedArena() { shm::Arena::remove(name); }
  static shm::Arena create(const std::string& name, uint64_t bytes) {
    shm::Arena::remove(name);
    return shm::Arena::create(name, bytes);
  }
  std::string name;
  shm::Arena arena;
};

// The supervisor's side: a ROUTER that records what each worker sends and,
// while waiting, sends HEARTBEAT to every worker it has heard READY from.
class FakeSupervisor {
 public:
  explicit FakeSupervisor(const std::string& endpoint) : sock_(ctx_, zmq::socket_type::router) {
    sock_.set(zmq::sockopt::linger, 0);
    sock_.bind(endpoint);
  }

  bool heartbeats = true;
  std::map<std::string, int> heartbeats_seen;

  // `worker` is a worker id ("synth-0"); the frame goes to the routing id
  // (proto::worker_route) that worker last spoke from.
  void send_raw(const std::string& worker, const std::vector<std::string>& frames) {
    auto route = routes_.find(worker);
    sock_.send(zmq::buffer(route == routes_.end() ? worker : route->second), zmq::send_flags::sndmore);
    for (size_t i = 0; i < frames.size(); ++i) {
      sock_.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }
  void send(const std::string& worker, const proto::Message& m) { send_raw(worker, {proto::encode(m)}); }

  /// The next message of type `type` from `worker` (its earlier messages of other
  /// types are discarded), or nullopt after `timeout`.
  std::optional<proto::Message> expect(const std::string& worker, const std::string& type, milliseconds timeout) {
    auto end = Clock::now() + timeout;
    for (;;) {
      auto& q = inbox_[worker];
      while (!q.empty()) {
        proto::Message m = std::move(q.front());
        q.pop_front();
        if (proto::type_of(m) == type) return m;
      }
      if (Clock::now() >= end) return std::nullopt;
      pump(milliseconds(50));
    }
  }

  /// Every message from `worker`, in order, until `n` of type `type` have come
  /// (fewer after `timeout`).
  std::vector<proto::Message> gather(const std::string& worker, const std::string& type, size_t n,
                                     milliseconds timeout) {
    std::vector<proto::Message> out;
    size_t seen = 0;
    auto end = Clock::now() + timeout;
    while (seen < n) {
      auto& q = inbox_[worker];
      while (!q.empty() && seen < n) {
        out.push_back(std::move(q.front()));
        q.pop_front();
        seen += proto::type_of(out.back()) == type;
      }
      if (seen >= n || Clock::now() >= end) break;
      pump(milliseconds(50));
    }
    return out;
  }

  /// Receives (and heartbeats) for `d`.
  void idle(milliseconds d) {
    auto end = Clock::now() + d;
    while (Clock::now() < end) pump(milliseconds(20));
  }

 private:
  void pump(milliseconds wait) {
    zmq_pollitem_t item{sock_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, wait);
    while (true) {
      zmq::message_t id, body;
      if (!sock_.recv(id, zmq::recv_flags::dontwait)) break;
      (void)sock_.recv(body);
      proto::Message m = proto::decode(body.to_string_view());
      auto route = proto::parse_worker_route(id.to_string_view());
      ASSERT_TRUE(route) << "a worker spoke from routing id '" << id.to_string() << "', not ID#PID";
      std::string w = route->first;
      routes_[w] = id.to_string();
      if (proto::type_of(m) == proto::kReady) known_.insert(w);
      if (proto::type_of(m) == proto::kHeartbeat) heartbeats_seen[w]++;
      inbox_[w].push_back(std::move(m));
    }
    if (heartbeats && Clock::now() >= next_beat_) {
      for (auto& w : known_) send(w, proto::make(proto::kHeartbeat));
      next_beat_ = Clock::now() + milliseconds(200);
    }
  }

  zmq::context_t ctx_;
  zmq::socket_t sock_;
  std::map<std::string, std::deque<proto::Message>> inbox_;
  std::set<std::string> known_;
  std::map<std::string, std::string> routes_;  // worker id → its routing id
  Clock::time_point next_beat_{};
};

// One test's world: temp dir, socket endpoint, fake supervisor, arena for the chain circuit.
constexpr milliseconds kTimeout{5000};

struct Farm {
  ChannelDir dir;
  std::string endpoint = "ipc://" + (dir / "workers.sock");
  FakeSupervisor sup{endpoint};
  Zkey key = Zkey::open(test::shared_fixture("chain.zkey"));
  uint64_t slot_bytes = (witness_bytes(key) + 4095) & ~uint64_t(4095);
  ScopedArena arena{slot_bytes * 4};

  std::vector<std::string> synth_args(const std::string& id, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{ZKFARM_SYNTH_BIN, "--endpoint", endpoint, "--arena", arena.name, "--id", id,
                               "--heartbeat-ms", "200"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::vector<std::string> gpu_args(const std::string& id, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{ZKFARM_GPU_BIN, "--endpoint", endpoint, "--arena", arena.name, "--id", id,
                               "--heartbeat-ms", "200", "--threads", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  /// The chain fixture's witnesses 0..n-1 into slots 0..n-1 (job 5) by
  /// worker synth-0, after READY from synth-0 and gpu-0.
  void synthesize_chain(uint32_t n) {
    ASSERT_TRUE(sup.expect("synth-0", proto::kReady, kTimeout));
    ASSERT_TRUE(sup.expect("gpu-0", proto::kReady, kTimeout));
    for (uint32_t k = 0; k < n; ++k) {
      sup.send("synth-0", work(proto::kSynth, 5, k, k, test::shared_fixture("chain." + std::to_string(k) + ".wtns")));
      auto done = sup.expect("synth-0", proto::kSynthDone, kTimeout);
      ASSERT_TRUE(done && proto::get_bool(*done, "ok"));
    }
  }
  /// An ABORT of job `job`'s partition k in `slot` (default k; generation 7), to `worker`.
  void abort(uint64_t job, uint32_t k, const std::string& worker = "gpu-0", std::optional<uint32_t> slot = {}) {
    proto::Message m = proto::make(proto::kAbort);
    m["job"] = job;
    m["partition"] = k;
    m["slot"] = slot.value_or(k);
    m["generation"] = 7;
    sup.send(worker, m);
  }
  /// A PROVE_DONE's proof verifies against the key and the public signals in its slot.
  void expect_verifies(const proto::Message& done) {
    const uint32_t k = proto::get_u32(done, "partition");
    const U256* w = reinterpret_cast<const U256*>(arena.arena.at(k * slot_bytes, slot_bytes));
    const VerifyResult v = verify_proof(VerifyingKey::from_zkey(key), decode_proof(proto::get_bin(done, "proof")),
                                        {w + 1, key.n_public});
    EXPECT_TRUE(v) << "partition " << k << ": " << v.reason;
  }

  proto::Message work(const char* type, uint64_t job, uint32_t partition, uint32_t slot, const std::string& wtns) {
    proto::Message m = proto::make(type);
    m["job"] = job;
    m["partition"] = partition;
    m["slot"] = slot;
    m["generation"] = 7;
    m["offset"] = slot * slot_bytes;
    m["size"] = slot_bytes;
    m["zkey"] = test::shared_fixture("chain.zkey");
    if (std::string_view(type) == proto::kSynth) m["wtns"] = wtns;
    return m;
  }
};


TEST(WorkerChannel, SynthThenProveVerifiesWithSnarkjs) {
  Farm f;
  Child synth(f.synth_args("synth-0"));
  Child gpu(f.gpu_args("gpu-0"));

  auto ready = f.sup.expect("synth-0", proto::kReady, kTimeout);
  ASSERT_TRUE(ready);
  EXPECT_EQ(proto::get_str(*ready, "worker"), "synth-0");
  EXPECT_EQ(proto::get_str(*ready, "kind"), "synth");
  EXPECT_EQ(proto::get_str(*ready, "version"), "0.1.0");
  EXPECT_EQ(proto::get_u64(*ready, "pid"), uint64_t(synth.pid()));
  EXPECT_EQ(proto::get_str(*ready, "backend"), "cpu");
  ready = f.sup.expect("gpu-0", proto::kReady, kTimeout);
  ASSERT_TRUE(ready);
  EXPECT_EQ(proto::get_str(*ready, "kind"), "gpu");
  EXPECT_EQ(proto::get_u64(*ready, "pid"), uint64_t(gpu.pid()));
  EXPECT_EQ(proto::get_str(*ready, "backend"), "cpu");

  f.sup.send("synth-0", f.work(proto::kSynth, 42, 3, 1, test::shared_fixture("chain.0.wtns")));
  auto done = f.sup.expect("synth-0", proto::kSynthDone, kTimeout);
  ASSERT_TRUE(done);
  ASSERT_TRUE(proto::get_bool(*done, "ok")) << done->dump();
  EXPECT_EQ(proto::get_u64(*done, "job"), 42u);
  EXPECT_EQ(proto::get_u32(*done, "partition"), 3u);
  EXPECT_EQ(proto::get_u32(*done, "slot"), 1u);
  EXPECT_EQ(proto::get_u64(*done, "generation"), 7u);

  // The slot holds the witness, byte for byte; public.json comes from it.
  const U256* witness = reinterpret_cast<const U256*>(f.arena.arena.at(f.slot_bytes, f.slot_bytes));
  const Wtns wtns = Wtns::open(test::shared_fixture("chain.0.wtns"));
  ASSERT_EQ(std::memcmp(witness, wtns.values.data(), witness_bytes(f.key)), 0);
  std::string pub = f.dir / "public.json", proof_path = f.dir / "proof.json";
  write_file_atomic(pub, public_to_json(witness, f.key.n_public));
  EXPECT_EQ(read_file(pub), read_file(test::shared_fixture("chain.0.public.json")));

  f.sup.send("gpu-0", f.work(proto::kProve, 42, 3, 1, ""));
  done = f.sup.expect("gpu-0", proto::kProveDone, kTimeout);
  ASSERT_TRUE(done);
  ASSERT_TRUE(proto::get_bool(*done, "ok")) << done->dump();
  EXPECT_EQ(proto::get_u32(*done, "partition"), 3u);
  EXPECT_EQ(proto::get_u64(*done, "generation"), 7u);
  std::string bytes = proto::get_bin(*done, "proof");
  ASSERT_EQ(bytes.size(), kProofBytes);
  Proof proof = decode_proof(bytes);
  EXPECT_EQ(encode_proof(proof), bytes);
  write_file_atomic(proof_path, proof_to_json(proof));

  std::string cmd = "node " + test::repo_path("tests/snarkjs_verify.cjs") + " " + test::shared_fixture("chain.vkey.json") +
                    " " + pub + " " + proof_path + " >/dev/null";
  int st = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << cmd;
  // Proving only read the slot: the witness is still there for a second proof.
  EXPECT_EQ(std::memcmp(witness, wtns.values.data(), witness_bytes(f.key)), 0);

  f.sup.send("synth-0", proto::make(proto::kShutdown));
  f.sup.send("gpu-0", proto::make(proto::kShutdown));
  EXPECT_EQ(synth.wait_exit(kTimeout), 0);
  EXPECT_EQ(gpu.wait_exit(kTimeout), 0);
}

// CI (2026-12-03) saw an upgraded synthesis worker die of missing heartbeats:
// it connected 7 ms after its predecessor exited, while zkfarmd's ROUTER still
// held the old pipe under the same bare routing id "synth-0", and ZeroMQ
// ignores a connection whose routing id is taken. Two live processes under
// one worker id are the race held open: each must be heard, and answered, on
// its own route (ID#PID).
TEST(WorkerChannel, TwoProcessesUnderOneWorkerIdAreEachHeardOnTheirOwnRoute) {
  Farm f;
  Child first(f.synth_args("synth-0"));
  auto ready = f.sup.expect("synth-0", proto::kReady, kTimeout);
  ASSERT_TRUE(ready);
  EXPECT_EQ(proto::get_u64(*ready, "pid"), uint64_t(first.pid()));
  Child second(f.synth_args("synth-0"));
  ready = f.sup.expect("synth-0", proto::kReady, kTimeout);
  ASSERT_TRUE(ready) << "the second process under synth-0 was never heard";
  EXPECT_EQ(proto::get_u64(*ready, "pid"), uint64_t(second.pid()));
  for (const Child* c : {&first, &second}) {
    f.sup.send_raw(proto::worker_route("synth-0", long(c->pid())), {proto::encode(proto::make(proto::kShutdown))});
  }
  EXPECT_EQ(first.wait_exit(kTimeout), 0);
  EXPECT_EQ(second.wait_exit(kTimeout), 0);
}

TEST(WorkerRoute, RoundTripsAndRefusesWhatIsNotIdHashPid) {
  EXPECT_EQ(proto::worker_route("gpu-1", 4242), "gpu-1#4242");
  auto r = proto::parse_worker_route("gpu-1#4242");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, "gpu-1");
  EXPECT_EQ(r->second, 4242);
  r = proto::parse_worker_route("a#b#7");  // the last '#' splits
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, "a#b");
  EXPECT_EQ(r->second, 7);
  EXPECT_EQ(proto::parse_worker_route("2147483647x#2147483647")->second, 2147483647);
  for (const char* bad : {"gpu-0", "#12", "gpu-0#", "gpu-0#0", "gpu-0#012", "gpu-0#-3", "gpu-0#12a", "gpu-0#2147483648",
                          "gpu-0#99999999999", ""}) {
    EXPECT_FALSE(proto::parse_worker_route(bad)) << bad;
  }
}

TEST(WorkerChannel, MalformedFramesAreDroppedAndTheWorkerStillAnswers) {
  Farm f;
  Child synth(f.synth_args("synth-0"));
  ASSERT_TRUE(f.sup.expect("synth-0", proto::kReady, kTimeout));

  proto::Message v2 = proto::make(proto::kSynth);
  v2["v"] = 2;
  proto::Message not_map = proto::Message::array({1, 2, 3});
  proto::Message no_ids = proto::make(proto::kSynth);  // no job/partition/slot/generation: nobody to answer
  f.sup.send_raw("synth-0", {"\xc1 not MessagePack"});
  f.sup.send_raw("synth-0", {proto::encode(v2)});
  f.sup.send_raw("synth-0", {proto::encode(not_map)});
  f.sup.send_raw("synth-0", {proto::encode(proto::make(proto::kHeartbeat)), "second frame"});
  f.sup.send_raw("synth-0", {std::string(proto::kMaxFrameBytes + 1, 'x')});
  f.sup.send("synth-0", no_ids);

  // Ids present but a field missing: answered, ok:false.
  proto::Message no_wtns = f.work(proto::kSynth, 1, 0, 0, "");
  no_wtns.erase("wtns");
  f.sup.send("synth-0", no_wtns);
  auto done = f.sup.expect("synth-0", proto::kSynthDone, kTimeout);
  ASSERT_TRUE(done);
  EXPECT_FALSE(proto::get_bool(*done, "ok"));
  EXPECT_NE(proto::get_str(*done, "error").find("wtns"), std::string::npos) << done->dump();

  // A bad input file: ok:false naming it.
  f.sup.send("synth-0", f.work(proto::kSynth, 1, 1, 0, f.dir / "missing.wtns"));
  done = f.sup.expect("synth-0", proto::kSynthDone, kTimeout);
  ASSERT_TRUE(done);
  EXPECT_FALSE(proto::get_bool(*done, "ok"));
  EXPECT_NE(proto::get_str(*done, "error").find("missing.wtns"), std::string::npos) << done->dump();

  // A slot outside the arena: ok:false.
  proto::Message outside = f.work(proto::kSynth, 1, 2, 5, test::shared_fixture("chain.1.wtns"));
  f.sup.send("synth-0", outside);
  done = f.sup.expect("synth-0", proto::kSynthDone, kTimeout);
  ASSERT_TRUE(done);
  EXPECT_FALSE(proto::get_bool(*done, "ok")) << done->dump();

  // PROVE to a synthesis worker: refused, and it still works afterwards.
  f.sup.send("synth-0", f.work(proto::kProve, 1, 3, 0, ""));
  done = f.sup.expect("synth-0", proto::kProveDone, kTimeout);
  ASSERT_TRUE(done);
  EXPECT_FALSE(proto::get_bool(*done, "ok"));

  f.sup.send("synth-0", f.work(proto::kSynth, 1, 4, 0, test::shared_fixture("chain.1.wtns")));
  done = f.sup.expect("synth-0", proto::kSynthDone, kTimeout);
  ASSERT_TRUE(done);
  EXPECT_TRUE(proto::get_bool(*done, "ok")) << done->dump();
  EXPECT_EQ(proto::get_u32(*done, "partition"), 4u);

  // SIGTERM: prompt exit 0.
  ::kill(synth.pid(), SIGTERM);
  EXPECT_EQ(synth.wait_exit(kTimeout), 0);
}

// A synthesis worker's batches (issue 46): SYNTHs of one job sent together
// (batch_of 2) start as one batch even when the second comes later (the
// first waits for it: no STARTED meanwhile; each STARTED before any answer,
// each answered with its own witness in its own slot); while a batch
// computes, kMaxSynthBatch more wait and the next is refused "busy"; an
// ABORT withdraws a waiting one; a SHUTDOWN finishes what computes and waits first.
TEST(WorkerChannel, SynthsSentTogetherAreOneBatchBusyPastTheQueueAndShutdownFinishesFirst) {
  Farm f;
  Child synth(f.synth_args("synth-0"), "slow_ms:400");
  ASSERT_TRUE(f.sup.expect("synth-0", proto::kReady, kTimeout));
  proto::Message first = f.work(proto::kSynth, 9, 0, 0, test::shared_fixture("chain.2.wtns"));
  proto::Message second = f.work(proto::kSynth, 9, 1, 1, test::shared_fixture("chain.3.wtns"));
  first["batch_of"] = second["batch_of"] = 2;
  f.sup.send("synth-0", first);
  // Without the wait for its batch the worker starts the first at once and
  // says STARTED well within this (it then computes for 400 ms).
  EXPECT_FALSE(f.sup.expect("synth-0", proto::kStarted, milliseconds(50))) << "started before its batch was here";
  f.sup.send("synth-0", second);
  std::vector<proto::Message> got = f.sup.gather("synth-0", proto::kSynthDone, 2, kTimeout);
  std::vector<uint32_t> started_before_any_answer, synthesized;
  bool answered = false;
  for (const auto& m : got) {
    if (proto::type_of(m) == proto::kStarted && !answered)
      started_before_any_answer.push_back(proto::get_u32(m, "partition"));
    if (proto::type_of(m) != proto::kSynthDone) continue;
    answered = true;
    EXPECT_TRUE(proto::get_bool(m, "ok")) << m.dump();
    synthesized.push_back(proto::get_u32(m, "partition"));
  }
  EXPECT_EQ(started_before_any_answer, std::vector<uint32_t>({0, 1}));
  EXPECT_EQ(synthesized, std::vector<uint32_t>({0, 1}));
  for (uint32_t k : {0u, 1u}) {  // each slot holds its own partition's witness
    const Wtns w = Wtns::open(test::shared_fixture("chain." + std::to_string(k + 2) + ".wtns"));
    EXPECT_EQ(std::memcmp(f.arena.arena.at(k * f.slot_bytes, f.slot_bytes), w.values.data(), witness_bytes(f.key)), 0);
  }

  f.sup.send("synth-0", f.work(proto::kSynth, 10, 0, 2, test::shared_fixture("chain.0.wtns")));
  ASSERT_TRUE(f.sup.expect("synth-0", proto::kStarted, kTimeout));
  for (uint32_t k = 0; k <= proto::kMaxSynthBatch; ++k)
    f.sup.send("synth-0", f.work(proto::kSynth, 11, k, 3, test::shared_fixture("chain.1.wtns")));
  f.abort(11, 5, "synth-0", 3);
  f.sup.send("synth-0", proto::make(proto::kShutdown));
  got = f.sup.gather("synth-0", proto::kSynthDone, proto::kMaxSynthBatch + 2, milliseconds(60000));
  std::map<std::pair<uint64_t, uint32_t>, std::string> answers;
  for (const auto& m : got)
    if (proto::type_of(m) == proto::kSynthDone)
      answers[{proto::get_u64(m, "job"), proto::get_u32(m, "partition")}] =
          proto::get_bool(m, "ok") ? "ok" : proto::get_str(m, "error");
  ASSERT_EQ(answers.size(), proto::kMaxSynthBatch + 2);
  EXPECT_EQ((answers[{10, 0}]), "ok");
  EXPECT_EQ((answers[{11, uint32_t(proto::kMaxSynthBatch)}]), "busy");
  EXPECT_EQ((answers[{11, 5}]), "aborted before it started");
  for (uint32_t k = 0; k < proto::kMaxSynthBatch; ++k)
    if (k != 5) EXPECT_EQ((answers[{11, k}]), "ok") << k;
  EXPECT_EQ(synth.wait_exit(kTimeout), 0);
}

// gpu_queue_depth from the worker's side: PROVEs sent while one computes wait
// in the worker, the highest priority starts next (a critical one overtakes
// what is only queued, not what computes), an ABORT withdraws a waiting one at
// once, and STARTED says which one computes.
TEST(WorkerChannel, GpuWorkerQueuesByPriorityAndAbortWithdrawsAWaitingOne) {
  Farm f;
  Child synth(f.synth_args("synth-0"));
  Child gpu(f.gpu_args("gpu-0"), "slow_ms:300");
  f.synthesize_chain(4);
  if (HasFatalFailure()) return;
  auto prove = [&](uint32_t k, int priority) {
    proto::Message m = f.work(proto::kProve, 5, k, k, "");
    m["priority"] = priority;
    f.sup.send("gpu-0", m);
  };
  prove(0, 1);
  prove(1, 1);
  prove(2, 3);  // critical: next after partition 0, before 1
  prove(3, 1);
  f.abort(5, 3);

  std::vector<proto::Message> got = f.sup.gather("gpu-0", proto::kProveDone, 4, milliseconds(30000));
  std::vector<uint32_t> started, proved, refused;
  for (const auto& m : got) {
    if (proto::type_of(m) == proto::kStarted) started.push_back(proto::get_u32(m, "partition"));
    if (proto::type_of(m) != proto::kProveDone) continue;
    (proto::get_bool(m, "ok") ? proved : refused).push_back(proto::get_u32(m, "partition"));
    if (!proto::get_bool(m, "ok")) {
      EXPECT_EQ(proto::get_str(m, "error"), "aborted before it started");
      continue;
    }
    f.expect_verifies(m);  // against the key and that partition's public signals
  }
  EXPECT_EQ(refused, std::vector<uint32_t>({3}));
  EXPECT_EQ(started, std::vector<uint32_t>({0, 2, 1}));
  EXPECT_EQ(proved, std::vector<uint32_t>({0, 2, 1}));

  f.sup.send("synth-0", proto::make(proto::kShutdown));
  f.sup.send("gpu-0", proto::make(proto::kShutdown));
  EXPECT_EQ(synth.wait_exit(kTimeout), 0);
  EXPECT_EQ(gpu.wait_exit(kTimeout), 0);
}

// --lanes: a GPU worker computes up to N PROVEs at once (issue 36). Three
// lanes, four PROVEs of a small key: three STARTED before any answer, the
// fourth waits for a lane; an ABORT reaches the lane computing its partition
// (and only it); every other proof verifies.
TEST(WorkerChannel, GpuWorkerLanesComputeSeveralProvesAtOnce) {
  Farm f;
  Child synth(f.synth_args("synth-0"));
  Child gpu(f.gpu_args("gpu-0", {"--lanes", "3"}), "slow_ms:500");
  f.synthesize_chain(4);
  if (HasFatalFailure()) return;
  // The key loads alone first: one PROVE, answered, then four together.
  f.sup.send("gpu-0", f.work(proto::kProve, 5, 0, 0, ""));
  auto first = f.sup.expect("gpu-0", proto::kProveDone, milliseconds(30000));
  ASSERT_TRUE(first && proto::get_bool(*first, "ok"));
  for (uint32_t k = 0; k < 4; ++k) f.sup.send("gpu-0", f.work(proto::kProve, 6, k, k, ""));
  f.abort(6, 1);

  std::vector<proto::Message> got = f.sup.gather("gpu-0", proto::kProveDone, 4, milliseconds(60000));
  std::vector<uint32_t> started_before_any_answer, proved, refused;
  bool answered = false;
  for (const auto& m : got) {
    if (proto::type_of(m) == proto::kStarted && !answered)
      started_before_any_answer.push_back(proto::get_u32(m, "partition"));
    if (proto::type_of(m) != proto::kProveDone) continue;
    answered = true;
    const uint32_t k = proto::get_u32(m, "partition");
    if (!proto::get_bool(m, "ok")) {
      refused.push_back(k);
      continue;
    }
    proved.push_back(k);
    f.expect_verifies(m);
  }
  EXPECT_EQ(started_before_any_answer, std::vector<uint32_t>({0, 1, 2}));
  EXPECT_EQ(refused, std::vector<uint32_t>({1}));
  std::sort(proved.begin(), proved.end());
  EXPECT_EQ(proved, std::vector<uint32_t>({0, 2, 3}));

  f.sup.send("synth-0", proto::make(proto::kShutdown));
  f.sup.send("gpu-0", proto::make(proto::kShutdown));
  EXPECT_EQ(synth.wait_exit(kTimeout), 0);
  EXPECT_EQ(gpu.wait_exit(kTimeout), 0);
}

TEST(WorkerChannel, ExitsWhenTheSupervisorFallsSilent) {
  Farm f;
  Child gpu(f.gpu_args("gpu-0", {"--heartbeat-timeout-ms", "1500"}));
  ASSERT_TRUE(f.sup.expect("gpu-0", proto::kReady, kTimeout));
  f.sup.heartbeats = false;
  auto start = Clock::now();
  std::optional<int> code;
  while (!(code = gpu.wait_exit(milliseconds(0))) && Clock::now() - start < kTimeout) f.sup.idle(milliseconds(50));
  EXPECT_EQ(code, proto::kExitSupervisorLost);
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
  EXPECT_GE(took, 1000);
  EXPECT_LE(took, 3000);
  EXPECT_GE(f.sup.heartbeats_seen["gpu-0"], 4);  // it kept beating (every 200 ms) meanwhile
}

TEST(WorkerChannel, FaultHooks) {
  Farm f;
  {
    Child synth(f.synth_args("synth-0"), "crash_after:1");
    ASSERT_TRUE(f.sup.expect("synth-0", proto::kReady, kTimeout));
    f.sup.send("synth-0", f.work(proto::kSynth, 1, 0, 0, test::shared_fixture("chain.4.wtns")));
    auto done = f.sup.expect("synth-0", proto::kSynthDone, kTimeout);
    ASSERT_TRUE(done);
    EXPECT_TRUE(proto::get_bool(*done, "ok"));
    f.sup.send("synth-0", f.work(proto::kSynth, 1, 1, 0, test::shared_fixture("chain.5.wtns")));
    EXPECT_EQ(synth.wait_exit(kTimeout), 128 + SIGABRT);
  }
  {
    Child synth(f.synth_args("synth-1"), "hang");
    ASSERT_TRUE(f.sup.expect("synth-1", proto::kReady, kTimeout));
    f.sup.send("synth-1", f.work(proto::kSynth, 1, 0, 0, test::shared_fixture("chain.4.wtns")));
    f.sup.idle(milliseconds(300));
    int before = f.sup.heartbeats_seen["synth-1"];
    f.sup.idle(milliseconds(800));
    EXPECT_EQ(f.sup.heartbeats_seen["synth-1"], before);
    EXPECT_FALSE(f.sup.expect("synth-1", proto::kSynthDone, milliseconds(0)));
    ::kill(synth.pid(), SIGTERM);  // the death signal still works while hung
    EXPECT_EQ(synth.wait_exit(kTimeout), 0);
  }
}

TEST(WorkerChannel, SigtermWhileComputingExitsPromptly) {
  Farm f;
  // The step would take 60 s; exiting well before that is "promptly", on any
  // machine, however loaded (no tight wall-clock bound).
  Child synth(f.synth_args("synth-0"), "slow_ms:60000");
  ASSERT_TRUE(f.sup.expect("synth-0", proto::kReady, kTimeout));
  f.sup.send("synth-0", f.work(proto::kSynth, 1, 0, 0, test::shared_fixture("chain.6.wtns")));
  f.sup.idle(milliseconds(200));
  auto start = Clock::now();
  ::kill(synth.pid(), SIGTERM);
  EXPECT_EQ(synth.wait_exit(kTimeout), 0);
  EXPECT_LT(Clock::now() - start, milliseconds(30000));
}

// A process that is not our child (a grandchild, reparented to this test by
// PR_SET_CHILD_SUBREAPER when its parent dies): killed and reaped at the end.
struct Orphan {
  pid_t pid = 0;
  std::optional<int> code;
  ~Orphan() {
    if (pid > 0 && !code) {
      ::kill(pid, SIGKILL);
      int st;
      for (int i = 0; i < 200 && ::waitpid(pid, &st, 0) != pid; ++i) std::this_thread::sleep_for(milliseconds(10));
    }
  }
  std::optional<int> wait_exit(milliseconds timeout) {
    auto end = Clock::now() + timeout;
    while (!code && Clock::now() < end) {
      int st;
      if (::waitpid(pid, &st, WNOHANG) == pid) {
        code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      } else {
        std::this_thread::sleep_for(milliseconds(10));  // ECHILD until it is reparented to us
      }
    }
    return code;
  }
};

TEST(WorkerChannel, ExitsWhenItsParentDies) {
  Farm f;
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  struct Unset {
    ~Unset() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
  } unset;
  std::string cmd;
  for (auto& a : f.synth_args("synth-0")) cmd += "'" + a + "' ";
  // The shell (the worker's parent) lives 1 s, then dies.
  Child shell({"/bin/sh", "-c", cmd + "& sleep 1"});
  auto ready = f.sup.expect("synth-0", proto::kReady, kTimeout);
  ASSERT_TRUE(ready);
  Orphan worker;
  worker.pid = pid_t(proto::get_u64(*ready, "pid"));
  EXPECT_EQ(shell.wait_exit(kTimeout), 0);
  EXPECT_EQ(worker.wait_exit(kTimeout), proto::kExitSupervisorLost);
}

TEST(WorkerChannel, EnvironmentAndUsageExitCodes) {
  Farm f;
  Child cuda(f.gpu_args("gpu-0", {"--backend", "cuda"}));
  EXPECT_EQ(cuda.wait_exit(kTimeout), proto::kExitEnvironment);
  Child no_arena({ZKFARM_SYNTH_BIN, "--endpoint", f.endpoint, "--arena", "zkfarm-test-no-such-arena"});
  EXPECT_EQ(no_arena.wait_exit(kTimeout), proto::kExitEnvironment);
  Child bad_endpoint({ZKFARM_SYNTH_BIN, "--endpoint", "nonsense://x", "--arena", f.arena.name});
  EXPECT_EQ(bad_endpoint.wait_exit(kTimeout), proto::kExitEnvironment);
  Child bad_fault(f.synth_args("synth-0"), "explode");
  EXPECT_EQ(bad_fault.wait_exit(kTimeout), proto::kExitUsage);
}

TEST(ProofCodec, RejectsWrongSizesAndBadPoints) {
  EXPECT_THROW(decode_proof(std::string(255, '\0')), MalformedProof);
  EXPECT_THROW(decode_proof(std::string(257, '\0')), MalformedProof);
  Proof p{test::g1_generator(), test::g2_generator(), G1Affine::infinity()};
  std::string bytes = encode_proof(p);
  ASSERT_EQ(bytes.size(), 256u);
  Proof q = decode_proof(bytes);
  EXPECT_TRUE(q.a == p.a && q.b == p.b && q.c == p.c);
  bytes[0] ^= 1;  // x of πA moved: off the curve
  EXPECT_THROW(decode_proof(bytes), MalformedProof);
  std::string all_ff(256, '\xff');
  EXPECT_THROW(decode_proof(all_ff), MalformedProof);
}

}  // namespace
}  // namespace zkfarm
