#pragma once
// The point formulas of short Weierstrass curves y² = x³ + b (a = 0) in XYZZ
// coordinates, written once for the CPU (groth16/curve.hpp, over groth16::Fp
// and Fp2) and the GPU (gpu_worker/cuda/dcurve.cuh, over the device fields):
// both backends therefore compute the same points by the same steps, and a
// new curve gets its formulas from here on both.
// Formulas: the Explicit-Formulas Database, "g1p/auto/shortw/xyzz":
// dbl-2008-s-1 (6M + 3S), madd-2008-s (8M + 2S), add-2008-s (12M + 2S).
// x = X/ZZ, y = Y/ZZZ with ZZ³ = ZZZ²; ZZ = 0 is infinity; an affine (0, 0)
// is infinity (as a zkey stores it).
// P: a point type with members X, Y, ZZ, ZZZ of field F and static
// infinity() and from_affine(A); A: an affine type with members x, y and
// is_infinity(). F: +, −, *, sqr(), dbl(), is_zero().
#include "groth16/hd.hpp"

namespace zkfarm::xyzz {

/// 2·p (dbl-2008-s-1), infinity stays infinity.
ZK_HD_TEMPLATE
template <class P>
ZK_HD P dbl(const P& p) {
  if (p.ZZ.is_zero()) return p;
  const auto U = p.Y.dbl();
  const auto V = U.sqr();
  const auto W = U * V;
  const auto S = p.X * V;
  const auto XX = p.X.sqr();
  const auto M = XX.dbl() + XX;
  const auto X3 = M.sqr() - S.dbl();
  const auto Y3 = M * (S - X3) - W * p.Y;
  return {X3, Y3, V * p.ZZ, W * p.ZZZ};
}

/// p += a (madd-2008-s), with infinity on either side and a == ±p.
ZK_HD_TEMPLATE
template <class P, class A>
ZK_HD void add_affine(P& p, const A& a) {
  if (a.is_infinity()) return;
  if (p.ZZ.is_zero()) {
    p = P::from_affine(a);
    return;
  }
  const auto U2 = a.x * p.ZZ;
  const auto S2 = a.y * p.ZZZ;
  const auto Pd = U2 - p.X;
  const auto R = S2 - p.Y;
  if (Pd.is_zero()) {
    // a == p: rare (equal points in one bucket); a == −p: infinity.
    p = R.is_zero() ? dbl(P::from_affine(a)) : P::infinity();
    return;
  }
  const auto PP = Pd.sqr();
  const auto PPP = Pd * PP;
  const auto Q = p.X * PP;
  const auto X3 = R.sqr() - PPP - Q.dbl();
  p.Y = R * (Q - X3) - p.Y * PPP;
  p.X = X3;
  p.ZZ = p.ZZ * PP;
  p.ZZZ = p.ZZZ * PPP;
}

/// p += o (add-2008-s), with infinity on either side and o == ±p.
ZK_HD_TEMPLATE
template <class P>
ZK_HD void add(P& p, const P& o) {
  if (o.ZZ.is_zero()) return;
  if (p.ZZ.is_zero()) {
    p = o;
    return;
  }
  const auto U1 = p.X * o.ZZ;
  const auto U2 = o.X * p.ZZ;
  const auto S1 = p.Y * o.ZZZ;
  const auto S2 = o.Y * p.ZZZ;
  const auto Pd = U2 - U1;
  const auto R = S2 - S1;
  if (Pd.is_zero()) {
    p = R.is_zero() ? dbl(p) : P::infinity();
    return;
  }
  const auto PP = Pd.sqr();
  const auto PPP = Pd * PP;
  const auto Q = U1 * PP;
  const auto X3 = R.sqr() - PPP - Q.dbl();
  const auto Y3 = R * (Q - X3) - S1 * PPP;
  p.X = X3;
  p.Y = Y3;
  p.ZZ = p.ZZ * o.ZZ * PP;
  p.ZZZ = p.ZZZ * o.ZZZ * PPP;
}

}  // namespace zkfarm::xyzz
