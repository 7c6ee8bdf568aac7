#include "groth16/bls12_381_verify.hpp"

#include <utility>

#include "groth16/bls12_381_pairing.hpp"
#include "groth16/errors.hpp"
#include "groth16/proof_form.hpp"

namespace zkfarm::bls12_381 {
namespace {

bool valid(const G1Affine& p) { return canonical(p) && p.on_curve() && g1_in_subgroup(p); }
bool valid(const G2Affine& p) { return canonical(p) && p.on_curve() && g2_in_subgroup(p); }

}  // namespace

VerifyingKey::VerifyingKey(const G1Affine& alpha1, const G2Affine& beta2, const G2Affine& gamma2,
                           const G2Affine& delta2, std::vector<G1Affine> ic, const std::string& source)
    : alpha1_(alpha1), beta2_(beta2), gamma2_(gamma2), delta2_(delta2), ic_(std::move(ic)) {
  auto fail = [&](const std::string& what) { throw InputError(source + ": " + what); };
  if (ic_.empty()) fail("IC has no points (it needs nPublic + 1)");
  auto check = [&](const auto& p, const std::string& name, bool may_be_infinity, const char* group) {
    if (!canonical(p) || !p.on_curve()) fail(name + " is not on the curve");
    if (!may_be_infinity && p.is_infinity()) fail(name + " is the point at infinity");
    if (!valid(p)) fail(name + " is not in the " + group + " subgroup");
  };
  check(alpha1_, "alpha1", false, "G1");
  check(beta2_, "beta2", false, "G2");
  check(gamma2_, "gamma2", false, "G2");
  check(delta2_, "delta2", false, "G2");
  // An IC point may be infinity: a public signal in no constraint has a zero polynomial.
  for (size_t i = 0; i < ic_.size(); ++i) check(ic_[i], "IC point " + std::to_string(i), true, "G1");
}

VerifyingKey VerifyingKey::from_zkey(const Zkey& key) {
  if (key.curve != Curve::kId) {
    throw InputError(key.path + ": the key is over " + curve_name(key.curve) + ", this verifier takes bls12381 keys");
  }
  std::vector<G1Affine> ic(size_t(key.n_public) + 1);
  for (size_t i = 0; i < ic.size(); ++i) ic[i] = G1Affine::load(key.ic.data() + i * Curve::kG1Bytes);
  return VerifyingKey(G1Affine::load(key.alpha1), G2Affine::load(key.beta2), G2Affine::load(key.gamma2),
                      G2Affine::load(key.delta2), std::move(ic), key.path + ": section 2/3");
}

VerifyResult verify_proof(const VerifyingKey& vk, const ProofOf<Curve>& proof, std::span<const U256> public_signals) {
  auto refuse = [](VerifyFault f, std::string why) { return VerifyResult{f, std::move(why)}; };
  if (VerifyResult form = check_proof_form<Curve>(proof, public_signals, vk.n_public()); !form) return form;
  if (!g1_in_subgroup(proof.a)) return refuse(VerifyFault::kNotInSubgroup, "proof point A is not in the G1 subgroup");
  if (!g2_in_subgroup(proof.b)) return refuse(VerifyFault::kNotInSubgroup, "proof point B is not in the G2 subgroup");
  if (!g1_in_subgroup(proof.c)) return refuse(VerifyFault::kNotInSubgroup, "proof point C is not in the G1 subgroup");

  // vk_x by plain double-and-add: a handful of public signals, once per proof.
  G1 vk_x = G1::from_affine(vk.ic_[0]);
  for (size_t i = 0; i < public_signals.size(); ++i)
    vk_x.add(G1::from_affine(vk.ic_[i + 1]).mul(public_signals[i]));
  const std::pair<G1Affine, G2Affine> terms[] = {
      {-proof.a, proof.b}, {vk.alpha1_, vk.beta2_}, {vk_x.to_affine(), vk.gamma2_}, {proof.c, vk.delta2_}};
  if (!pairing_product_is_one(terms)) return refuse(VerifyFault::kPairing, "the pairing check failed");
  return {};
}

}  // namespace zkfarm::bls12_381
