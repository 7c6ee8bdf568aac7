#pragma once
// Short Weierstrass points (a = 0) for the GPU, templated over the coordinate
// field (Fq for G1, Fq2 for G2), and DCurve<C>: the device types of curve C
// (groth16 curve traits: Bn254, bls12_381::Curve), made from its constants.
// Same representations as the CPU's groth16/curve.hpp and the same formulas
// (groth16/xyzz_formulas.hpp, one copy for both), so results are bit-for-bit
// comparable:
//  - DAffine: (0, 0) is infinity, as a zkey stores it;
//  - DXyzz: x = X/ZZ, y = Y/ZZZ, ZZ = 0 is infinity.
#include "gpu_worker/cuda/dfield.cuh"
#include "groth16/xyzz_formulas.hpp"
#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"

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

  /// dbl-2008-s-1: 6M + 3S (groth16/xyzz_formulas.hpp, shared with the CPU).
  ZK_HD DXyzz dbl() const { return xyzz::dbl(*this); }
  /// this + a (madd-2008-s: 8M + 2S), any of infinity, a == this, a == −this.
  ZK_HD void add_affine(const DAffine<F>& a) { xyzz::add_affine(*this, a); }
  /// this + o (add-2008-s: 12M + 2S).
  ZK_HD void add(const DXyzz& o) { xyzz::add(*this, o); }
};

/// The device's fields and points of curve C (C: groth16 curve traits). Their
/// bytes are the CPU's (C::Fq, C::Fr, Affine/Xyzz of C::G1Params/G2Params).
template <class C>
struct DCurve {
  using Host = C;
  using Fq = DFp<DLimbs<typename C::Fq::Params>>;
  using Fr = DFp<DLimbs<typename C::Fr::Params>>;
  using Fq2 = DFp2<Fq>;
  using G1A = DAffine<Fq>;
  using G1X = DXyzz<Fq>;
  using G2A = DAffine<Fq2>;
  using G2X = DXyzz<Fq2>;
  static_assert(sizeof(Fq) == sizeof(typename C::Fq) && sizeof(Fr) == sizeof(typename C::Fr) &&
                    sizeof(Fr) == 32,
                "device and host elements share their bytes; scalars are 8 words");
};

}  // namespace zkfarm::cuda
