#pragma once
// Prime fields of N×64-bit limbs in Montgomery form (R = 2^(64N)), one
// template over the modulus' constants: BN254's Fq and Fr (bn254.hpp) are
// 4-limb instantiations, BLS12-381's Fq (bls12_381.hpp) a 6-limb one. Elements
// are 8N bytes, little-endian limbs, the same bytes snarkjs writes into a zkey
// ("LEM": little-endian Montgomery; n8q/n8r in the header give 8N).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <x86intrin.h>  // _addcarry_u64, _subborrow_u64 (x86-64 only, as is the farm)

#include "groth16/mont_mul_x86.hpp"
#include "groth16/safegcd.hpp"

namespace zkfarm {

/// An unsigned integer of N 64-bit limbs, little-endian (canonical form, not
/// Montgomery).
template <size_t N>
using Limbs = std::array<uint64_t, N>;

/// A 256-bit unsigned integer: scalars of an MSM and witness values (both
/// curves' scalar fields are 4 limbs).
using U256 = Limbs<4>;

using u128 = unsigned __int128;

/// Prime field element, Montgomery form. P gives: kModulus (N limbs, N from
/// its size), kR2 (R² mod p), kOne (R mod p), kInv (−p⁻¹ mod 2⁶⁴). The
/// multiplication is CIOS (Koç, Acar, Kaliski 1996) with the "no-carry"
/// shortcut of gnark-crypto, valid while p's top limb < 2⁶³−1 (static_assert
/// below): every field zkfarm knows satisfies it. 4 limbs: the MULX/ADX
/// assembly (mont_mul_x86.hpp); other sizes: the portable form.
template <class P>
struct Fp {
  using Params = P;
  static constexpr size_t N = sizeof(P::kModulus) / sizeof(uint64_t);
  static constexpr size_t kBytes = 8 * N;
  /// A canonical integer of the field's width.
  using Int = Limbs<N>;
  static_assert(P::kModulus[N - 1] < 0x7ffffffffffffffeULL, "no-carry CIOS needs a spare top bit");

  uint64_t v[N];

  static constexpr Fp zero() { return Fp{}; }
  static constexpr Fp one() { return from_limbs(P::kOne); }
  /// Wraps N limbs already in Montgomery form (e.g. read from a zkey).
  static constexpr Fp from_mont(const Int& m) {
    Fp r{};
    for (size_t i = 0; i < N; ++i) r.v[i] = m[i];
    return r;
  }
  /// Canonical integer x < p (caller checks the range) into Montgomery form.
  static Fp from_int(const Int& x) { return from_mont(x) * from_limbs(P::kR2); }
  static Fp from_u64(uint64_t x) {
    Int i{};
    i[0] = x;
    return from_int(i);
  }
  /// The 4-limb names (both scalar fields, BN254's Fq).
  static Fp from_u256(const U256& x) requires(N == 4) { return from_int(x); }
  U256 to_u256() const requires(N == 4) { return to_int(); }

  /// Loads 8N bytes, little-endian, already in Montgomery form (no alignment needed).
  static Fp load(const uint8_t* p) {
    Fp r;
    std::memcpy(r.v, p, kBytes);
    return r;
  }
  void store(uint8_t* p) const { std::memcpy(p, v, kBytes); }

  /// Back to the canonical integer (one Montgomery multiplication by 1).
  Int to_int() const {
    // Montgomery's reduction of v (v·R⁻¹ mod p): the product by 1 without
    // the multiplications by 1's limbs, half the work (the witness graph
    // converts most values it writes). Each round adds m·p, m = t₀·kInv,
    // so the low limb vanishes and t shifts down one limb; v < p < R gives
    // a result below 2p, made canonical by reduce_once.
    uint64_t t[N];
    for (size_t i = 0; i < N; ++i) t[i] = v[i];
    for (size_t round = 0; round < N; ++round) {
      const uint64_t m = t[0] * P::kInv;
      u128 acc = u128(m) * P::kModulus[0] + t[0];
      for (size_t j = 1; j < N; ++j) {
        acc = u128(m) * P::kModulus[j] + t[j] + uint64_t(acc >> 64);
        t[j - 1] = uint64_t(acc);
      }
      t[N - 1] = uint64_t(acc >> 64);
    }
    reduce_once(t);
    Int r;
    for (size_t i = 0; i < N; ++i) r[i] = t[i];
    return r;
  }
  Int mont() const {
    Int r;
    for (size_t i = 0; i < N; ++i) r[i] = v[i];
    return r;
  }

  bool is_zero() const {
    uint64_t acc = 0;
    for (size_t i = 0; i < N; ++i) acc |= v[i];
    return acc == 0;
  }
  bool operator==(const Fp& o) const {
    uint64_t acc = 0;
    for (size_t i = 0; i < N; ++i) acc |= v[i] ^ o.v[i];
    return acc == 0;
  }
  bool operator!=(const Fp& o) const { return !(*this == o); }

  /// this − p if this ≥ p (inputs < 2p).
  static inline __attribute__((always_inline)) void reduce_once(uint64_t t[N]) {
    unsigned long long s[N];
    unsigned char borrow = 0;
    for (size_t i = 0; i < N; ++i) borrow = _subborrow_u64(borrow, t[i], P::kModulus[i], &s[i]);
    for (size_t i = 0; i < N; ++i) t[i] = borrow ? t[i] : s[i];
  }

