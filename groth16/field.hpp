#pragma once
// Prime fields of 4×64-bit limbs in Montgomery form (R = 2^256), one template
// over the modulus' constants: BN254's base field Fq and scalar field Fr are two
// instantiations (bn254.hpp). Elements are 32 bytes, little-endian limbs, the
// same bytes snarkjs writes into a zkey ("LEM": little-endian Montgomery).
#include <array>
#include <cstdint>
#include <cstring>
#include <x86intrin.h>  // _addcarry_u64, _subborrow_u64 (x86-64 only, as is the farm)

#include "groth16/mont_mul_x86.hpp"

namespace zkfarm {

/// A 256-bit unsigned integer, little-endian 64-bit limbs (canonical form, not
/// Montgomery). Scalars of an MSM and witness values are U256.
using U256 = std::array<uint64_t, 4>;

using u128 = unsigned __int128;

/// Prime field element, Montgomery form. P gives: kModulus, kR2 (R² mod p),
/// kOne (R mod p), kInv (−p⁻¹ mod 2⁶⁴). The multiplication is CIOS with the
/// "no-carry" shortcut of gnark-crypto, valid while p's top limb < 2⁶³−1, which
/// both BN254 fields satisfy (static_assert below).
template <class P>
struct Fp {
  uint64_t v[4];

  static constexpr Fp zero() { return Fp{{0, 0, 0, 0}}; }
  static constexpr Fp one() { return Fp{{P::kOne[0], P::kOne[1], P::kOne[2], P::kOne[3]}}; }
  /// Wraps 4 limbs already in Montgomery form (e.g. read from a zkey).
  static constexpr Fp from_mont(const U256& m) { return Fp{{m[0], m[1], m[2], m[3]}}; }
  /// Canonical integer x < p (caller checks the range) into Montgomery form.
  static Fp from_u256(const U256& x) {
    return Fp{{x[0], x[1], x[2], x[3]}} * Fp{{P::kR2[0], P::kR2[1], P::kR2[2], P::kR2[3]}};
  }
  static Fp from_u64(uint64_t x) { return from_u256(U256{x, 0, 0, 0}); }
  /// Loads 32 bytes, little-endian, already in Montgomery form (no alignment needed).
  static Fp load(const uint8_t* p) {
    Fp r;
    std::memcpy(r.v, p, 32);
    return r;
  }
  void store(uint8_t* p) const { std::memcpy(p, v, 32); }

  /// Back to the canonical integer (one Montgomery multiplication by 1).
  U256 to_u256() const {
    Fp r = *this * Fp{{1, 0, 0, 0}};
    return U256{r.v[0], r.v[1], r.v[2], r.v[3]};
  }
  U256 mont() const { return U256{v[0], v[1], v[2], v[3]}; }

  bool is_zero() const { return (v[0] | v[1] | v[2] | v[3]) == 0; }
  bool operator==(const Fp& o) const {
    return ((v[0] ^ o.v[0]) | (v[1] ^ o.v[1]) | (v[2] ^ o.v[2]) | (v[3] ^ o.v[3])) == 0;
  }
  bool operator!=(const Fp& o) const { return !(*this == o); }

  /// this − p if this ≥ p (inputs < 2p).
  static inline __attribute__((always_inline)) void reduce_once(uint64_t t[4]) {
    unsigned long long s[4];
    unsigned char borrow = 0;
    for (int i = 0; i < 4; ++i) borrow = _subborrow_u64(borrow, t[i], P::kModulus[i], &s[i]);
    for (int i = 0; i < 4; ++i) t[i] = borrow ? t[i] : s[i];
  }

  friend Fp operator+(const Fp& a, const Fp& b) {
    Fp r;
    unsigned char carry = 0;
    for (int i = 0; i < 4; ++i)
      carry = _addcarry_u64(carry, a.v[i], b.v[i], reinterpret_cast<unsigned long long*>(&r.v[i]));
    reduce_once(r.v);  // p < 2^254, so a + b never carries out of 256 bits
    return r;
  }
  friend Fp operator-(const Fp& a, const Fp& b) {
    Fp r;
    unsigned char borrow = 0;
    for (int i = 0; i < 4; ++i)
      borrow = _subborrow_u64(borrow, a.v[i], b.v[i], reinterpret_cast<unsigned long long*>(&r.v[i]));
    // Add p back when it borrowed, without a branch (the sign is data-dependent).
    const uint64_t mask = 0 - uint64_t(borrow);
    unsigned char carry = 0;
    for (int i = 0; i < 4; ++i)
      carry = _addcarry_u64(carry, r.v[i], P::kModulus[i] & mask, reinterpret_cast<unsigned long long*>(&r.v[i]));
    return r;
  }
  Fp operator-() const { return is_zero() ? *this : zero() - *this; }
  Fp dbl() const { return *this + *this; }

  friend Fp operator*(const Fp& a, const Fp& b) {
    static_assert(P::kModulus[3] < 0x7ffffffffffffffeULL, "no-carry CIOS needs a spare top bit");
    uint64_t t[4];
    mont_mul_mulx<P>(t, a.v, b.v);
    reduce_once(t);
    return Fp{{t[0], t[1], t[2], t[3]}};
  }

