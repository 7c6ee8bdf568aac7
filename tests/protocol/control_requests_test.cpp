// Control requests as types (protocol/control_requests.hpp): what a client
// builds is what zkfarmd decodes, and a field of the wrong shape is refused
// at the edge with the field's name.
#include <gtest/gtest.h>

#include "protocol/control_requests.hpp"

namespace proto = zkfarm::protocol;

namespace {

// Round trip through the wire form, as the control channel carries it.
proto::Message over_the_wire(const proto::Message& m) { return proto::decode(proto::encode(m)); }

TEST(ControlRequests, ASubmitOfWitnessesComesBackFieldForField) {
  const proto::Submit s{.zkey = "/k/c.zkey",
                        .wtns = {"/w/0.wtns", "/w/1.wtns"},
                        .priority = "high",
                        .out = "/out",
                        .idempotency_key = "abc"};
  const proto::Message m = over_the_wire(proto::to_message(s));
  EXPECT_EQ(proto::type_of(m), "submit");
  EXPECT_FALSE(m.contains("circuit"));
  EXPECT_FALSE(m.contains("inputs"));
  const proto::Submit d = proto::decode_submit(m);
  EXPECT_EQ(d.zkey, s.zkey);
  EXPECT_EQ(d.wtns, s.wtns);
  EXPECT_FALSE(d.circuit);
  EXPECT_TRUE(d.inputs.empty());
  EXPECT_EQ(d.priority, "high");
  EXPECT_EQ(d.out, "/out");
  EXPECT_EQ(d.idempotency_key, "abc");
}

TEST(ControlRequests, ASubmitOfInputsNamesItsCircuitAndNoKey) {
  proto::Submit s;
  s.circuit = "sha256";
  s.inputs = {"/i/0.json"};
  const proto::Message m = over_the_wire(proto::to_message(s));
  EXPECT_FALSE(m.contains("zkey"));
  EXPECT_FALSE(m.contains("wtns"));
  EXPECT_FALSE(m.contains("out")) << "no output folder: the client reads the proofs";
  const proto::Submit d = proto::decode_submit(m);
  ASSERT_TRUE(d.circuit);
  EXPECT_EQ(*d.circuit, "sha256");
  EXPECT_EQ(d.inputs, s.inputs);
  EXPECT_EQ(d.priority, "normal");
  EXPECT_EQ(d.out, "");
}

TEST(ControlRequests, ASubmitOfTheWrongShapeIsRefusedNamingTheField) {
  proto::Message m = proto::make("submit");
  m["wtns"] = proto::Message::array({"/w/0.wtns"});
  try {
    proto::decode_submit(m);
    ADD_FAILURE() << "a job of witnesses without zkey decoded";
  } catch (const proto::ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("zkey"), std::string::npos) << e.what();
  }
  m["zkey"] = "/k.zkey";
  m["wtns"] = proto::Message::array({"/w/0.wtns", 7});
  try {
    proto::decode_submit(m);
    ADD_FAILURE() << "a number among the paths decoded";
  } catch (const proto::ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("wtns"), std::string::npos) << e.what();
  }
  m["wtns"] = proto::Message::array({"/w/0.wtns"});
  m["priority"] = 3;
  EXPECT_THROW(proto::decode_submit(m), proto::ProtocolError);
  m["priority"] = "low";
  m["out"] = proto::Message::array();
  EXPECT_THROW(proto::decode_submit(m), proto::ProtocolError);
  m.erase("out");
  m["circuit"] = 1;
  EXPECT_THROW(proto::decode_submit(m), proto::ProtocolError);
}

TEST(ControlRequests, AMissingOrNonListPathListIsEmptyForIntakeToRefuse) {
  proto::Message m = proto::make("submit");
  m["zkey"] = "/k.zkey";
  EXPECT_TRUE(proto::decode_submit(m).wtns.empty());
  m["wtns"] = "/w/0.wtns";
  EXPECT_TRUE(proto::decode_submit(m).wtns.empty());
}

TEST(ControlRequests, AResultPageNamesItsJobAndFirstPartition) {
  const proto::Result d = proto::decode_result(over_the_wire(proto::to_message(proto::Result{.job = 42, .from = 256})));
  EXPECT_EQ(d.job, 42u);
  EXPECT_EQ(d.from, 256u);
  proto::Message m = proto::make("result");
  m["job"] = 5;
  EXPECT_EQ(proto::decode_result(m).from, 0u) << "no from: the first page";
  m.erase("job");
  EXPECT_THROW(proto::decode_result(m), proto::ProtocolError);
  m["job"] = -1;
  EXPECT_THROW(proto::decode_result(m), proto::ProtocolError);
}

