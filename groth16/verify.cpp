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
  G2PreparedOf<C> beta, gamma, delta;  // β for batches, whose α term is weighted
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
  p->beta = G2PreparedOf<C>(beta2_);
  const PairingTermOf<C> ab{alpha1_, &p->beta};
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

// Σ s_i·T_i over the window tables T_i of IC_1.. (s canonical): Straus'
// interleaving, one run of doublings for all scalars and an addition per
// non-zero window digit (small public values have few).
namespace {
template <class C>
Xyzz<typename C::G1Params> straus(const std::vector<IcTable<C>>& tables, std::span<const U256> s) {
  using G1 = Xyzz<typename C::G1Params>;
  std::vector<std::array<int8_t, kWindows>> digits(s.size());
  for (size_t i = 0; i < s.size(); ++i) signed_digits(s[i], digits[i].data());
  G1 acc = G1::infinity();
  for (int j = kWindows - 1; j >= 0; --j) {
    for (int b = 0; b < kWindowBits; ++b) acc = acc.dbl();  // dbl of infinity is free
    for (size_t i = 0; i < s.size(); ++i) {
      const int d = digits[i][j];
      if (d > 0) acc.add_affine(tables[i][d - 1]);
      else if (d < 0) acc.add_affine(-tables[i][-d - 1]);
    }
  }
  return acc;
}
}  // namespace

template <class C>
auto VerifyingKeyOf<C>::public_input_point(std::span<const U256> s) const -> G1A {
  auto acc = straus<C>(prepared_->ic_tables, s);
  acc.add_affine(ic_[0]);
  return acc.to_affine();
}

template <class C>
Xyzz<typename C::G1Params> VerifyingKeyOf<C>::ic_combination(std::span<const U256> t) const {
  using G1 = Xyzz<typename C::G1Params>;
  G1 acc = straus<C>(prepared_->ic_tables, t.subspan(1));
  acc.add(G1::from_affine(ic_[0]).mul(t[0]));
  return acc;
}

namespace {

// The checks before the pairing, in verify_proof's order: the form
// (proof_form.hpp), then the subgroups (G1's only where its cofactor is
// not 1: on BN254 every point of the curve is in G1).
template <class C>
VerifyResult precheck(const ProofOf<C>& proof, std::span<const U256> public_signals, size_t n_public) {
  auto refuse = [](VerifyFault f, std::string why) { return VerifyResult{f, std::move(why)}; };
  if (VerifyResult form = check_proof_form<C>(proof, public_signals, n_public); !form) return form;
  if constexpr (!C::kG1CofactorIsOne)
    if (!g1_in_subgroup_of<C>(proof.a))
      return refuse(VerifyFault::kNotInSubgroup, "proof point A is not in the G1 subgroup");
  if (!g2_in_subgroup_of<C>(proof.b))
    return refuse(VerifyFault::kNotInSubgroup, "proof point B is not in the G2 subgroup");
  if constexpr (!C::kG1CofactorIsOne)
    if (!g1_in_subgroup_of<C>(proof.c))
      return refuse(VerifyFault::kNotInSubgroup, "proof point C is not in the G1 subgroup");
  return {};
}

const VerifyResult kPairingFails{VerifyFault::kPairing, "the pairing check failed"};

// A batch's weight ρ: uniform in [1, 2¹²⁸), drawn after the proofs are
// fixed: the low 128 bits of random_scalar_of (getrandom; r > 2²⁵², so the
// bias of taking them is below 2⁻¹²⁴).
template <class C>
U256 random_weight() {
  for (;;) {
    U256 x = random_scalar_of<C>();
    x[2] = x[3] = 0;
    if (x[0] | x[1]) return x;
  }
}

}  // namespace

