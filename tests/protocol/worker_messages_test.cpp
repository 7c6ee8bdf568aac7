// The worker messages as types (protocol/worker_messages.hpp): each struct
// round-trips through its encoder and its side's decoder; the encoders write
// the bytes the hand-built maps of before wrote (so old and new processes
// interoperate); every refusal of decode() and of the field getters still
// refuses; the leniencies the readers had stay; and worker_kit's
// request_witness still refuses a slot that cannot hold the witness.
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <random>
#include <string>
#include <typeinfo>
#include <variant>
#include <vector>

#include "groth16/prover.hpp"
#include "protocol/messages.hpp"
#include "protocol/worker_messages.hpp"
#include "shm/arena.hpp"
#include "test_util.hpp"
#include "worker_kit/work_request.hpp"

namespace zkfarm {
namespace {

namespace proto = zkfarm::protocol;
using proto::Message;
using proto::ProtocolError;

const proto::WorkRef kRef{17, 3, 2, 9};

// The map every request and answer starts with, as the hand-built code made it.
Message with_ref(const char* type) {
  Message m = proto::make(type);
  m["job"] = 17;
  m["partition"] = 3;
  m["slot"] = 2;
  m["generation"] = 9;
  return m;
}

std::string proof_bytes() {
  std::string proof(256, '\0');
  for (size_t i = 0; i < proof.size(); ++i) proof[i] = static_cast<char>(i * 7);
  return proof;
}

proto::Synth synth_of_wtns() {
  return {kRef, {uint64_t{1} << 33, uint64_t{3} << 20}, "/data/keys/chain.zkey", proto::WitnessFile{"/data/w/0.wtns"}};
}

proto::Synth synth_of_input() {
  proto::Synth s = synth_of_wtns();
  s.witness = proto::CircuitInput{.generator = "/var/lib/zkfarm/circuits/ab12/generator",
                                  .input = "/var/lib/zkfarm/inputs/jobs/17/3.json",
                                  .input_name = "/home/ann/in/3.json",
                                  .witness_timeout_ms = 120000,
                                  .witness_memory_mib = 4096,
                                  .witness_cpu_s = 60,
                                  .sandbox_user = "nobody",
                                  .sandbox_uid_base = 1879048192,
                                  .sandbox_uid_count = 64,
                                  .witness_engine = "graph",
                                  .statement = R"([{"hash":"0000000000000001","size":1,"at":2}])",
                                  .graph_sha256 = std::string(64, 'a')};
  return s;
}

// Each encoder against the map the code built by hand before these types
// existed (supervisor/pipeline/pipeline.cpp, cluster.cpp, worker_channel.cpp): the
// same bytes, so a worker or zkfarmd of either side reads the other.
TEST(WorkerMessages, EncodersWriteTheBytesOfTheHandBuiltMaps) {
  Message synth = with_ref(proto::kSynth);
  synth["offset"] = uint64_t{1} << 33;
  synth["size"] = uint64_t{3} << 20;
  synth["zkey"] = "/data/keys/chain.zkey";
  synth["wtns"] = "/data/w/0.wtns";
  EXPECT_EQ(proto::encode(synth_of_wtns()), proto::encode(synth));

  synth.erase("wtns");
  synth["generator"] = "/var/lib/zkfarm/circuits/ab12/generator";
  synth["input"] = "/var/lib/zkfarm/inputs/jobs/17/3.json";
  synth["input_name"] = "/home/ann/in/3.json";
  synth["witness_timeout_ms"] = unsigned{120000};  // Config's types
  synth["witness_memory_mib"] = uint64_t{4096};
  synth["witness_cpu_s"] = uint64_t{60};
  synth["sandbox_user"] = std::string("nobody");
  synth["sandbox_uid_base"] = uint64_t(1879048192);
  synth["sandbox_uid_count"] = uint64_t(64);
  synth["statement"] = std::string(R"([{"hash":"0000000000000001","size":1,"at":2}])");
  synth["graph_sha256"] = std::string(64, 'a');
  synth["witness_engine"] = std::string("graph");
  EXPECT_EQ(proto::encode(synth_of_input()), proto::encode(synth));

  Message prove = with_ref(proto::kProve);
  prove["offset"] = 0;
  prove["size"] = 4096;
  prove["zkey"] = "/data/keys/chain.zkey";
  prove["priority"] = int(3);  // int(job->priority)
  EXPECT_EQ(proto::encode(proto::Prove{kRef, {0, 4096}, "/data/keys/chain.zkey", 3}), proto::encode(prove));

  EXPECT_EQ(proto::encode(proto::Abort{kRef}), proto::encode(with_ref(proto::kAbort)));
  EXPECT_EQ(proto::encode(proto::Started{kRef}), proto::encode(with_ref(proto::kStarted)));
  EXPECT_EQ(proto::encode(proto::Shutdown{}), proto::encode(proto::make(proto::kShutdown)));
  EXPECT_EQ(proto::encode(proto::Heartbeat{}), proto::encode(proto::make(proto::kHeartbeat)));
  Message hb = proto::make(proto::kHeartbeat);
  hb["worker"] = "gpu-0";
  EXPECT_EQ(proto::encode(proto::Heartbeat{"gpu-0"}), proto::encode(hb));

  Message ready = proto::make(proto::kReady);
  ready["worker"] = "synth-0";
  ready["kind"] = "synth";
  ready["version"] = "0.1.0";
  ready["pid"] = int64_t{4242};
  ready["backend"] = "cpu";
  EXPECT_EQ(proto::encode(proto::Ready{"synth-0", "synth", "0.1.0", 4242, "cpu"}), proto::encode(ready));

  Message sdone = with_ref(proto::kSynthDone);
  sdone["ok"] = false;
  sdone["error"] = "/data/w/0.wtns: section 2: value 0 (the constant signal) is not 1";
  const std::string error = sdone["error"];
  EXPECT_EQ(proto::encode(proto::SynthDone{kRef, proto::WorkResult::failure(error)}), proto::encode(sdone));
  Message sok = with_ref(proto::kSynthDone);
  sok["ok"] = true;
  // A synthesis answer never carries a proof or key_cached, whatever the result holds.
  EXPECT_EQ(proto::encode(proto::SynthDone{kRef, {true, "", "x", true}}), proto::encode(sok));

  Message pdone = with_ref(proto::kProveDone);
  pdone["ok"] = true;
  pdone["proof"] = proto::bin(proof_bytes());
  pdone["key_cached"] = false;
  EXPECT_EQ(proto::encode(proto::ProveDone{kRef, {true, "", proof_bytes(), false}}), proto::encode(pdone));
  Message pfail = with_ref(proto::kProveDone);
  pfail["ok"] = false;
  pfail["error"] = "busy";
  EXPECT_EQ(proto::encode(proto::ProveDone{kRef, proto::WorkResult::failure("busy")}), proto::encode(pfail));
  // A fault of the device, not of the partition (issue 49): the same answer with device_fault.
  pfail["device_fault"] = true;
  EXPECT_EQ(proto::encode(proto::ProveDone{kRef, proto::WorkResult::device_failure("busy")}), proto::encode(pfail));
}

template <class T>
T from_worker(const std::string& frame) {
  return std::get<T>(proto::decode_from_worker(frame));
}

template <class T>
T from_supervisor(const std::string& frame) {
  return std::get<T>(proto::decode_from_supervisor(frame));
}

TEST(WorkerMessages, EveryMessageRoundTrips) {
  const proto::Ready ready{"gpu-1", "gpu", "0.1.0", 99, "cuda"};
  EXPECT_EQ(from_worker<proto::Ready>(proto::encode(ready)), ready);
  EXPECT_EQ(from_worker<proto::Heartbeat>(proto::encode(proto::Heartbeat{"gpu-1"})), proto::Heartbeat{"gpu-1"});
  EXPECT_EQ(from_worker<proto::Started>(proto::encode(proto::Started{kRef})), proto::Started{kRef});
  const proto::SynthDone sd{kRef, proto::WorkResult::failure("aborted")};
  EXPECT_EQ(from_worker<proto::SynthDone>(proto::encode(sd)), sd);
  EXPECT_EQ(from_worker<proto::SynthDone>(proto::encode(proto::SynthDone{kRef, {}})), (proto::SynthDone{kRef, {}}));
  const proto::ProveDone pd{kRef, {true, "", proof_bytes(), true}};
  EXPECT_EQ(from_worker<proto::ProveDone>(proto::encode(pd)), pd);
  const proto::ProveDone pd_no_cache{kRef, {true, "", proof_bytes(), std::nullopt}};
  EXPECT_EQ(from_worker<proto::ProveDone>(proto::encode(pd_no_cache)), pd_no_cache);

  EXPECT_EQ(from_supervisor<proto::Heartbeat>(proto::encode(proto::Heartbeat{})), proto::Heartbeat{});
  EXPECT_EQ(from_supervisor<proto::Synth>(proto::encode(synth_of_wtns())), synth_of_wtns());
  EXPECT_EQ(from_supervisor<proto::Synth>(proto::encode(synth_of_input())), synth_of_input());
  proto::Synth batched = synth_of_input();
  batched.batch_of = 16;
  EXPECT_EQ(from_supervisor<proto::Synth>(proto::encode(batched)), batched);
  const proto::Prove prove{{UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT64_MAX}, {UINT64_MAX, 0}, "/k.zkey", 2};
  EXPECT_EQ(from_supervisor<proto::Prove>(proto::encode(prove)), prove);
  EXPECT_EQ(from_supervisor<proto::Abort>(proto::encode(proto::Abort{kRef})), proto::Abort{kRef});
  EXPECT_TRUE(std::holds_alternative<proto::Shutdown>(proto::decode_from_supervisor(proto::encode(proto::Shutdown{}))));
}

// What the readers in place accepted, the decoders still accept, with the same meaning.
TEST(WorkerMessages, OptionalFieldsKeepTheirDefaultsAndLeniency) {
  Message prove = with_ref(proto::kProve);
  prove["offset"] = 0;
  prove["size"] = 4096;
  prove["zkey"] = "/k.zkey";
  EXPECT_EQ(from_supervisor<proto::Prove>(proto::encode(prove)).priority, 0u);  // absent
  prove["priority"] = -1;
  EXPECT_EQ(from_supervisor<proto::Prove>(proto::encode(prove)).priority, 0u);  // unreadable: lowest
  prove["priority"] = "high";
  EXPECT_EQ(from_supervisor<proto::Prove>(proto::encode(prove)).priority, 0u);

  Message synth = with_ref(proto::kSynth);
  synth["offset"] = 0;
  synth["size"] = 4096;
  synth["zkey"] = "/k.zkey";
  synth["generator"] = "/g";
  synth["input"] = "/in.json";
  const proto::Synth s = from_supervisor<proto::Synth>(proto::encode(synth));
  const auto& in = std::get<proto::CircuitInput>(s.witness);
  EXPECT_EQ(in.input_name, "/in.json");  // absent: the input's own path
  EXPECT_EQ(in.witness_timeout_ms, 600000u);
  EXPECT_EQ(in.witness_memory_mib, 0u);
  EXPECT_EQ(in.witness_cpu_s, 600u);
  EXPECT_EQ(in.sandbox_user, "zkfarm-sandbox");
  EXPECT_EQ(in.sandbox_uid_count, 1024u);  // an older zkfarmd's SYNTH: the pool's default
  EXPECT_EQ(in.statement, "");             // nothing to check
  EXPECT_EQ(in.graph_sha256, "");
  EXPECT_EQ(in.witness_engine, "auto");
  EXPECT_EQ(s.batch_of, 1u);  // absent: alone (a zkfarmd before batch_of)
  synth["batch_of"] = -3;
  EXPECT_EQ(from_supervisor<proto::Synth>(proto::encode(synth)).batch_of, 1u);  // unreadable: alone
  synth["batch_of"] = 0;
  EXPECT_EQ(from_supervisor<proto::Synth>(proto::encode(synth)).batch_of, 1u);
  synth.erase("batch_of");
  synth["wtns"] = "/w.wtns";  // "generator" decides, as before
  EXPECT_TRUE(std::holds_alternative<proto::CircuitInput>(from_supervisor<proto::Synth>(proto::encode(synth)).witness));

  Message failed = with_ref(proto::kProveDone);
  failed["ok"] = false;  // no error, no proof
  const proto::ProveDone d = from_worker<proto::ProveDone>(proto::encode(failed));
  EXPECT_FALSE(d.result.ok);
  EXPECT_EQ(d.result.error, "unknown error");
  Message proved = with_ref(proto::kProveDone);
  proved["ok"] = true;
  proved["proof"] = proto::bin("abc");  // any size: the supervisor checks it against the job's curve
  proved["key_cached"] = 1;             // not a boolean: as if absent
  const proto::ProveDone p = from_worker<proto::ProveDone>(proto::encode(proved));
  EXPECT_EQ(p.result.proof, "abc");
  EXPECT_FALSE(p.result.key_cached);
  // device_fault: only a boolean true on a failed answer; anything else is
  // the partition's own fault (its job fails), as from a worker that never sends it.
  failed["device_fault"] = true;
  EXPECT_TRUE(from_worker<proto::ProveDone>(proto::encode(failed)).result.device_fault);
  failed["device_fault"] = 1;
  EXPECT_FALSE(from_worker<proto::ProveDone>(proto::encode(failed)).result.device_fault);
  proved["device_fault"] = true;
  EXPECT_FALSE(from_worker<proto::ProveDone>(proto::encode(proved)).result.device_fault) << "an ok answer has none";

  Message hb = proto::make(proto::kHeartbeat);
  EXPECT_EQ(from_worker<proto::Heartbeat>(proto::encode(hb)).worker, "");  // the supervisor's has none
}

// The text of the ProtocolError `decode` throws for `frame`, or a failure.
template <class Decode>
std::string refusal(Decode decode, const std::string& frame) {
  try {
    decode(frame);
  } catch (const proto::MalformedRequest& e) {
    ADD_FAILURE() << "refused as a request to answer: " << e.what();
    return e.what();
  } catch (const ProtocolError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

const auto kFromWorker = [](const std::string& f) { (void)proto::decode_from_worker(f); };
const auto kFromSupervisor = [](const std::string& f) { (void)proto::decode_from_supervisor(f); };

#define EXPECT_REFUSED(decode, frame, text) \
  EXPECT_NE(refusal(decode, frame).find(text), std::string::npos) << refusal(decode, frame)

TEST(WorkerMessages, DecodeRefusalsStillRefuse) {
  for (const auto& decode : {std::function<void(const std::string&)>(kFromWorker),
                             std::function<void(const std::string&)>(kFromSupervisor)}) {
    EXPECT_REFUSED(decode, std::string(proto::kMaxFrameBytes + 1, 'x'), "exceeds the limit");
    EXPECT_REFUSED(decode, std::string(100, '\x91') + "\xc0", "nested deeper than 16 levels");
    EXPECT_REFUSED(decode, "\xc1 not MessagePack", "");
    EXPECT_REFUSED(decode, proto::encode(Message::array({1, 2, 3})), "not a map");
    Message no_t = Message::object();
    no_t["v"] = 1;
    EXPECT_REFUSED(decode, proto::encode(no_t), "no type");
    Message v2 = proto::make(proto::kHeartbeat);
    v2["v"] = 2;
    EXPECT_THROW(decode(proto::encode(v2)), proto::VersionError);
    EXPECT_REFUSED(decode, proto::encode(proto::make("NOPE")), "NOPE");
  }
  // Each side takes only what the other sends.
  EXPECT_REFUSED(kFromWorker, proto::encode(synth_of_wtns()), "a worker does not send SYNTH");
  EXPECT_REFUSED(kFromWorker, proto::encode(proto::Shutdown{}), "SHUTDOWN");
  EXPECT_REFUSED(kFromSupervisor, proto::encode(proto::Ready{"w", "gpu", "1", 1, "cpu"}), "a worker does not take READY");
  EXPECT_REFUSED(kFromSupervisor, proto::encode(proto::Started{kRef}), "STARTED");
}

TEST(WorkerMessages, MissingOrMistypedFieldsAreRefusedByName) {
  // Worker → supervisor: every required field of each message.
  struct Case {
    Message msg;
    std::vector<const char*> required;
  };
  Message ready = proto::make(proto::kReady);
  ready["worker"] = "synth-0";
  ready["kind"] = "synth";
  ready["version"] = "0.1.0";
  ready["pid"] = 4242;
  ready["backend"] = "cpu";
  Message sdone = with_ref(proto::kSynthDone);
  sdone["ok"] = true;
  Message pdone = with_ref(proto::kProveDone);
  pdone["ok"] = true;
  pdone["proof"] = proto::bin(proof_bytes());
  const std::vector<const char*> ids = {"job", "partition", "slot", "generation"};
  auto plus = [&](std::vector<const char*> more) {
    more.insert(more.begin(), ids.begin(), ids.end());
    return more;
  };
  for (const Case& c : {Case{ready, {"worker", "kind", "version", "pid", "backend"}},
                        Case{with_ref(proto::kStarted), ids}, Case{sdone, plus({"ok"})},
                        Case{pdone, plus({"ok", "proof"})}}) {
    ASSERT_NO_THROW(proto::decode_from_worker(proto::encode(c.msg))) << c.msg.dump();
    for (const char* field : c.required) {
      Message missing = c.msg;
      missing.erase(field);
      EXPECT_REFUSED(kFromWorker, proto::encode(missing), std::string("missing field \"") + field + "\"");
      Message mistyped = c.msg;
      mistyped[field] = Message::array();
      EXPECT_REFUSED(kFromWorker, proto::encode(mistyped), std::string("field \"") + field + "\"");
    }
  }
  Message negative = with_ref(proto::kStarted);
  negative["job"] = -1;
  EXPECT_REFUSED(kFromWorker, proto::encode(negative), "not a non-negative integer");
  Message wide = with_ref(proto::kStarted);
  wide["partition"] = uint64_t{1} << 32;
  EXPECT_REFUSED(kFromWorker, proto::encode(wide), "out of range");
  Message bad_error = with_ref(proto::kSynthDone);
  bad_error["ok"] = false;
  bad_error["error"] = 5;
  EXPECT_REFUSED(kFromWorker, proto::encode(bad_error), "field \"error\" is not a string");

  // Supervisor → worker: ABORT without its ids is refused like any message.
  for (const char* field : ids) {
    Message abort = with_ref(proto::kAbort);
    abort.erase(field);
    EXPECT_REFUSED(kFromSupervisor, proto::encode(abort), field);
  }
}

// A SYNTH or PROVE whose ids decode is a request the worker can answer: its
// other faults come as MalformedRequest with the ids; without ids, nobody to answer.
TEST(WorkerMessages, RequestsWithIdsButBadFieldsAreAnswerable) {
  const Message synth = proto::decode(proto::encode(synth_of_input()));
  for (const char* field : {"offset", "size", "zkey", "input"}) {
    Message m = synth;
    m.erase(field);
    try {
      (void)proto::decode_from_supervisor(proto::encode(m));
      ADD_FAILURE() << "accepted without " << field;
    } catch (const proto::MalformedRequest& e) {
      EXPECT_STREQ(e.type(), proto::kSynth);
      EXPECT_EQ(e.ref(), kRef);
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  Message mistyped = synth;
  mistyped["witness_cpu_s"] = "lots";
  EXPECT_THROW(proto::decode_from_supervisor(proto::encode(mistyped)), proto::MalformedRequest);
  Message no_wtns = proto::decode(proto::encode(synth_of_wtns()));
  no_wtns.erase("wtns");
  EXPECT_THROW(proto::decode_from_supervisor(proto::encode(no_wtns)), proto::MalformedRequest);
  Message prove = proto::decode(proto::encode(proto::Prove{kRef, {0, 4096}, "/k.zkey", 1}));
  prove.erase("zkey");
  try {
    (void)proto::decode_from_supervisor(proto::encode(prove));
    ADD_FAILURE() << "accepted without zkey";
  } catch (const proto::MalformedRequest& e) {
    EXPECT_STREQ(e.type(), proto::kProve);
    EXPECT_EQ(e.ref(), kRef);
  }
  for (const char* field : {"job", "partition", "slot", "generation"}) {
    Message m = synth;
    m.erase(field);
    EXPECT_REFUSED(kFromSupervisor, proto::encode(m), field);  // a plain ProtocolError
  }
}

// Random mutations of every message: the typed decoders give a message or a
// ProtocolError, never another exception. Fixed seed: a failure reproduces.
TEST(WorkerMessages, MutatedFramesOnlyEverThrowProtocolError) {
  const std::vector<std::string> seeds = {
      proto::encode(proto::Ready{"synth-0", "synth", "0.1.0", 4242, "cpu"}),
      proto::encode(proto::Heartbeat{"gpu-0"}),
      proto::encode(synth_of_wtns()),
      proto::encode(synth_of_input()),
      proto::encode(proto::Prove{kRef, {0, 4096}, "/k.zkey", 3}),
      proto::encode(proto::Started{kRef}),
      proto::encode(proto::SynthDone{kRef, proto::WorkResult::failure("bad")}),
      proto::encode(proto::ProveDone{kRef, {true, "", proof_bytes(), true}}),
      proto::encode(proto::Abort{kRef}),
      proto::encode(proto::Shutdown{}),
  };
  std::mt19937_64 rng(20261204);
  size_t decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string f = seeds[rng() % seeds.size()];
    for (int k = 1 + int(rng() % 3); k > 0; --k) {
      switch (rng() % 3) {
        case 0: f[rng() % f.size()] = static_cast<char>(rng()); break;
        case 1: f.erase(rng() % f.size(), 1); break;
        default: f.insert(f.begin() + long(rng() % (f.size() + 1)), static_cast<char>(rng())); break;
      }
      if (f.empty()) f = "\x80";
    }
    for (int side = 0; side < 2; ++side) {
      try {
        if (side == 0) (void)proto::decode_from_worker(f);
        else (void)proto::decode_from_supervisor(f);
        ++decoded;
      } catch (const ProtocolError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << "frame " << i << ": " << typeid(e).name() << ": " << e.what();
      }
    }
  }
  EXPECT_GT(decoded, 0u);  // the mutations leave some messages whole
}

// worker_kit's request_witness: the slot must hold the key's witness, 8-byte
// aligned, inside the arena.
TEST(WorkerKit, RequestWitnessRefusesSlotsThatCannotHoldTheWitness) {
  const Zkey key = Zkey::open(test::shared_fixture("chain.zkey"));
  const uint64_t need = witness_bytes(key);
  const uint64_t slot = (need + 4095) & ~uint64_t(4095);
  const std::string name = "zkfarm-test-wm-" + std::to_string(::getpid());
  shm::Arena::remove(name);
  struct Unlink {
    std::string name;
    ~Unlink() { shm::Arena::remove(name); }
  } unlink{name};
  shm::Arena arena = shm::Arena::create(name, slot * 2);
  EXPECT_EQ(reinterpret_cast<uint8_t*>(worker_kit::request_witness({slot, slot}, arena, key)),
            static_cast<uint8_t*>(arena.at(slot, slot)));
  EXPECT_THROW(worker_kit::request_witness({0, need - 1}, arena, key), ProtocolError);
  EXPECT_THROW(worker_kit::request_witness({4, slot}, arena, key), ProtocolError);
  EXPECT_THROW(worker_kit::request_witness({slot * 2, slot}, arena, key), shm::ArenaError);
}

}  // namespace
}  // namespace zkfarm