  friend Fp operator+(const Fp& a, const Fp& b) {
    Fp r;
    unsigned char carry = 0;
    for (size_t i = 0; i < N; ++i)
      carry = _addcarry_u64(carry, a.v[i], b.v[i], reinterpret_cast<unsigned long long*>(&r.v[i]));
    reduce_once(r.v);  // p < 2^(64N−1), so a + b never carries out of 64N bits
    return r;
  }
  friend Fp operator-(const Fp& a, const Fp& b) {
    Fp r;
    unsigned char borrow = 0;
    for (size_t i = 0; i < N; ++i)
      borrow = _subborrow_u64(borrow, a.v[i], b.v[i], reinterpret_cast<unsigned long long*>(&r.v[i]));
    // Add p back when it borrowed, without a branch (the sign is data-dependent).
    const uint64_t mask = 0 - uint64_t(borrow);
    unsigned char carry = 0;
    for (size_t i = 0; i < N; ++i)
      carry = _addcarry_u64(carry, r.v[i], P::kModulus[i] & mask, reinterpret_cast<unsigned long long*>(&r.v[i]));
    return r;
  }
  Fp operator-() const { return is_zero() ? *this : zero() - *this; }
  Fp dbl() const { return *this + *this; }

  friend Fp operator*(const Fp& a, const Fp& b) {
    if constexpr (N == 4) {
      uint64_t t[4];
      mont_mul_mulx<P>(t, a.v, b.v);
      reduce_once(t);
      return Fp{{t[0], t[1], t[2], t[3]}};
    } else {
      return mul_portable(a, b);
    }
  }

  /// The same product in portable C++ (unsigned __int128): the reference the
  /// assembly is tested against, and the multiplication of fields other than
  /// 4 limbs. Each round i: t = (t + a·b[i] + m·p) / 2^64 with
  /// m = (t + a·b[i])₀·kInv, so that the division is exact.
  static Fp mul_portable(const Fp& a, const Fp& b) {
    uint64_t t[N] = {};
    for (size_t i = 0; i < N; ++i) {
      uint64_t A, C, x;
      mac(A, t[0], a.v[0], b.v[i], t[0], 0);
      const uint64_t m = t[0] * P::kInv;
      C = uint64_t(((u128)m * P::kModulus[0] + t[0]) >> 64);
      for (size_t j = 1; j < N; ++j) {
        mac(A, x, a.v[j], b.v[i], t[j], A);
        mac(C, t[j - 1], m, P::kModulus[j], x, C);
      }
      t[N - 1] = C + A;
    }
    reduce_once(t);
    Fp r;
    for (size_t i = 0; i < N; ++i) r.v[i] = t[i];
    return r;
  }

  /// hi:lo = a·b + c + d (never overflows 128 bits).
  static inline __attribute__((always_inline)) void mac(uint64_t& hi, uint64_t& lo, uint64_t a, uint64_t b,
                                                        uint64_t c, uint64_t d) {
    u128 t = (u128)a * b + c + d;
    lo = uint64_t(t);
    hi = uint64_t(t >> 64);
  }
  Fp& operator+=(const Fp& o) { return *this = *this + o; }
  Fp& operator-=(const Fp& o) { return *this = *this - o; }
  Fp& operator*=(const Fp& o) { return *this = *this * o; }
  Fp sqr() const { return *this * *this; }

  /// this^e for a canonical exponent e of any width (square-and-multiply,
  /// high bit first).
  /// The same for an exponent of the field's own width (also a braced list
  /// of limbs, which the template cannot deduce).
  Fp pow(const Int& e) const { return pow<N>(e); }
  template <size_t M>
  Fp pow(const Limbs<M>& e) const {
    Fp r = one();
    for (int i = int(64 * M) - 1; i >= 0; --i) {
      r = r.sqr();
      if ((e[i / 64] >> (i % 64)) & 1) r *= *this;
    }
    return r;
  }
  /// Multiplicative inverse; the inverse of 0 is 0. Constant time. 4 limbs
  /// (p < 2^256): safegcd (safegcd.hpp) on the Montgomery limbs a·R, whose
  /// integer inverse a⁻¹·R⁻¹ one product by R³ takes to a⁻¹·R; ~3× faster
  /// than Fermat. Other sizes: Fermat. Callers still invert in batches
  /// (batch_inverse) where many are wanted.
  Fp inv() const {
    if constexpr (N == 4) {
      static constexpr uint64_t kInv62 = safegcd::inverse_mod_2_62(P::kModulus[0]);
      Fp y;
      safegcd::inverse(v, P::kModulus, kInv62, y.v);
      const Fp r2 = from_limbs(P::kR2);
      return y * (r2 * r2);  // R²·R²·R⁻¹ = R³
    } else {
      return inv_fermat();
    }
  }
  /// The inverse by Fermat (x^(p−2)): about 1.5·64N multiplications; the
  /// reference inv() is tested and measured against.
  Fp inv_fermat() const {
    Int e;
    for (size_t i = 0; i < N; ++i) e[i] = P::kModulus[i];
    e[0] -= 2;  // p is odd and > 2: no borrow
    return pow(e);
  }

  /// p as an integer.
  static constexpr Int modulus() {
    Int m{};
    for (size_t i = 0; i < N; ++i) m[i] = P::kModulus[i];
    return m;
  }

 private:
  static constexpr Fp from_limbs(const uint64_t (&a)[N]) {
    Fp r{};
    for (size_t i = 0; i < N; ++i) r.v[i] = a[i];
    return r;
  }
};

/// True when x < the field's modulus (x canonical, as many limbs as the field).
template <class P, size_t M>
inline bool is_canonical(const Limbs<M>& x) {
  static_assert(M == sizeof(P::kModulus) / sizeof(uint64_t), "an integer of the field's width");
  for (int i = int(M) - 1; i >= 0; --i) {
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
