#pragma once
// Number-theoretic transforms over a curve's Fr on a domain of 2^k points,
// with the roots of unity snarkjs (ffjavascript) uses (roots.hpp): for BN254
// nqr = 5, 2-adicity 28, w[28] = 5^((r−1)/2^28), w[k] = w[k+1]²; for
// BLS12-381 nqr = 5, 2-adicity 32. Evaluations are in natural order:
// ntt(v)[i] = Σ_j v[j]·ω^(i·j), ω = w[k], as ffjavascript's fft returns them.
#include <cstdint>
#include <vector>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "groth16/curve_list.hpp"
#include "groth16/thread_pool.hpp"

namespace zkfarm {

/// snarkjs's root of unity of order 2^k (k ≤ 28), in Montgomery form.
Fr root_of_unity(uint32_t k);

/// The generator of the odd coset snarkjs evaluates H on, for a domain of 2^k:
/// w[k+1] (a primitive 2^(k+1)-th root), or for k = 28 ffjavascript's Fr.shift
/// = nqr² = 25 (src/wasm_field1.js; snarkjs groth16_prove.js picks it).
Fr odd_coset_generator(uint32_t k);

/// A domain of 2^log_n points of curve C's Fr (C: curve traits, e.g. Bn254)
/// with its twiddle tables (n/2 elements each way, 32 bytes apiece: 2^k·32
/// bytes in all). Thread-safe for concurrent transforms.
template <class C>
class DomainOf {
 public:
  using Fr = typename C::Fr;
  /// Throws std::invalid_argument when log_n > min(C::kTwoAdicity, kMaxLogDomain).
  DomainOf(uint32_t log_n, ThreadPool& pool);

  uint32_t log_size() const { return log_n_; }
  size_t size() const { return n_; }
  /// ω^j and ω^−j for j < n/2 (ω = root_of_unity(log_size())), Montgomery form.
  const std::vector<Fr>& twiddles() const { return tw_; }
  const std::vector<Fr>& twiddles_inv() const { return tw_inv_; }
  /// 1/n, and the odd coset's generator g = odd_coset_generator_of<C>(log_size()).
  const Fr& n_inv() const { return n_inv_; }
  const Fr& coset() const { return coset_; }

  /// In place, v has size() elements (Montgomery form): coefficients → evaluations.
  void ntt(Fr* v, ThreadPool& pool) const;
  /// In place: evaluations → coefficients (includes the 1/n).
  void intt(Fr* v, ThreadPool& pool) const;
  /// In place: evaluations over the domain → evaluations over the odd coset
  /// g·⟨ω⟩: intt, multiply coefficient i by g^i, ntt (snarkjs groth16_prove's
  /// ifft / batchApplyKey(1, inc) / fft on A, B and C).
  void to_odd_coset(Fr* v, ThreadPool& pool) const;

 private:
  void transform(Fr* v, const std::vector<Fr>& twiddles, ThreadPool& pool) const;
  uint32_t log_n_;
  size_t n_;
  std::vector<Fr> tw_, tw_inv_;  // ω^j and ω^−j, j < n/2
  Fr n_inv_, coset_;
};

/// BN254's domain, the farm's.
using Domain = DomainOf<Bn254>;
#define ZKFARM_NTT_EXTERN(C) extern template class DomainOf<C>;
ZKFARM_FOR_EACH_CURVE(ZKFARM_NTT_EXTERN)
#undef ZKFARM_NTT_EXTERN

/// Multiplies v[i] by scale·g^i for i < n, in parallel. F: a field with
/// 4-limb elements (either curve's Fr).
template <class F>
void scale_by_powers(F* v, size_t n, const F& scale, const F& g, ThreadPool& pool);

}  // namespace zkfarm
