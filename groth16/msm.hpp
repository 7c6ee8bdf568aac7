#pragma once
// Multi-scalar multiplication Σ k_i·P_i by Pippenger's bucket method, on the CPU:
//  - scalars 0 are skipped and scalars 1 summed directly (most circom witness
//    values are 0 or 1); points at infinity (all-zero bytes: A and B sections
//    hold many) are skipped;
//  - the other scalars are cut into signed c-bit digits d ∈ (−2^(c−1), 2^(c−1)],
//    so a window needs 2^(c−1) buckets, and a negative digit adds −P;
//  - buckets are XYZZ points (8M+2S a mixed addition), windows × point-chunks
//    run as tasks on the pool.
// One ScalarPlan serves several MSMs over the same scalars (Groth16's A, B1, B2
// and C all take the witness), so the digits are computed once.
#include <cstdint>
#include <vector>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "groth16/curve_list.hpp"
#include "groth16/thread_pool.hpp"

namespace zkfarm {

/// Widest window: a signed digit reaches +2^(c−1), which must fit an int16_t.
inline constexpr unsigned kMaxWindowBits = 15;

/// Scalars classified and cut into signed digits. Sizes: kind n bytes, digits
/// windows·n·2 bytes (window-major: digits[w·n + i]).
struct ScalarPlan {
  enum Kind : uint8_t { kZero = 0, kOne = 1, kOther = 2 };
  unsigned c = 0;        ///< window width in bits (2..kMaxWindowBits)
  unsigned windows = 0;  ///< number of windows: floor(scalar bits / c) + 1
  size_t n = 0;          ///< number of scalars
  size_t others = 0;     ///< how many are neither 0 nor 1
  std::vector<uint8_t> kind;
  std::vector<int16_t> digits;
};

/// Window width that minimizes windows·(m + 3·2^(c−1)) additions for m
/// scalars of scalar_bits bits (the curve's kFrBits: 254 for BN254, 255 for
/// BLS12-381).
unsigned msm_window_bits(size_t m, unsigned scalar_bits = Bn254::kFrBits);

/// Classifies n canonical scalars (each < r < 2^scalar_bits; not Montgomery)
/// and computes their digits; the top window takes the last carry, so
/// windows·c > scalar_bits. c = 0 picks msm_window_bits(number of other
/// scalars). Throws std::invalid_argument for c outside 2..15 or scalar_bits
/// outside 1..255.
ScalarPlan plan_scalars(const U256* scalars, size_t n, ThreadPool& pool, unsigned c = 0,
                        unsigned scalar_bits = Bn254::kFrBits);

/// Σ scalars[first + i]·P_i for i < count, P_i the affine point at
/// points + i·stride bytes (Montgomery coordinates, as a zkey stores them;
/// stride 64 for G1, 128 for G2). Requires first + count ≤ plan.n.
template <class C>
Xyzz<C> msm(const uint8_t* points, size_t stride, const ScalarPlan& plan, size_t first,
            size_t count, ThreadPool& pool);

/// Naive reference: Σ k_i·P_i by double-and-add, one point at a time (tests).
template <class C>
Xyzz<C> msm_naive(const uint8_t* points, size_t stride, const U256* scalars, size_t count);

// Both groups of every curve of Curves (msm.cpp instantiates them).
#define ZKFARM_MSM_EXTERN(C)                                                                                    \
  extern template Xyzz<C::G1Params> msm<C::G1Params>(const uint8_t*, size_t, const ScalarPlan&, size_t, size_t,  \
                                                     ThreadPool&);                                                \
  extern template Xyzz<C::G2Params> msm<C::G2Params>(const uint8_t*, size_t, const ScalarPlan&, size_t, size_t,  \
                                                     ThreadPool&);                                                \
  extern template Xyzz<C::G1Params> msm_naive<C::G1Params>(const uint8_t*, size_t, const U256*, size_t);         \
  extern template Xyzz<C::G2Params> msm_naive<C::G2Params>(const uint8_t*, size_t, const U256*, size_t);
ZKFARM_FOR_EACH_CURVE(ZKFARM_MSM_EXTERN)
#undef ZKFARM_MSM_EXTERN

}  // namespace zkfarm
