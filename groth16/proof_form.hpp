#pragma once
// What every Groth16 verifier here checks before its pairing, for a curve C
// (curve traits): the checks of snarkjs 0.7's groth16_verify.js before
// pairingEq — the public signals' count and range (< r), and the proof's
// points on their curves — plus coordinates below q, which Montgomery
// arithmetic assumes (a zkey or the proof codec guarantee it; a proof built
// any other way is checked here). The subgroup checks, which depend on the
// curve's cofactors, follow in verify.cpp.
#include <span>
#include <string>

#include "groth16/prover.hpp"
#include "groth16/verify.hpp"

namespace zkfarm {

/// x < p as stored (Montgomery form is canonical exactly when its integer is).
template <class P>
bool canonical(const Fp<P>& x) {
  return is_canonical<P>(x.mont());
}
template <class F>
bool canonical(const Fp2<F>& x) {
  return canonical(x.c0) && canonical(x.c1);
}
/// Both coordinates below q (G1 or G2).
template <class P>
bool canonical(const Affine<P>& p) {
  return canonical(p.x) && canonical(p.y);
}

/// The form checks of `proof` against n_public expected public signals, in
/// this order: count, range, A, B, C (canonical and on their curves). ok()
/// when all pass; otherwise the fault and a reason without input values.
template <class C>
VerifyResult check_proof_form(const ProofOf<C>& proof, std::span<const U256> public_signals, size_t n_public) {
  auto refuse = [](VerifyFault f, std::string why) { return VerifyResult{f, std::move(why)}; };
  if (public_signals.size() != n_public)
    return refuse(VerifyFault::kPublicCount, "expected " + std::to_string(n_public) + " public signals, got " +
                                                 std::to_string(public_signals.size()));
  for (size_t i = 0; i < public_signals.size(); ++i)
    if (!is_canonical<typename C::Fr::Params>(public_signals[i]))
      return refuse(VerifyFault::kPublicRange,
                    "public signal " + std::to_string(i + 1) + " is not below the group order r");
  if (!canonical(proof.a) || !proof.a.on_curve())
    return refuse(VerifyFault::kNotOnCurve, "proof point A is not on the curve G1");
  if (!canonical(proof.b) || !proof.b.on_curve())
    return refuse(VerifyFault::kNotOnCurve, "proof point B is not on the twist curve of G2");
  if (!canonical(proof.c) || !proof.c.on_curve())
    return refuse(VerifyFault::kNotOnCurve, "proof point C is not on the curve G1");
  return {};
}

}  // namespace zkfarm
