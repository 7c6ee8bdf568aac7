#pragma once
// Short Weierstrass points y² = x³ + b (a = 0), templated over the coordinate
// field, so G1 (over Fq) and G2 (over Fq2) share one implementation.
//  - Affine: as a zkey stores points; (0, 0) is the point at infinity, which is
//    also how snarkjs writes it (all-zero bytes), and is never on these curves.
//  - Xyzz: extended Jacobian (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ, ZZ³ = ZZZ²;
//    ZZ = 0 is infinity. The formulas (EFD add-2008-s, madd-2008-s,
//    dbl-2008-s-1) are groth16/xyzz_formulas.hpp's, shared with the GPU.
//    A mixed addition costs 8M + 2S, the cheapest form for Pippenger buckets.
#include <cstdint>
#include <cstring>

#include "groth16/xyzz_formulas.hpp"

namespace zkfarm {

template <class C>
struct Affine {
  using F = typename C::Field;
  F x, y;

  static Affine infinity() { return {F::zero(), F::zero()}; }
  bool is_infinity() const { return x.is_zero() && y.is_zero(); }
  /// Loads sizeof(F)·2 bytes as a zkey stores a point (no alignment needed).
  static Affine load(const uint8_t* p) { return {F::load(p), F::load(p + sizeof(F))}; }
  void store(uint8_t* p) const {
    x.store(p);
    y.store(p + sizeof(F));
  }
  Affine operator-() const { return is_infinity() ? *this : Affine{x, -y}; }
  bool on_curve() const { return is_infinity() || y.sqr() == x.sqr() * x + C::b(); }
  bool operator==(const Affine& o) const { return x == o.x && y == o.y; }
};

template <class C>
struct Xyzz {
  using F = typename C::Field;
  F X, Y, ZZ, ZZZ;

  static Xyzz infinity() { return {F::one(), F::one(), F::zero(), F::zero()}; }
  static Xyzz from_affine(const Affine<C>& a) {
    if (a.is_infinity()) return infinity();
    return {a.x, a.y, F::one(), F::one()};
  }
  bool is_infinity() const { return ZZ.is_zero(); }

  /// One inversion; callers converting many points use batch_to_affine.
  Affine<C> to_affine() const {
    if (is_infinity()) return Affine<C>::infinity();
    F izzz = ZZZ.inv();
    F izz = (izzz * ZZ).sqr();  // (ZZ/ZZZ)² = 1/ZZ since ZZ³ = ZZZ²
    return {X * izz, Y * izzz};
  }

  Xyzz operator-() const { return {X, -Y, ZZ, ZZZ}; }

  /// dbl-2008-s-1.
  Xyzz dbl() const { return xyzz::dbl(*this); }
  /// this + a (madd-2008-s), handling infinity on either side and a == ±this.
  void add_affine(const Affine<C>& a) { xyzz::add_affine(*this, a); }
  /// this + o (add-2008-s).
  void add(const Xyzz& o) { xyzz::add(*this, o); }

  /// k·this for a canonical 256-bit scalar k, double-and-add (not constant time:
  /// used on public points with secret r, s only in the final combination, as
  /// snarkjs does).
  template <class Scalar>
  Xyzz mul(const Scalar& k) const {
    Xyzz r = infinity();
    for (int i = 255; i >= 0; --i) {
      r = r.dbl();
      if ((k[i / 64] >> (i % 64)) & 1) r.add(*this);
    }
    return r;
  }

  /// Same point? (compares x = X/ZZ and y = Y/ZZZ crosswise, no inversion)
  bool equals(const Xyzz& o) const {
    if (is_infinity() || o.is_infinity()) return is_infinity() == o.is_infinity();
    return X * o.ZZ == o.X * ZZ && Y * o.ZZZ == o.Y * ZZZ;
  }
};

}  // namespace zkfarm