template <class C>
bool VerifyingKeyOf<C>::batch_holds(std::span<const BatchItemOf<C>> items, std::span<const size_t> idx) const {
  using G1 = Xyzz<typename C::G1Params>;
  using Fr = typename C::Fr;
  const auto& p = *prepared_;
  const size_t n = idx.size();
  std::vector<Fr> t(n_public() + 1, Fr::zero());  // Σρ_j, then Σ_j ρ_j·s_ji
  G1 c_sum = G1::infinity();
  std::vector<G1A> weighted_a(n);
  std::vector<G2PreparedOf<C>> b(n);
  for (size_t k = 0; k < n; ++k) {
    const BatchItemOf<C>& item = items[idx[k]];
    const U256 rho = random_weight<C>();
    const Fr w = Fr::from_u256(rho);
    t[0] += w;
    for (size_t i = 0; i < item.public_signals.size(); ++i) t[i + 1] += w * Fr::from_u256(item.public_signals[i]);
    weighted_a[k] = G1::from_affine(item.proof->a).mul(rho).to_affine();
    c_sum.add(G1::from_affine(item.proof->c).mul(rho));
    b[k] = G2PreparedOf<C>(item.proof->b);
  }
  std::vector<U256> scalars(t.size());
  for (size_t i = 0; i < t.size(); ++i) scalars[i] = t[i].to_u256();
  std::vector<PairingTermOf<C>> terms;
  terms.reserve(n + 3);
  for (size_t k = 0; k < n; ++k) terms.push_back({weighted_a[k], &b[k]});
  terms.push_back({-G1::from_affine(alpha1_).mul(scalars[0]).to_affine(), &p.beta});
  terms.push_back({-ic_combination(scalars).to_affine(), &p.gamma});
  terms.push_back({-c_sum.to_affine(), &p.delta});
  return final_exponentiation_of<C>(miller_loop_of<C>(terms)).is_one();
}

template <class C>
bool VerifyingKeyOf<C>::pairing_holds(const ProofOf<C>& proof, std::span<const U256> public_signals) const {
  const auto vk_x = public_input_point(public_signals);
  const G2PreparedOf<C> b(proof.b);
  const auto& p = *prepared_;
  const PairingTermOf<C> terms[] = {{-proof.a, &b}, {vk_x, &p.gamma}, {proof.c, &p.delta}};
  return final_exponentiation_of<C>(miller_loop_of<C>(terms) * p.alpha_beta).is_one();
}

template <class C>
VerifyResult verify_proof(const VerifyingKeyOf<C>& vk, const ProofOf<C>& proof, std::span<const U256> public_signals) {
  if (VerifyResult pre = precheck<C>(proof, public_signals, vk.n_public()); !pre) return pre;
  if (!vk.pairing_holds(proof, public_signals)) return kPairingFails;
  return {};
}

template <class C>
std::vector<VerifyResult> verify_batch(const VerifyingKeyOf<C>& vk, std::span<const BatchItemOf<C>> items,
                                       size_t* pairings) {
  std::vector<VerifyResult> out(items.size());
  std::vector<size_t> well_formed;
  for (size_t i = 0; i < items.size(); ++i) {
    out[i] = precheck<C>(*items[i].proof, items[i].public_signals, vk.n_public());
    if (out[i]) well_formed.push_back(i);
  }
  size_t runs = 0;
  // A failing set is halved until each bad proof stands alone; one proof's
  // pairing is checked as verify_proof checks it (no weight needed, and its
  // prechecks already passed above).
  auto check = [&](auto&& self, std::span<const size_t> idx) -> void {
    if (idx.empty()) return;
    ++runs;
    if (idx.size() == 1) {
      const BatchItemOf<C>& item = items[idx[0]];
      if (!vk.pairing_holds(*item.proof, item.public_signals)) out[idx[0]] = kPairingFails;
      return;
    }
    if (vk.batch_holds(items, idx)) return;  // every one verifies (out[i] already ok)
    const size_t half = idx.size() / 2;
    self(self, idx.first(half));
    self(self, idx.subspan(half));
  };
  check(check, std::span<const size_t>(well_formed));
  if (pairings) *pairings = runs;
  return out;
}

// Every curve of Curves gets the verifier.
#define ZKFARM_VERIFY_INSTANTIATE(C) \
  template class VerifyingKeyOf<C>;  \
  template VerifyResult verify_proof<C>(const VerifyingKeyOf<C>&, const ProofOf<C>&, std::span<const U256>); \
  template std::vector<VerifyResult> verify_batch<C>(const VerifyingKeyOf<C>&, std::span<const BatchItemOf<C>>, size_t*);
ZKFARM_FOR_EACH_CURVE(ZKFARM_VERIFY_INSTANTIATE)

}  // namespace zkfarm