  /// The same product in portable C++ (unsigned __int128), kept as the
  /// reference the assembly is tested against.
  static Fp mul_portable(const Fp& a, const Fp& b) {
    constexpr uint64_t q0 = P::kModulus[0], q1 = P::kModulus[1], q2 = P::kModulus[2], q3 = P::kModulus[3];
    uint64_t t0, t1, t2, t3, A, C, m;
    // Round i = 0 (t = 0), then three rounds, unrolled.
    mac(A, t0, a.v[0], b.v[0], 0, 0);
    m = t0 * P::kInv;
    C = uint64_t(((u128)m * q0 + t0) >> 64);
    mac(A, t1, a.v[1], b.v[0], A, 0);
    mac(C, t0, m, q1, t1, C);
    mac(A, t2, a.v[2], b.v[0], A, 0);
    mac(C, t1, m, q2, t2, C);
    mac(A, t3, a.v[3], b.v[0], A, 0);
    mac(C, t2, m, q3, t3, C);
    t3 = C + A;
    round(t0, t1, t2, t3, a, b.v[1]);
    round(t0, t1, t2, t3, a, b.v[2]);
    round(t0, t1, t2, t3, a, b.v[3]);
    uint64_t t[4] = {t0, t1, t2, t3};
    reduce_once(t);
    return Fp{{t[0], t[1], t[2], t[3]}};
  }

  /// hi:lo = a·b + c + d (never overflows 128 bits).
  static inline __attribute__((always_inline)) void mac(uint64_t& hi, uint64_t& lo, uint64_t a, uint64_t b,
                                                        uint64_t c, uint64_t d) {
    u128 t = (u128)a * b + c + d;
    lo = uint64_t(t);
    hi = uint64_t(t >> 64);
  }
  /// One CIOS round: t = (t + a·bi + m·p) / 2^64.
  static inline __attribute__((always_inline)) void round(uint64_t& t0, uint64_t& t1, uint64_t& t2,
                                                          uint64_t& t3, const Fp& a, uint64_t bi) {
    constexpr uint64_t q0 = P::kModulus[0], q1 = P::kModulus[1], q2 = P::kModulus[2], q3 = P::kModulus[3];
    uint64_t A, C, x;
    mac(A, t0, a.v[0], bi, t0, 0);
    uint64_t m = t0 * P::kInv;
    C = uint64_t(((u128)m * q0 + t0) >> 64);
    mac(A, x, a.v[1], bi, t1, A);
    mac(C, t0, m, q1, x, C);
    mac(A, x, a.v[2], bi, t2, A);
    mac(C, t1, m, q2, x, C);
    mac(A, x, a.v[3], bi, t3, A);
    mac(C, t2, m, q3, x, C);
    t3 = C + A;
  }
  Fp& operator+=(const Fp& o) { return *this = *this + o; }
  Fp& operator-=(const Fp& o) { return *this = *this - o; }
  Fp& operator*=(const Fp& o) { return *this = *this * o; }
  Fp sqr() const { return *this * *this; }

  /// this^e for a canonical exponent e (square-and-multiply, high bit first).
  Fp pow(const U256& e) const {
    Fp r = one();
    for (int i = 255; i >= 0; --i) {
      r = r.sqr();
      if ((e[i / 64] >> (i % 64)) & 1) r *= *this;
    }
    return r;
  }
  /// Multiplicative inverse by Fermat (x^(p−2)); inverse of 0 is 0. About 300
  /// multiplications: callers invert in batches (batch_inverse) where it matters.
  Fp inv() const {
    U256 e{P::kModulus[0] - 2, P::kModulus[1], P::kModulus[2], P::kModulus[3]};
    return pow(e);
  }
};

/// True when x < the field's modulus (x canonical).
template <class P>
inline bool is_canonical(const U256& x) {
  for (int i = 3; i >= 0; --i) {
    if (x[i] != P::kModulus[i]) return x[i] < P::kModulus[i];
  }
  return false;
}

/// Inverts every nonzero element of v[0..n) in place with one field inversion
/// and about 3n multiplications (Montgomery's trick); zeros stay zero.
/// scratch must hold n elements. The products run in 4 interleaved lanes:
/// a single running product is one long chain of dependent multiplications,
/// bound by their latency (measured: about 2× slower in the MSM's batches).
template <class F>
void batch_inverse(F* v, size_t n, F* scratch) {
  constexpr size_t kLanes = 4;
  F acc[kLanes] = {F::one(), F::one(), F::one(), F::one()};
  for (size_t i = 0; i < n; ++i) {
    scratch[i] = acc[i % kLanes];
    if (!v[i].is_zero()) acc[i % kLanes] *= v[i];
  }
  // Invert the 4 lane products with one inversion.
  const F p01 = acc[0] * acc[1], p23 = acc[2] * acc[3];
  const F ip = (p01 * p23).inv();
  F inv[kLanes] = {ip * p23 * acc[1], ip * p23 * acc[0], ip * p01 * acc[3], ip * p01 * acc[2]};
  for (size_t i = n; i-- > 0;) {
    if (v[i].is_zero()) continue;
    const F vi = v[i];
    v[i] = inv[i % kLanes] * scratch[i];
    inv[i % kLanes] *= vi;
  }
}

}  // namespace zkfarm
