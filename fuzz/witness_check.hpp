#pragma once
// The oracle the witness graph fuzzers share: every value of a witness the
// evaluator wrote is a canonical residue (below the curve's prime).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "witgen/graph_file.hpp"
#include "witgen/graph_ops.hpp"

namespace zkfarm::fuzz {

/// Aborts (a crash to libFuzzer) unless each 32-byte value of `witness` is
/// below the prime of graph curve `curve`.
inline void abort_unless_below_prime(const std::vector<uint8_t>& witness, uint32_t curve) {
  const uint64_t* m = witgen::graph::curve_modulus(curve);
  const witgen::graph::u256::I p{m[0], m[1], m[2], m[3]};
  for (size_t at = 0; at + 32 <= witness.size(); at += 32) {
    witgen::graph::u256::I v;
    std::memcpy(v.data(), witness.data() + at, 32);
    if (witgen::graph::u256::cmp(v, p) >= 0) std::abort();
  }
}

}  // namespace zkfarm::fuzz
