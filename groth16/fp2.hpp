#pragma once
// Quadratic extension F[u]/(u² + 1) of a prime field F with p ≡ 3 (mod 4)
// (−1 is then a non-residue): BN254's and BLS12-381's Fq2 are both this, the
// twist fields their G2 points live in. Elements are c0 + c1·u, stored c0
// then c1 (snarkjs's order), 2·F::kBytes bytes.
#include <cstddef>
#include <cstdint>

namespace zkfarm {

template <class F>
struct Fp2 {
  using Base = F;
  static constexpr size_t kBytes = 2 * F::kBytes;
  F c0, c1;

  static Fp2 zero() { return {F::zero(), F::zero()}; }
  static Fp2 one() { return {F::one(), F::zero()}; }
  static Fp2 load(const uint8_t* p) { return {F::load(p), F::load(p + F::kBytes)}; }
  void store(uint8_t* p) const {
    c0.store(p);
    c1.store(p + F::kBytes);
  }
  bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
  bool operator==(const Fp2& o) const { return c0 == o.c0 && c1 == o.c1; }
  bool operator!=(const Fp2& o) const { return !(*this == o); }

  friend Fp2 operator+(const Fp2& a, const Fp2& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
  friend Fp2 operator-(const Fp2& a, const Fp2& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
  Fp2 operator-() const { return {-c0, -c1}; }
  Fp2 dbl() const { return {c0.dbl(), c1.dbl()}; }
  /// Karatsuba: 3 base-field multiplications.
  friend Fp2 operator*(const Fp2& a, const Fp2& b) {
    F t0 = a.c0 * b.c0, t1 = a.c1 * b.c1;
    return {t0 - t1, (a.c0 + a.c1) * (b.c0 + b.c1) - t0 - t1};
  }
  Fp2& operator+=(const Fp2& o) { return *this = *this + o; }
  Fp2& operator-=(const Fp2& o) { return *this = *this - o; }
  Fp2& operator*=(const Fp2& o) { return *this = *this * o; }
  /// (c0 + c1)(c0 − c1) + 2·c0·c1·u: 2 multiplications.
  Fp2 sqr() const { return {(c0 + c1) * (c0 - c1), (c0 * c1).dbl()}; }
  /// 1/(c0 + c1·u) = (c0 − c1·u)/(c0² + c1²); inverse of 0 is 0.
  Fp2 inv() const {
    F t = (c0.sqr() + c1.sqr()).inv();
    return {c0 * t, -(c1 * t)};
  }
};

}  // namespace zkfarm
