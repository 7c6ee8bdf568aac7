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

}  // namespace
