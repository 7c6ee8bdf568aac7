#pragma once
// Groth16 proving as snarkjs 0.7 does it (src/groth16_prove.js), split in the
// two steps the farm runs in different processes:
//   synthesize: witness + key → a, b, c evaluations over the domain (and the
//               witness), written into caller-provided memory (the farm's slot);
//   Prover::prove: those buffers + key → proof (NTTs for H, five MSMs).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "groth16/constraint_matrix.hpp"
#include "groth16/curve_list.hpp"
#include "groth16/ntt.hpp"
#include "groth16/thread_pool.hpp"
#include "groth16/wtns.hpp"
#include "groth16/zkey.hpp"

namespace zkfarm {

/// One partition's working memory, carved from one block of bytes:
/// a, b, c: domain_size Fr each (Montgomery form); then the witness: n_vars
/// canonical 32-byte values. Total (3·domain_size + n_vars)·32 bytes (Fr is
/// 32 bytes for every curve here). C: curve traits.
template <class C>
struct PartitionBuffersOf {
  using Fr = typename C::Fr;
  Fr* a = nullptr;
  Fr* b = nullptr;
  Fr* c = nullptr;
  U256* witness = nullptr;
  size_t domain_size = 0;
  size_t n_vars = 0;

  /// Bytes one partition of `key` needs.
  static size_t bytes_for(const Zkey& key) { return (3 * size_t(key.domain_size) + key.n_vars) * 32; }
  /// Views `base` (≥ bytes_for(key) bytes, 8-byte aligned) as the buffers.
  static PartitionBuffersOf view(void* base, const Zkey& key) {
    PartitionBuffersOf p;
    p.domain_size = key.domain_size;
    p.n_vars = key.n_vars;
    auto* f = static_cast<Fr*>(base);
    p.a = f;
    p.b = f + p.domain_size;
    p.c = f + 2 * p.domain_size;
    p.witness = reinterpret_cast<U256*>(f + 3 * p.domain_size);
    return p;
  }
};
static_assert(sizeof(Fr) == 32 && sizeof(bls12_381::Fr) == 32, "a partition slot holds 32-byte scalars");
/// BN254's, the farm's.
using PartitionBuffers = PartitionBuffersOf<Bn254>;

/// Bytes of one partition's witness for `key`: n_vars·32 (canonical values),
/// what a farm slot carries.
inline size_t witness_bytes(const Zkey& key) { return size_t(key.n_vars) * 32; }

/// Synthesis of one partition for tools and tests: builds `key`'s
/// ConstraintMatrix (O(n_coeffs), so a caller proving many partitions of one
/// key keeps a Prover, which holds its matrix), then a = A·w, b = B·w, c = a∘b
/// (synthesize_abc) and the witness copied as canonical integers into `out`.
/// Writes every byte of `out`. Precondition: check_witness_matches(key, wtns)
/// passed and key.curve is C's. Throws Cancelled if *cancel becomes true
/// (checked before the work and once it is done).
template <class C>
void synthesize(const Zkey& key, const Wtns& wtns, const PartitionBuffersOf<C>& out, ThreadPool& pool,
                const std::atomic<bool>* cancel = nullptr);

/// A Groth16 proof over curve C, affine points (Montgomery coordinates).
template <class C>
struct ProofOf {
  Affine<typename C::G1Params> a;
  Affine<typename C::G2Params> b;
  Affine<typename C::G1Params> c;
};
using Proof = ProofOf<Bn254>;

/// The five MSMs of a proof: A = Σ w_i·A_i, B1 = Σ w_i·B1_i (G1),
/// B2 = Σ w_i·B2_i (G2), C = Σ_{i > nPublic} w_i·C_i, H = Σ h_j·H_j.
template <class C>
struct MsmSumsOf {
  Xyzz<typename C::G1Params> a, b1, c, h;
  Xyzz<typename C::G2Params> b2;
};
using MsmSums = MsmSumsOf<Bn254>;

/// The proof from the MSMs and blinding scalars r, s (canonical, < r), as
/// snarkjs groth16_prove.js combines them: πA = α + A + r·δ1,
/// πB = β2 + B2 + s·δ2, B1' = β1 + B1 + s·δ1, πC = C + H + s·πA + r·B1' − r·s·δ1.
/// Shared by every backend, so equal MSMs give byte-identical proofs.
/// Precondition: key.curve is C's.
template <class C>
ProofOf<C> assemble_proof(const Zkey& key, const MsmSumsOf<C>& m, const U256& r, const U256& s);

/// Checks that `key` is over curve C and that its header points (α, β, γ, δ,
/// IC) lie on their curves; throws InputError naming the key file otherwise
/// ("KEY: the key is over bls12381, this prover takes bn128 keys", "KEY:
/// section 2/3: beta2 is not on the curve").
template <class C>
void check_key_points_of(const Zkey& key);
/// BN254's: every backend of the farm calls it once per key.
inline void check_key_points(const Zkey& key);

/// A key over curve C prepared for proving: the zkey's points plus the
/// domain's twiddle tables (2^k·32 bytes). Reusable across partitions and threads.
template <class C>
class ProverOf {
 public:
  using Fr = typename C::Fr;
  using Proof = ProofOf<C>;
  using PartitionBuffers = PartitionBuffersOf<C>;
  /// Checks the key's curve and header points (check_key_points_of<C>);
  /// throws InputError naming the key file otherwise.
  ProverOf(const Zkey& key, ThreadPool& pool);

