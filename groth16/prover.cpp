#include "groth16/prover.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "groth16/curve_list.hpp"
#include "groth16/errors.hpp"
#include "groth16/msm.hpp"
#include "groth16/stage_clock.hpp"

namespace zkfarm {

template <class C>
void synthesize(const Zkey& key, const Wtns& wtns, const PartitionBuffersOf<C>& out, ThreadPool& pool,
                const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw Cancelled();
  std::memcpy(out.witness, wtns.values.data(), size_t(key.n_vars) * 32);
  synthesize_abc(ConstraintMatrixOf<C>::build(key, &pool), out.witness, out.a, out.b, out.c, pool, cancel);
}

namespace {

template <class C>
Affine<C> checked_point(const Zkey& key, const uint8_t* bytes, const char* name) {
  Affine<C> p = Affine<C>::load(bytes);
  if (!p.on_curve()) throw InputError(key.path + ": section 2/3: " + name + " is not on the curve");
  return p;
}

// Runs before the members are built: a key of another curve must not reach
// the matrix or the domain (its sizes mean other things there).
template <class C>
const Zkey& checked_key(const Zkey& key) {
  check_key_points_of<C>(key);
  return key;
}

}  // namespace

template <class C>
ProverOf<C>::ProverOf(const Zkey& key, ThreadPool& pool)
    : key_(checked_key<C>(key)), domain_(key.log_domain, pool), matrix_(ConstraintMatrixOf<C>::build(key, &pool)) {}

template <class C>
typename ProverOf<C>::Proof ProverOf<C>::prove_witness(const U256* witness, std::vector<Fr>& scratch, const U256& r, const U256& s,
                            ThreadPool& pool, const std::atomic<bool>* cancel) const {
  const size_t n = key_.domain_size;
  if (scratch.size() < 3 * n) scratch.resize(3 * n);
  PartitionBuffers in;
  in.domain_size = n;
  in.n_vars = key_.n_vars;
  in.a = scratch.data();
  in.b = in.a + n;
  in.c = in.b + n;
  in.witness = const_cast<U256*>(witness);  // prove() only reads the witness
  synthesize_abc(matrix_, witness, in.a, in.b, in.c, pool, cancel);
  return prove(in, r, s, pool, cancel);
}

template <class C>
void check_key_points_of(const Zkey& key) {
  using G1P = typename C::G1Params;
  using G2P = typename C::G2Params;
  if (key.curve != C::kId) {
    throw InputError(key.path + ": the key is over " + curve_name(key.curve) + ", this prover takes " + C::kName +
                     " keys");
  }
  // α1, β1, δ1 enter every proof: on a curve whose G1 cofactor is not 1
  // they must also be in the group of order r, or the proofs made with them
  // cannot verify (the G2 points and IC are checked by the verifying key).
  for (auto [p, name] : {std::pair{key.alpha1, "alpha1"}, {key.beta1, "beta1"}, {key.delta1, "delta1"}}) {
    const Affine<G1P> a = checked_point<G1P>(key, p, name);
    if constexpr (!C::kG1CofactorIsOne) {
      if (!Xyzz<G1P>::from_affine(a).mul(C::Fr::modulus()).is_infinity()) {
        throw InputError(key.path + ": section 2: " + name + " is not in the G1 subgroup");
      }
    }
  }
  checked_point<G2P>(key, key.beta2, "beta2");
  checked_point<G2P>(key, key.gamma2, "gamma2");
  checked_point<G2P>(key, key.delta2, "delta2");
  for (size_t i = 0; i <= key.n_public; ++i) checked_point<G1P>(key, key.ic.data() + i * C::kG1Bytes, "an IC point");
}


template <class C>
typename ProverOf<C>::Proof ProverOf<C>::prove(const PartitionBuffers& in, const U256& r, const U256& s,
                                               ThreadPool& pool, const std::atomic<bool>* cancel) const {
  using G1P = typename C::G1Params;
  using G2P = typename C::G2Params;
  constexpr size_t kG1 = C::kG1Bytes, kG2 = C::kG2Bytes;
  const Zkey& key = key_;
  const size_t n = in.domain_size;
  StageClock clock;
  // Every stage boundary is also the prover's cancellation point.
  auto lap = [&](const char* stage) {
    if (cancel && cancel->load()) throw Cancelled();
    clock.lap(stage);
  };
  lap("start");

  // H scalars: a·b − c on the odd coset, out of Montgomery form, written over a.
  domain_.to_odd_coset(in.a, pool);
  domain_.to_odd_coset(in.b, pool);
  domain_.to_odd_coset(in.c, pool);
  lap("NTTs");
  U256* h_scalars = reinterpret_cast<U256*>(in.a);
  pool.parallel_for(n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) h_scalars[i] = (in.a[i] * in.b[i] - in.c[i]).to_u256();
  });

  // A, B1, B2 and C share the witness' digits; C starts at signal nPublic+1.
  ScalarPlan wplan = plan_scalars(in.witness, in.n_vars, pool, 0, C::kFrBits);
  lap("H scalars");
  const auto msm_a = msm<G1P>(key.a.data(), kG1, wplan, 0, in.n_vars, pool);
  lap("MSM A");
  const auto msm_b1 = msm<G1P>(key.b1.data(), kG1, wplan, 0, in.n_vars, pool);
  lap("MSM B1");
  const auto msm_b2 = msm<G2P>(key.b2.data(), kG2, wplan, 0, in.n_vars, pool);
  lap("MSM B2");
  const size_t c_first = size_t(key.n_public) + 1;
  const auto msm_c = msm<G1P>(key.c.data(), kG1, wplan, c_first, in.n_vars - c_first, pool);
  lap("MSM C");
  wplan = ScalarPlan{};  // free the digits before the H plan
  ScalarPlan hplan = plan_scalars(h_scalars, n, pool, 0, C::kFrBits);
  const auto msm_h = msm<G1P>(key.h.data(), kG1, hplan, 0, n, pool);
  lap("MSM H");

  return assemble_proof<C>(key, MsmSumsOf<C>{msm_a, msm_b1, msm_c, msm_h, msm_b2}, r, s);
}

