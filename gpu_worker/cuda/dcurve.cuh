#pragma once
// Short Weierstrass points (a = 0) for the GPU, templated over the coordinate
// field (DFq for G1, DFq2 for G2). Same representations and formulas as the
// CPU's groth16/curve.hpp, so results are bit-for-bit comparable:
//  - DAffine: (0, 0) is infinity, as a zkey stores it;
//  - DXyzz: x = X/ZZ, y = Y/ZZZ, ZZ = 0 is infinity. Explicit-Formulas
//    Database "shortw/xyzz": madd-2008-s, add-2008-s, dbl-2008-s-1.
#include "gpu_worker/cuda/dfield.cuh"

namespace zkfarm::cuda {

template <class F>
struct DAffine {
  F x, y;
  ZK_HD bool is_infinity() const { return x.is_zero() && y.is_zero(); }
  ZK_HD DAffine neg() const { return is_infinity() ? *this : DAffine{x, -y}; }
};

template <class F>
struct DXyzz {
  F X, Y, ZZ, ZZZ;

  ZK_HD static DXyzz infinity() { return {F::one(), F::one(), F::zero(), F::zero()}; }
  ZK_HD static DXyzz from_affine(const DAffine<F>& a) {
    if (a.is_infinity()) return infinity();
    return {a.x, a.y, F::one(), F::one()};
  }
  ZK_HD bool is_infinity() const { return ZZ.is_zero(); }

  /// dbl-2008-s-1: 6M + 3S.
  ZK_HD DXyzz dbl() const {
    if (is_infinity()) return *this;
    F U = Y.dbl();
    F V = U.sqr();
    F W = U * V;
    F S = X * V;
    F XX = X.sqr();
    F M = XX.dbl() + XX;
    F X3 = M.sqr() - S.dbl();
    F Y3 = M * (S - X3) - W * Y;
    return {X3, Y3, V * ZZ, W * ZZZ};
  }

  /// this + a (madd-2008-s: 8M + 2S), any of infinity, a == this, a == −this.
  ZK_HD void add_affine(const DAffine<F>& a) {
    if (a.is_infinity()) return;
    if (is_infinity()) {
      *this = from_affine(a);
      return;
    }
    F U2 = a.x * ZZ;
    F S2 = a.y * ZZZ;
    F P = U2 - X;
    F R = S2 - Y;
    if (P.is_zero()) {
      *this = R.is_zero() ? from_affine(a).dbl() : infinity();
      return;
    }
    F PP = P.sqr();
    F PPP = P * PP;
    F Q = X * PP;
    F X3 = R.sqr() - PPP - Q.dbl();
    Y = R * (Q - X3) - Y * PPP;
    X = X3;
    ZZ = ZZ * PP;
    ZZZ = ZZZ * PPP;
  }

  /// this + o (add-2008-s: 12M + 2S).
  ZK_HD void add(const DXyzz& o) {
    if (o.is_infinity()) return;
    if (is_infinity()) {
      *this = o;
      return;
    }
    F U1 = X * o.ZZ;
    F U2 = o.X * ZZ;
    F S1 = Y * o.ZZZ;
    F S2 = o.Y * ZZZ;
    F P = U2 - U1;
    F R = S2 - S1;
    if (P.is_zero()) {
      *this = R.is_zero() ? dbl() : infinity();
      return;
    }
    F PP = P.sqr();
    F PPP = P * PP;
    F Q = U1 * PP;
    F X3 = R.sqr() - PPP - Q.dbl();
    F Y3 = R * (Q - X3) - S1 * PPP;
    X = X3;
    Y = Y3;
    ZZ = ZZ * o.ZZ * PP;
    ZZZ = ZZZ * o.ZZZ * PPP;
  }
};

using G1A = DAffine<DFq>;
using G1X = DXyzz<DFq>;
using G2A = DAffine<DFq2>;
using G2X = DXyzz<DFq2>;

}  // namespace zkfarm::cuda
