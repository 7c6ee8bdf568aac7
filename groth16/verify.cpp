#include "groth16/verify.hpp"

#include <array>

#include "groth16/curve_list.hpp"
#include "groth16/errors.hpp"
#include "groth16/proof_form.hpp"

namespace zkfarm {

namespace {

// Signed 4-bit windows: digits in [−7, 8], 64 windows for 256 bits plus the
// last carry (every curve's r here is below 2^256). Tables hold 1·P … 8·P.
constexpr int kWindowBits = 4;
constexpr int kWindows = 256 / kWindowBits + 1;
constexpr int kTableSize = 1 << (kWindowBits - 1);

template <class C>
using IcTable = std::array<Affine<typename C::G1Params>, kTableSize>;

void signed_digits(const U256& s, int8_t out[kWindows]) {
  int carry = 0;
  for (int j = 0; j < kWindows - 1; ++j) {
    const int bits = int((s[j / 16] >> (4 * (j % 16))) & 0xf) + carry;
    carry = bits > kTableSize;
    out[j] = int8_t(bits - (carry << kWindowBits));
  }
  out[kWindows - 1] = int8_t(carry);
}

// 1·P … 8·P for each point, affine, with one field inversion for all of them.
template <class C>
std::vector<IcTable<C>> window_tables(std::span<const Affine<typename C::G1Params>> points) {
  using G1 = Xyzz<typename C::G1Params>;
  using Fq = typename C::Fq;
  const size_t n = points.size() * kTableSize;
  std::vector<G1> multiples(n);
  for (size_t i = 0; i < points.size(); ++i) {
    G1 acc = G1::from_affine(points[i]);
    for (int k = 0; k < kTableSize; ++k) {
      multiples[i * kTableSize + k] = acc;
      acc.add_affine(points[i]);
    }
  }
  std::vector<Fq> inv(n), scratch(n);
  for (size_t k = 0; k < n; ++k) inv[k] = multiples[k].ZZZ;  // 0 for infinity, kept 0 by batch_inverse
  batch_inverse(inv.data(), n, scratch.data());
  std::vector<IcTable<C>> tables(points.size());
  for (size_t k = 0; k < n; ++k) {
    auto& out = tables[k / kTableSize][k % kTableSize];
    const G1& m = multiples[k];
    if (m.is_infinity()) {
      out = Affine<typename C::G1Params>::infinity();
      continue;
    }
    const Fq izz = (inv[k] * m.ZZ).sqr();  // (ZZ/ZZZ)² = 1/ZZ since ZZ³ = ZZZ²
    out = {m.X * izz, m.Y * inv[k]};
  }
  return tables;
}

}  // namespace

template <class C>
struct VerifyingKeyOf<C>::Prepared {
  Fq12Of<C> alpha_beta;  // the Miller loop of (α, β): the same factor in every check
  G2PreparedOf<C> gamma, delta;
  std::vector<IcTable<C>> ic_tables;  // IC_1 … IC_nPublic
};

template <class C>
VerifyingKeyOf<C>::VerifyingKeyOf(const G1A& alpha1, const G2A& beta2, const G2A& gamma2, const G2A& delta2,
                                  std::vector<G1A> ic, const std::string& source)
    : alpha1_(alpha1), beta2_(beta2), gamma2_(gamma2), delta2_(delta2), ic_(std::move(ic)) {
  auto fail = [&](const std::string& what) { throw InputError(source + ": " + what); };
  if (ic_.empty()) fail("IC has no points (it needs nPublic + 1)");
  auto check_g1 = [&](const G1A& p, const std::string& name, bool may_be_infinity) {
    if (!canonical(p) || !p.on_curve()) fail(name + " is not on the curve");
    if (!may_be_infinity && p.is_infinity()) fail(name + " is the point at infinity");
    if constexpr (!C::kG1CofactorIsOne)
      if (!g1_in_subgroup_of<C>(p)) fail(name + " is not in the G1 subgroup");
  };
  auto check_g2 = [&](const G2A& p, const char* name) {
    if (!canonical(p) || !p.on_curve()) fail(std::string(name) + " is not on the curve");
    if (p.is_infinity()) fail(std::string(name) + " is the point at infinity");
    if (!g2_in_subgroup_of<C>(p)) fail(std::string(name) + " is not in the G2 subgroup");
  };
  check_g1(alpha1_, "alpha1", false);
  check_g2(beta2_, "beta2");
  check_g2(gamma2_, "gamma2");
  check_g2(delta2_, "delta2");
  // An IC point may be infinity: a public signal in no constraint has a zero polynomial.
  for (size_t i = 0; i < ic_.size(); ++i) check_g1(ic_[i], "IC point " + std::to_string(i), true);

  auto p = std::make_shared<Prepared>();
  const G2PreparedOf<C> beta(beta2_);
  const PairingTermOf<C> ab{alpha1_, &beta};
  p->alpha_beta = miller_loop_of<C>({&ab, 1});
  p->gamma = G2PreparedOf<C>(gamma2_);
  p->delta = G2PreparedOf<C>(delta2_);
  p->ic_tables = window_tables<C>(std::span<const G1A>(ic_).subspan(1));
  prepared_ = std::move(p);
}

template <class C>
VerifyingKeyOf<C> VerifyingKeyOf<C>::from_zkey(const Zkey& key) {
  if (key.curve != C::kId) {
    throw InputError(key.path + ": the key is over " + curve_name(key.curve) + ", this verifier takes " + C::kName +
                     " keys");
  }
  std::vector<G1A> ic(size_t(key.n_public) + 1);
  for (size_t i = 0; i < ic.size(); ++i) ic[i] = G1A::load(key.ic.data() + i * C::kG1Bytes);
  return VerifyingKeyOf(G1A::load(key.alpha1), G2A::load(key.beta2), G2A::load(key.gamma2), G2A::load(key.delta2),
                        std::move(ic), key.path + ": section 2/3");
}

template <class C>
auto VerifyingKeyOf<C>::public_input_point(std::span<const U256> s) const -> G1A {
  // Straus' interleaving: one run of doublings for all scalars, an addition
  // per non-zero window digit (small public values have few).
  using G1 = Xyzz<typename C::G1Params>;
  std::vector<std::array<int8_t, kWindows>> digits(s.size());
  for (size_t i = 0; i < s.size(); ++i) signed_digits(s[i], digits[i].data());
  const auto& tables = prepared_->ic_tables;
  G1 acc = G1::infinity();
  for (int j = kWindows - 1; j >= 0; --j) {
    for (int b = 0; b < kWindowBits; ++b) acc = acc.dbl();  // dbl of infinity is free
    for (size_t i = 0; i < s.size(); ++i) {
      const int d = digits[i][j];
      if (d > 0) acc.add_affine(tables[i][d - 1]);
      else if (d < 0) acc.add_affine(-tables[i][-d - 1]);
    }
  }
  acc.add_affine(ic_[0]);
  return acc.to_affine();
}

template <class C>
VerifyResult verify_proof(const VerifyingKeyOf<C>& vk, const ProofOf<C>& proof, std::span<const U256> public_signals) {
  auto refuse = [](VerifyFault f, std::string why) { return VerifyResult{f, std::move(why)}; };
  if (VerifyResult form = check_proof_form<C>(proof, public_signals, vk.n_public()); !form) return form;
  // G1's subgroup checks only where its cofactor is not 1 (on BN254 every
  // point of the curve is in G1); the order A, B, C is the one errors report.
  if constexpr (!C::kG1CofactorIsOne)
    if (!g1_in_subgroup_of<C>(proof.a))
      return refuse(VerifyFault::kNotInSubgroup, "proof point A is not in the G1 subgroup");
  if (!g2_in_subgroup_of<C>(proof.b))
    return refuse(VerifyFault::kNotInSubgroup, "proof point B is not in the G2 subgroup");
  if constexpr (!C::kG1CofactorIsOne)
    if (!g1_in_subgroup_of<C>(proof.c))
      return refuse(VerifyFault::kNotInSubgroup, "proof point C is not in the G1 subgroup");

  const auto vk_x = vk.public_input_point(public_signals);
  const G2PreparedOf<C> b(proof.b);
  const auto& p = *vk.prepared_;
  const PairingTermOf<C> terms[] = {{-proof.a, &b}, {vk_x, &p.gamma}, {proof.c, &p.delta}};
  const Fq12Of<C> f = miller_loop_of<C>(terms) * p.alpha_beta;
  if (!final_exponentiation_of<C>(f).is_one()) return refuse(VerifyFault::kPairing, "the pairing check failed");
  return {};
}

// Every curve of Curves gets the verifier.
#define ZKFARM_VERIFY_INSTANTIATE(C) \
  template class VerifyingKeyOf<C>;  \
  template VerifyResult verify_proof<C>(const VerifyingKeyOf<C>&, const ProofOf<C>&, std::span<const U256>);
ZKFARM_FOR_EACH_CURVE(ZKFARM_VERIFY_INSTANTIATE)

}  // namespace zkfarm