TEST(ControlRequests, EveryOtherRequestComesBackFieldForField) {
  const proto::JobQuery q = proto::decode_job(over_the_wire(
      proto::to_message(proto::JobQuery{.job = 7, .wait_ms = 30000, .seen_state = "running", .seen_done = 3})));
  EXPECT_EQ(q.job, 7u);
  EXPECT_EQ(q.wait_ms, 30000u);
  EXPECT_EQ(q.seen_state, std::optional<std::string>("running"));
  EXPECT_EQ(q.seen_done, std::optional<uint64_t>(3));
  const proto::JobQuery at_once = proto::decode_job(over_the_wire(proto::to_message(proto::JobQuery{.job = 8})));
  EXPECT_EQ(at_once.wait_ms, 0u);
  EXPECT_FALSE(at_once.seen_state);
  EXPECT_FALSE(at_once.seen_done);

  const proto::JobsPage p = proto::decode_jobs(over_the_wire(
      proto::to_message(proto::JobsPage{.state = "done", .limit = 5, .before = 100, .since_ms = 1700000000000})));
  EXPECT_EQ(p.state, std::optional<std::string>("done"));
  EXPECT_EQ(p.limit, std::optional<uint64_t>(5));
  EXPECT_EQ(p.before, std::optional<uint64_t>(100));
  EXPECT_EQ(p.since_ms, std::optional<uint64_t>(1700000000000));
  const proto::JobsPage all = proto::decode_jobs(over_the_wire(proto::to_message(proto::JobsPage{})));
  EXPECT_FALSE(all.state || all.limit || all.before || all.since_ms);

  EXPECT_EQ(proto::decode_cancel(over_the_wire(proto::to_message(proto::Cancel{9}))).job, 9u);

  const proto::Stop st = proto::decode_stop(over_the_wire(proto::to_message(proto::Stop{.timeout_s = 60, .wait = true})));
  EXPECT_EQ(st.timeout_s, std::optional<uint64_t>(60));
  EXPECT_TRUE(st.wait);
  const proto::Stop plain = proto::decode_stop(over_the_wire(proto::to_message(proto::Stop{})));
  EXPECT_FALSE(plain.timeout_s);
  EXPECT_FALSE(plain.wait);

  const proto::Message restart = over_the_wire(proto::to_message(proto::Rolling{.target = "gpu"}));
  EXPECT_EQ(proto::type_of(restart), "restart");
  const proto::Rolling r = proto::decode_rolling(restart);
  EXPECT_FALSE(r.upgrade);
  EXPECT_EQ(r.target, "gpu");
  const proto::Message upgrade = over_the_wire(proto::to_message(proto::Rolling{.upgrade = true, .gpu = "/opt/new/zkfarm-gpu"}));
  EXPECT_EQ(proto::type_of(upgrade), "upgrade");
  const proto::Rolling u = proto::decode_rolling(upgrade);
  EXPECT_TRUE(u.upgrade);
  EXPECT_FALSE(u.synth);
  EXPECT_EQ(u.gpu, std::optional<std::string>("/opt/new/zkfarm-gpu"));

  proto::CircuitAdd add{.name = "sha", .zkey = "/k.zkey", .wasm = "/c/sha_js", .submitter = "acme",
                        .test_inputs = {"/t/1.json"}};
  const proto::CircuitAdd a = proto::decode_circuit_add(over_the_wire(proto::to_message(add)));
  EXPECT_EQ(a.name, "sha");
  EXPECT_EQ(a.zkey, "/k.zkey");
  EXPECT_EQ(a.wasm, add.wasm);
  EXPECT_FALSE(a.c_dir);
  EXPECT_EQ(a.submitter, add.submitter);
  EXPECT_EQ(a.test_inputs, add.test_inputs);
  EXPECT_EQ(proto::decode_circuit_remove(over_the_wire(proto::to_message(proto::CircuitRemove{"sha"}))).name, "sha");
}

TEST(ControlRequests, TheOtherRequestsRefuseFieldsOfTheWrongShape) {
  proto::Message job = proto::make("job");
  EXPECT_THROW(proto::decode_job(job), proto::ProtocolError) << "no job id";
  job["job"] = 1;
  job["wait_ms"] = "soon";
  EXPECT_THROW(proto::decode_job(job), proto::ProtocolError);
  proto::Message jobs = proto::make("jobs");
  jobs["limit"] = -5;
  EXPECT_THROW(proto::decode_jobs(jobs), proto::ProtocolError);
  proto::Message stop = proto::make("stop");
  stop["wait"] = "yes";
  EXPECT_THROW(proto::decode_stop(stop), proto::ProtocolError);
  EXPECT_THROW(proto::decode_rolling(proto::make("restart")), proto::ProtocolError) << "no target";
  proto::Message upgrade = proto::make("upgrade");
  upgrade["synth"] = 1;
  EXPECT_THROW(proto::decode_rolling(upgrade), proto::ProtocolError);
  proto::Message add = proto::make("circuit_add");
  add["name"] = "c";
  EXPECT_THROW(proto::decode_circuit_add(add), proto::ProtocolError) << "no zkey";
  add["zkey"] = "/k.zkey";
  add["test_inputs"] = "/t/1.json";
  EXPECT_THROW(proto::decode_circuit_add(add), proto::ProtocolError) << "test_inputs not a list";
  add["test_inputs"] = proto::Message::array({"/t/1.json", false});
  EXPECT_THROW(proto::decode_circuit_add(add), proto::ProtocolError);
  EXPECT_THROW(proto::decode_circuit_remove(proto::make("circuit_remove")), proto::ProtocolError);
}

}  // namespace
