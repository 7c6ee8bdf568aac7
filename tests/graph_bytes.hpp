#pragma once
// Witness graphs written byte by byte for the graph tests
// (witgen/witgen_graph_test.cpp, witgen/witgen_plan_test.cpp): the file format of
// witgen/graph_format.hpp, a batch evaluation helper, and random graphs
// rich in masks, shifts, relations and negative constants.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

#include "groth16/bn254.hpp"
#include "witgen/graph_eval.hpp"
#include "witgen/graph_format.hpp"
#include "witgen/graph_ops.hpp"

namespace zkfarm::witgen::graph::fixture {

// A graph file's bytes, written field by field (graph_format.hpp).
struct GraphBytes {
  std::vector<uint8_t> b;
  void u32(uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i))); }
  void u64(uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i))); }
  /// The header of a BN254 graph with inputs x (hash 0x1111) and y (0x2222),
  /// one value each, and `witness` witness entries; strings follow.
  void two_input_header(uint32_t witness) {
    b.insert(b.end(), kMagic, kMagic + 8);
    u32(kVersion);
    u32(kCurveBn254);
    u32(2);  // input values
    u32(witness);
    u32(2);  // signals: x at 0, y at 1
    u64(0x1111);
    u32(0);
    u32(1);
    u64(0x2222);
    u32(1);
    u32(1);
  }
  /// The constants section: a count, then each (below 2^64) as 4 limbs.
  void consts(std::initializer_list<uint64_t> values) {
    u32(uint32_t(values.size()));
    for (uint64_t v : values) {
      u64(v);
      for (int i = 0; i < 3; ++i) u64(0);
    }
  }
  void node(Op op, uint32_t a, uint32_t x = 0, uint32_t c = 0) {
    b.push_back(uint8_t(op));
    u32(a);
    u32(x);
    u32(c);
  }
};

inline uint32_t in(uint32_t i) { return make_ref(RefKind::kInput, i); }
inline uint32_t k(uint32_t i) { return make_ref(RefKind::kConst, i); }
inline uint32_t n(uint32_t i) { return make_ref(RefKind::kNode, i); }

inline U256 u(uint64_t x) { return U256{x, 0, 0, 0}; }

// Evaluates `inputs` as one batch; out[i] gets input i's witness
// (graph().witness_size values of 32 bytes).
struct Batch {
  std::vector<std::vector<uint8_t>> out;
  std::vector<InputOutcome> outcome;
};
inline Batch evaluate_batch(const Evaluator& ev, const std::vector<std::vector<U256>>& inputs) {
  Batch b;
  b.out.assign(inputs.size(), std::vector<uint8_t>(size_t(ev.graph().witness_size) * 32));
  std::vector<const std::vector<U256>*> ptrs;
  std::vector<uint8_t*> out_ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ptrs.push_back(&inputs[i]);
    out_ptrs.push_back(b.out[i].data());
  }
  ev.evaluate(ptrs, out_ptrs, b.outcome);
  return b;
}

/// A random graph of `n_nodes` over inputs x, y whose witness is every node:
/// its bytes, its nodes as written (op, a, b, c) and its constants.
struct RandomGraph {
  GraphBytes g;
  std::vector<std::array<uint32_t, 4>> nodes;
  std::vector<U256> consts;
};
inline RandomGraph random_graph(std::mt19937_64& rng, uint32_t n_nodes) {
  const U256 p = FieldOps<Fr>::modulus();
  auto minus = [&](uint64_t d) { return u256::sub(p, u(d)); };
  RandomGraph r;
  r.consts = {u(0), u(1), u(2), u(3), u(7), u(8), u(31), u(32), u(63), u(64), u(255),
              u(uint64_t(1) << 32), u(uint64_t(1) << 61), minus(1), minus(2),
              minus(uint64_t(1) << 40), U256{0x1234, 0x5678, 0x9abc, 0xdef}, u(250), u(252)};
  const std::vector<Op> ops = {Op::kAdd, Op::kSub, Op::kMul, Op::kNeg,  Op::kSelect, Op::kEq,   Op::kNeq,
                               Op::kLt,  Op::kGt,  Op::kLeq, Op::kGeq,  Op::kLand,   Op::kLor,  Op::kLnot,
                               Op::kBand, Op::kBor, Op::kBxor, Op::kBnot, Op::kShl,   Op::kShr,  Op::kIdiv,
                               Op::kMod, Op::kDiv, Op::kInv, Op::kPow};
  GraphBytes& g = r.g;
  g.two_input_header(n_nodes);
  g.u32(0);  // strings
  g.u32(uint32_t(r.consts.size()));
  for (const U256& c : r.consts)
    for (uint64_t limb : c) g.u64(limb);
  g.u32(n_nodes);
  auto pick = [&](uint32_t below) -> uint32_t {  // an operand: mostly recent nodes
    const uint64_t x = rng() % 10;
    if (below > 0 && x < 6) return n(uint32_t(below - 1 - rng() % std::min<uint32_t>(below, 24)));
    if (x < 9) return k(uint32_t(rng() % r.consts.size()));
    return in(uint32_t(rng() % 2));
  };
  for (uint32_t i = 0; i < n_nodes; ++i) {
    Op op = ops[rng() % ops.size()];
    uint32_t a = pick(i), b = pick(i), c = pick(i);
    if (i < 8) {  // start from bits of the inputs, as SHA-256 does
      op = i % 2 ? Op::kShr : Op::kBand;
      a = in(i % 4 / 2);
      b = i % 2 ? k(uint32_t(rng() % 12)) : k(1);
    }
    if ((op == Op::kShr || op == Op::kShl) && rng() % 4) b = k(uint32_t(rng() % 12));  // small shift amounts
    if (op == Op::kBand && rng() % 2) b = k(uint32_t(rng() % 12));                     // masks
    if (op == Op::kPow) b = k(uint32_t(rng() % 5));
    if (arity(op) < 2) b = 0;  // unused operands are 0 in the file
    if (arity(op) < 3) c = 0;
    g.node(op, a, b, c);
    r.nodes.push_back({uint32_t(op), a, b, c});
  }
  for (uint32_t i = 0; i < n_nodes; ++i) g.u32(n(i));
  return r;
}

/// Random input pairs: small, small negative, 64-bit and full-width values.
inline std::vector<std::vector<U256>> random_inputs(std::mt19937_64& rng, size_t batch) {
  const U256 p = FieldOps<Fr>::modulus();
  std::vector<std::vector<U256>> inputs;
  for (size_t i = 0; i < batch; ++i) {
    auto value = [&]() -> U256 {
      switch (rng() % 4) {
        case 0: return u(rng() % 300);
        case 1: return u256::sub(p, u(1 + rng() % 300));
        case 2: return u(rng());
        default: return U256{rng(), rng(), rng(), rng() >> 3};
      }
    };
    inputs.push_back({value(), value()});
  }
  return inputs;
}

}  // namespace zkfarm::witgen::graph::fixture
