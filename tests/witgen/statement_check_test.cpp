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

// check_statement's refusal of `input` against `w`, "" when it passes.
std::string refusal(const std::string& input, const Witness& w) {
  try {
    check_statement(input, kPrime, shapes(), 4, w.bytes.data(), uint32_t(w.bytes.size() / 32));
  } catch (const StatementError& e) {
    return e.what();
  }
  return "";
}

TEST(StatementCheck, AnotherPublicValueIsRefusedNamingTheSignal) {
  const std::string input = R"({"y": 5, "xs": [7, 9], "k": 11})";
  Witness w(8);
  w.set(2, 3);  // the sweep's graph: y = 3 although the input says 5
  w.set(3, 7);
  w.set(4, 9);
  EXPECT_EQ(refusal(input, w),
            "the witness does not prove the input: public signal 2 (y) is 3 in the witness, the input says 5; "
            "no proof of another statement is made");
  w.set(2, 5);
  w.set(4, 10);
  EXPECT_NE(refusal(input, w).find("public signal 4 (xs[1]) is 10 in the witness, the input says 9"), std::string::npos)
      << refusal(input, w);
  // A negative input is its residue: -1 is p - 1, and only p - 1 passes.
  w.set(4, 9);
  const std::string negative = R"({"y": -1, "xs": [7, 9], "k": 11})";
  EXPECT_NE(refusal(negative, w), "");
  std::memcpy(&w.bytes[2 * 32], kPrime.data(), 32);
  ASSERT_EQ(w.bytes[2 * 32], 1);  // r ends in ...01: p - 1 is one byte less
  w.bytes[2 * 32] = 0;
  EXPECT_EQ(refusal(negative, w), "");
}

TEST(StatementCheck, UnknownPositionsAndAnEmptyStatementCheckNothing) {
  Witness w(8);
  std::vector<SignalShape> unknown = {{fnv1a("y"), 1, 0}};
  EXPECT_NO_THROW(check_statement(R"({"y": 5})", kPrime, unknown, 4, w.bytes.data(), 8));
  EXPECT_NO_THROW(check_statement_fd(-1, "", kPrime, 4, w.bytes.data(), 8));
}

}  // namespace
}  // namespace zkfarm::witgen
