// The statement check (witgen/statement_check.hpp, issue 45): a witness whose
// public inputs are not the submitted input's values is refused, naming the
// signal and both values; private inputs, outputs and inputs of unknown
// position are left alone; a witness that states the input passes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "witgen/graph_file.hpp"
#include "witgen/graph_format.hpp"
#include "witgen/input_json.hpp"
#include "witgen/statement_check.hpp"

namespace zkfarm::witgen {
namespace {

// A witness of `count` values: value i is i + 1000 unless set.
struct Witness {
  std::vector<uint8_t> bytes;
  explicit Witness(uint32_t count) : bytes(size_t(count) * 32) {
    for (uint32_t i = 0; i < count; ++i) set(i, i + 1000);
  }
  void set(uint32_t i, uint64_t v) {
    std::memset(&bytes[size_t(i) * 32], 0, 32);
    for (int b = 0; b < 8; ++b) bytes[size_t(i) * 32 + b] = uint8_t(v >> (8 * b));
  }
};

const std::vector<uint8_t> kPrime = graph::curve_prime_le(graph::kCurveBn254);

// Circuit: witness 1 an output, 2 input y (public), 3..4 input xs[2] (public),
// 5 input k (private); n_public = 4.
std::vector<SignalShape> shapes() {
  return {{fnv1a("y"), 1, 2}, {fnv1a("xs"), 2, 3}, {fnv1a("k"), 1, 5}};
}

TEST(StatementCheck, AWitnessThatStatesTheInputPasses) {
  Witness w(8);
  w.set(2, 5);
  w.set(3, 7);
  w.set(4, 9);
  w.set(5, 11);
  EXPECT_NO_THROW(check_statement(R"({"y": 5, "xs": ["7", "9"], "k": 11})", kPrime, shapes(), 4, w.bytes.data(), 8));
  // The private input (witness 5) is not part of the statement: another value there is not checked.
  w.set(5, 12);
  EXPECT_NO_THROW(check_statement(R"({"y": 5, "xs": [7, 9], "k": 11})", kPrime, shapes(), 4, w.bytes.data(), 8));
}

TEST(StatementCheck, AnotherPublicValueIsRefusedNamingTheSignal) {
  Witness w(8);
  w.set(2, 3);  // the sweep's graph: y = 3 although the input says 5
  w.set(3, 7);
  w.set(4, 9);
  try {
    check_statement(R"({"y": 5, "xs": [7, 9], "k": 11})", kPrime, shapes(), 4, w.bytes.data(), 8);
    FAIL() << "a witness of another statement passed";
  } catch (const StatementError& e) {
    EXPECT_STREQ(e.what(),
                 "the witness does not prove the input: public signal 2 (y) is 3 in the witness, the input says 5; "
                 "no proof of another statement is made");
  }
  w.set(2, 5);
  w.set(4, 10);
  try {
    check_statement(R"({"y": 5, "xs": [7, 9], "k": 11})", kPrime, shapes(), 4, w.bytes.data(), 8);
    FAIL() << "xs[1] differs";
  } catch (const StatementError& e) {
    EXPECT_NE(std::string(e.what()).find("public signal 4 (xs[1]) is 10 in the witness, the input says 9"),
              std::string::npos)
        << e.what();
  }
  // A negative input is its residue: -1 is p - 1.
  w.set(4, 9);
  EXPECT_THROW(check_statement(R"({"y": -1, "xs": [7, 9], "k": 11})", kPrime, shapes(), 4, w.bytes.data(), 8),
               StatementError);
}

TEST(StatementCheck, UnknownPositionsAndAnEmptyStatementCheckNothing) {
  Witness w(8);
  std::vector<SignalShape> unknown = {{fnv1a("y"), 1, 0}};
  EXPECT_NO_THROW(check_statement(R"({"y": 5})", kPrime, unknown, 4, w.bytes.data(), 8));
  EXPECT_NO_THROW(check_statement_fd(-1, "", kPrime, 4, w.bytes.data(), 8));
}

}  // namespace
}  // namespace zkfarm::witgen
