#pragma once
// The key's A and B matrices regrouped by constraint (compressed sparse rows),
// built once when a key is loaded, so that synthesis (a = A·w, b = B·w,
// c = a∘b) runs row-parallel: each thread reads only its rows' coefficients,
// and the same arrays, uploaded, feed the CUDA backend's synthesis kernel.
//
// Source: the zkey's section 4 (snarkjs src/zkey_utils.js, "coefs"): records
// {u32 matrix (0 = A, 1 = B), u32 constraint, u32 signal, value[32]}, the value
// stored as v·R² (R = 2^256 mod r) so that one Montgomery product with a plain
// witness value gives a·w in Montgomery form. Record order is whatever the
// key's writer chose; field addition is exact, so the row order does not
// change a single bit of the result.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "groth16/curve_list.hpp"
#include "groth16/thread_pool.hpp"
#include "groth16/zkey.hpp"

namespace zkfarm {

/// std::allocator whose resize() leaves new elements default-initialized (for
/// the trivial types below: not written), so that sizing arrays of hundreds of
/// MB costs no zeroing pass on one thread: the build writes every element
/// right after, in parallel.
template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};

/// One matrix (A or B) in CSR form over `rows` constraints (the key's domain
/// size: rows past the last constraint are empty). Fr: the curve's scalar
/// field (32-byte elements for both curves).
template <class Fr>
struct SparseRowsOf {
  /// rows + 1 offsets into signal/coef: row i is [start[i], start[i + 1]).
  std::vector<uint32_t> start;
  /// The signal (witness index, < n_vars) of each entry.
  std::vector<uint32_t, UninitAllocator<uint32_t>> signal;
  /// The coefficient of each entry, the record's 32 bytes loaded as they are
  /// (Montgomery form of v·R).
  std::vector<Fr, UninitAllocator<Fr>> coef;

  size_t rows() const { return start.empty() ? 0 : start.size() - 1; }
  size_t entries() const { return signal.size(); }
  /// Host bytes of the three arrays.
  size_t bytes() const { return start.size() * 4 + signal.size() * 4 + coef.size() * sizeof(Fr); }
};

/// A key's A and B by constraint, over curve C's Fr (C: curve traits).
template <class C>
struct ConstraintMatrixOf {
  using SparseRows = SparseRowsOf<typename C::Fr>;
  SparseRows a, b;

  /// Regroups `key`'s section 4 (already validated by Zkey::open: matrix ∈
  /// {0, 1}, constraint < domain_size, signal < n_vars): O(n_coeffs +
  /// domain_size) time, about 36 bytes per record plus 8 bytes per row of
  /// memory. With a pool, records that come in constraint order within each
  /// matrix (snarkjs's and zkfarm-testkey's orders) are placed in parallel;
  /// any other order, or no pool, takes a single-threaded counting sort.
  /// The result is the same either way.
  /// Precondition: key.curve is C's.
  static ConstraintMatrixOf build(const Zkey& key, ThreadPool* pool = nullptr);
  size_t bytes() const { return a.bytes() + b.bytes(); }
};
/// BN254's, the farm's.
using SparseRows = SparseRowsOf<Fr>;
using ConstraintMatrix = ConstraintMatrixOf<Bn254>;
#define ZKFARM_MATRIX_EXTERN(C) extern template struct ConstraintMatrixOf<C>;
ZKFARM_FOR_EACH_CURVE(ZKFARM_MATRIX_EXTERN)
#undef ZKFARM_MATRIX_EXTERN

/// Synthesis from a witness: a[i] = Σ_j A[i][j]·w[j], b likewise, c[i] = a[i]·b[i]
/// for every row i < m.a.rows() (a, b, c: that many Fr each, Montgomery form;
/// every element written). `witness`: the key's n_vars canonical values
/// (plain, < r, as a .wtns holds them). Rows are split over `pool` by their
/// entry counts. Throws Cancelled when *cancel (may be null) is true before
/// or after the work.
template <class C>
void synthesize_abc(const ConstraintMatrixOf<C>& m, const U256* witness, typename C::Fr* a, typename C::Fr* b,
                    typename C::Fr* c, ThreadPool& pool, const std::atomic<bool>* cancel = nullptr);
#define ZKFARM_SYNTH_ABC_EXTERN(C)                                                                          \
  extern template void synthesize_abc<C>(const ConstraintMatrixOf<C>&, const U256*, C::Fr*, C::Fr*, C::Fr*, \
                                         ThreadPool&, const std::atomic<bool>*);
ZKFARM_FOR_EACH_CURVE(ZKFARM_SYNTH_ABC_EXTERN)
#undef ZKFARM_SYNTH_ABC_EXTERN

}  // namespace zkfarm