  /// The proof of one synthesized partition with blinding scalars r and s
  /// (canonical, < r): H on the odd coset (no division by Z: the key's section 9
  /// holds the matching basis), MSMs A, B1, B2, C, H, then
  /// πA = α + A + r·δ1, πB = β2 + B2 + s·δ2, B1' = β1 + B1 + s·δ1,
  /// πC = C + H + s·πA + r·B1' − r·s·δ1. Overwrites a, b, c. Throws Cancelled
  /// at the next stage boundary (NTTs, each MSM) once *cancel is true.
  Proof prove(const PartitionBuffers& in, const U256& r, const U256& s, ThreadPool& pool,
              const std::atomic<bool>* cancel = nullptr) const;

  /// Synthesis and the prove step from the witness alone (the key's n_vars
  /// canonical values, e.g. a farm slot): a, b, c are computed into `scratch`
  /// (resized to 3·domain_size Fr as needed; reuse it across calls), then
  /// prove(). The witness is only read. Throws as prove() does.
  Proof prove_witness(const U256* witness, std::vector<Fr>& scratch, const U256& r, const U256& s, ThreadPool& pool,
                      const std::atomic<bool>* cancel = nullptr) const;

  const Zkey& key() const { return key_; }
  /// The key's A and B by constraint, built by the constructor.
  const ConstraintMatrixOf<C>& matrix() const { return matrix_; }

 private:
  const Zkey& key_;
  DomainOf<C> domain_;
  ConstraintMatrixOf<C> matrix_;
};
/// BN254's, the farm's.
using Prover = ProverOf<Bn254>;

/// A uniform scalar in [0, r) of curve C from the OS's CSPRNG (getrandom(2)),
/// by rejection. Throws std::system_error if the OS has no entropy to give.
template <class C>
U256 random_scalar_of();
/// BN254's.
inline U256 random_scalar() { return random_scalar_of<Bn254>(); }

inline void check_key_points(const Zkey& key) { check_key_points_of<Bn254>(key); }

#define ZKFARM_PROVER_EXTERN(C)                                                                                   \
  extern template void synthesize<C>(const Zkey&, const Wtns&, const PartitionBuffersOf<C>&, ThreadPool&,         \
                                     const std::atomic<bool>*);                                                   \
  extern template ProofOf<C> assemble_proof<C>(const Zkey&, const MsmSumsOf<C>&, const U256&, const U256&);      \
  extern template void check_key_points_of<C>(const Zkey&);                                                       \
  extern template class ProverOf<C>;                                                                              \
  extern template U256 random_scalar_of<C>();
ZKFARM_FOR_EACH_CURVE(ZKFARM_PROVER_EXTERN)
#undef ZKFARM_PROVER_EXTERN

}  // namespace zkfarm