template <class C>
ProofOf<C> assemble_proof(const Zkey& key, const MsmSumsOf<C>& m, const U256& r, const U256& s) {
  using Fr = typename C::Fr;
  using G1 = Xyzz<typename C::G1Params>;
  using G2 = Xyzz<typename C::G2Params>;
  using G1Affine = Affine<typename C::G1Params>;
  using G2Affine = Affine<typename C::G2Params>;
  const G1 alpha1 = G1::from_affine(G1Affine::load(key.alpha1));
  const G1 beta1 = G1::from_affine(G1Affine::load(key.beta1));
  const G2 beta2 = G2::from_affine(G2Affine::load(key.beta2));
  const G1 delta1 = G1::from_affine(G1Affine::load(key.delta1));
  const G2 delta2 = G2::from_affine(G2Affine::load(key.delta2));
  const U256 rs = (Fr::from_u256(r) * Fr::from_u256(s)).to_u256();
  const U256 neg_rs = (-Fr::from_u256(rs)).to_u256();

  G1 pi_a = alpha1;
  pi_a.add(m.a);
  pi_a.add(delta1.mul(r));

  G2 pi_b = beta2;
  pi_b.add(m.b2);
  pi_b.add(delta2.mul(s));

  G1 b1 = beta1;
  b1.add(m.b1);
  b1.add(delta1.mul(s));

  G1 pi_c = m.c;
  pi_c.add(m.h);
  pi_c.add(pi_a.mul(s));
  pi_c.add(b1.mul(r));
  pi_c.add(delta1.mul(neg_rs));

  return ProofOf<C>{pi_a.to_affine(), pi_b.to_affine(), pi_c.to_affine()};
}

template <class C>
U256 random_scalar_of() {
  static_assert(C::kFrBits > 192 && C::kFrBits <= 256, "r fills the top limb");
  for (;;) {
    U256 x;
    size_t got = 0;
    while (got < sizeof(x)) {
      ssize_t k = getrandom(reinterpret_cast<uint8_t*>(x.data()) + got, sizeof(x) - got, 0);
      if (k < 0) {
        if (errno == EINTR) continue;
        throw std::system_error(errno, std::generic_category(), "getrandom");
      }
      got += size_t(k);
    }
    // r < 2^kFrBits: keep that many bits, reject ≥ r (BN254 accepts about
    // 0.76 of the draws, BLS12-381 about 0.91).
    x[3] &= ~uint64_t{0} >> (256 - C::kFrBits);
    if (is_canonical<typename C::Fr::Params>(x)) return x;
  }
}

#define ZKFARM_PROVER_INSTANTIATE(C)                                                                      \
  template void synthesize<C>(const Zkey&, const Wtns&, const PartitionBuffersOf<C>&, ThreadPool&,         \
                              const std::atomic<bool>*);                                                   \
  template ProofOf<C> assemble_proof<C>(const Zkey&, const MsmSumsOf<C>&, const U256&, const U256&);      \
  template void check_key_points_of<C>(const Zkey&);                                                       \
  template class ProverOf<C>;                                                                              \
  template U256 random_scalar_of<C>();
ZKFARM_FOR_EACH_CURVE(ZKFARM_PROVER_INSTANTIATE)

}  // namespace zkfarm
