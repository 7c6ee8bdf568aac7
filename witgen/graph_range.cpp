#include "witgen/graph_range.hpp"

#include <algorithm>

#include "witgen/graph_format.hpp"
#include "witgen/graph_ops.hpp"

namespace zkfarm::witgen::graph {

namespace {

using i128 = __int128;

Range make(i128 lo, i128 hi) {
  if (lo < -i128(kNarrowLimit) || hi > i128(kNarrowLimit)) return {};
  return Range{true, int64_t(lo), int64_t(hi)};
}

/// Bits of a positive value (0 for 0).
int bit_length(int64_t v) { return v <= 0 ? 0 : 64 - __builtin_clzll(uint64_t(v)); }

/// The range of an operation from its operands' (a, b: value operands; for a
/// select, a and b are its two choices). p_bits: the width of the prime.
Range rule(Op op, const Range& a, const Range& b, unsigned p_bits) {
  const bool both = a.narrow && b.narrow;
  switch (op) {
    case Op::kAdd: return both ? make(i128(a.lo) + b.lo, i128(a.hi) + b.hi) : Range{};
    case Op::kSub: return both ? make(i128(a.lo) - b.hi, i128(a.hi) - b.lo) : Range{};
    case Op::kNeg: return a.narrow ? make(-i128(a.hi), -i128(a.lo)) : Range{};
    case Op::kMul: {
      if (!both) return {};
      const i128 p[4] = {i128(a.lo) * b.lo, i128(a.lo) * b.hi, i128(a.hi) * b.lo, i128(a.hi) * b.hi};
      return make(*std::min_element(p, p + 4), *std::max_element(p, p + 4));
    }
    case Op::kSelect: return both ? make(std::min(a.lo, b.lo), std::max(a.hi, b.hi)) : Range{};
    case Op::kEq: case Op::kNeq: case Op::kLt: case Op::kGt: case Op::kLeq: case Op::kGeq:
    case Op::kLand: case Op::kLor: case Op::kLnot:
      return make(0, 1);
    case Op::kBand: {  // bounded by any operand whose canonical value is its integer
      if (a.non_negative() && b.non_negative()) return make(0, std::min(a.hi, b.hi));
      if (a.non_negative()) return make(0, a.hi);
      if (b.non_negative()) return make(0, b.hi);
      return {};
    }
    case Op::kBor:
    case Op::kBxor: {
      if (!a.non_negative() || !b.non_negative()) return {};
      const int w = bit_length(std::max(a.hi, b.hi));
      return make(op == Op::kBor ? std::max(a.lo, b.lo) : 0, (i128(1) << w) - 1);
    }
    case Op::kShr: {  // b narrow and ≥ 0: a right shift (b < 2^62 < (p − 1)/2)
      if (!b.non_negative()) return {};
      const int64_t s = b.lo;
      if (a.non_negative()) return make(b.hi >= 63 ? 0 : a.lo >> b.hi, s >= 63 ? 0 : a.hi >> s);
      if (s >= int64_t(p_bits)) return make(0, 0);  // any canonical value is below 2^p_bits
      if (int64_t(p_bits) - s <= 62) return make(0, (i128(1) << (p_bits - s)) - 1);
      return {};
    }
    case Op::kShl: {  // no mask or reduction can apply to a result below 2^62
      if (!a.non_negative() || !b.non_negative()) return {};
      if (a.hi == 0) return make(0, 0);
      if (bit_length(a.hi) + b.hi > 62) return {};
      return make(i128(a.lo) << b.lo, i128(a.hi) << b.hi);
    }
    case Op::kIdiv: return a.non_negative() && b.non_negative() ? make(0, a.hi) : Range{};
    case Op::kMod: {  // below the divisor (a zero divisor: a fault, the value 0)
      if (!b.non_negative()) return {};
      const int64_t top = std::max<int64_t>(b.hi - 1, 0);
      return make(0, a.non_negative() ? std::min(a.hi, top) : top);
    }
    default: return {};  // pow, division and inversion in the field, bitwise not: anything
  }
}

}  // namespace

Range ref_range(uint32_t ref, const std::vector<Range>& nodes, const std::vector<Range>& consts) {
  switch (ref_kind(ref)) {
    case RefKind::kNode: return nodes[ref_index(ref)];
    case RefKind::kConst: return consts[ref_index(ref)];
    default: return {};  // an input: any residue
  }
}

std::vector<Range> value_ranges(const Graph& g, std::vector<Range>& const_ranges) {
  const uint64_t* p = curve_modulus(g.curve);
  const U256 prime{p[0], p[1], p[2], p[3]};
  const unsigned p_bits = u256::bits(prime);
  const U256 limit{uint64_t(kNarrowLimit), 0, 0, 0};
  const_ranges.assign(g.consts.size(), Range{});
  for (size_t i = 0; i < g.consts.size(); ++i) {
    const U256& c = g.consts[i];
    if (u256::cmp(c, limit) <= 0) {
      const_ranges[i] = make(int64_t(c[0]), int64_t(c[0]));
    } else if (u256::cmp(c, prime) < 0) {
      const U256 d = u256::sub(prime, c);  // c = −d mod p
      if (u256::cmp(d, limit) <= 0) const_ranges[i] = make(-int64_t(d[0]), -int64_t(d[0]));
    }
  }
  std::vector<Range> r(g.nodes.size());
  auto of = [&](uint32_t ref) { return ref_range(ref, r, const_ranges); };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& nd = g.nodes[k];
    if (!has_value(nd.op)) continue;
    if (nd.op == Op::kSelect) r[k] = rule(nd.op, of(nd.b), of(nd.c), p_bits);
    else r[k] = rule(nd.op, of(nd.a), arity(nd.op) >= 2 ? of(nd.b) : Range{}, p_bits);
  }
  return r;
}

}  // namespace zkfarm::witgen::graph
