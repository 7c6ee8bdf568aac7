#pragma once
// The scalar fields (r) of the two curves zkfarm proves on, alone: what a
// witness is made of. bn254.hpp and bls12_381.hpp name them FrParams; the
// witness graph's field operations (witgen/graph_ops.hpp), which are also
// compiled into every graph recorder outside this tree, need no more than
// these and field.hpp.
#include <cstdint>

namespace zkfarm {

/// BN254's r (snarkjs/circom's "bn128").
struct Bn254FrParams {
  // r = 21888242871839275222246405745257275088548364400416034343698204186575808495617
  static constexpr uint64_t kModulus[4] = {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL,
                                           0xb85045b68181585dULL, 0x30644e72e131a029ULL};
  static constexpr uint64_t kR2[4] = {0x1bb8e645ae216da7ULL, 0x53fe3ab1e35c59e3ULL,
                                      0x8c49833d53bb8085ULL, 0x0216d0b17f4e44a5ULL};
  static constexpr uint64_t kOne[4] = {0xac96341c4ffffffbULL, 0x36fc76959f60cd29ULL,
                                       0x666ea36f7879462eULL, 0x0e0a77c19a07df2fULL};
  static constexpr uint64_t kInv = 0xc2e1f593efffffffULL;
};

/// BLS12-381's r (circom --prime bls12381).
struct Bls12381FrParams {
  // r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
  static constexpr uint64_t kModulus[4] = {0xffffffff00000001ULL, 0x53bda402fffe5bfeULL, 0x3339d80809a1d805ULL,
                                           0x73eda753299d7d48ULL};
  static constexpr uint64_t kR2[4] = {0xc999e990f3f29c6dULL, 0x2b6cedcb87925c23ULL, 0x05d314967254398fULL,
                                      0x0748d9d99f59ff11ULL};
  static constexpr uint64_t kOne[4] = {0x00000001fffffffeULL, 0x5884b7fa00034802ULL, 0x998c4fefecbc4ff5ULL,
                                       0x1824b159acc5056fULL};
  static constexpr uint64_t kInv = 0xfffffffeffffffffULL;
};

}  // namespace zkfarm
