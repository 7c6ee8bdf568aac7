#pragma once
// Constant-time modular inversion for moduli below 2^256: Bernstein and
// Yang's safegcd ("Fast constant-time gcd computation and modular
// inversion", TCHES 2019), in the shape libsecp256k1's modinv64 gave it
// (Wuille's "half-delta" divsteps; doc/safegcd_implementation.md there):
//
//   f = m, g = x, d = 0, e = 1, zeta = −1; ten rounds of
//     59 divsteps on the low 64 bits of f and g only, gathered into a 2×2
//     matrix T scaled by 2^62;
//     [f, g] = T·[f, g] / 2^62 (exact);
//     [d, e] = T·[d, e] / 2^62 mod m (m's multiple added to make it exact);
//   then f = ±1 and x⁻¹ = ±d mod m.
//
// 590 half-delta divsteps take any odd modulus below 2^256 and any x < m to
// g = 0 (the bound computed there); extra ones change nothing. Every
// branch and index is independent of x: witness values are secret, and
// Fermat's x^(m−2) costs ~3× more. Numbers are five signed 62-bit limbs
// (Σ v[i]·2^(62i)); limbs 0–3 in [0, 2^62) after each update, limb 4 signed.
#include <cstdint>

namespace zkfarm::safegcd {

/// A signed integer of five 62-bit limbs (the top one signed).
struct S62 {
  int64_t v[5];
};

/// The transition matrix of 59 divsteps, scaled by 2^62.
struct Trans {
  int64_t u, v, q, r;
};

inline constexpr uint64_t kM62 = UINT64_MAX >> 2;

/// 256 bits (four little-endian limbs) as five 62-bit limbs.
constexpr S62 to_s62(const uint64_t a[4]) {
  return S62{{int64_t(a[0] & kM62), int64_t((a[0] >> 62 | a[1] << 2) & kM62), int64_t((a[1] >> 60 | a[2] << 4) & kM62),
              int64_t((a[2] >> 58 | a[3] << 6) & kM62), int64_t(a[3] >> 56)}};
}

/// Back to four 64-bit limbs; `s` in [0, 2^256) with limbs 0–3 in [0, 2^62).
inline void from_s62(const S62& s, uint64_t a[4]) {
  const uint64_t v0 = uint64_t(s.v[0]), v1 = uint64_t(s.v[1]), v2 = uint64_t(s.v[2]), v3 = uint64_t(s.v[3]),
                 v4 = uint64_t(s.v[4]);
  a[0] = v0 | v1 << 62;
  a[1] = v1 >> 2 | v2 << 60;
  a[2] = v2 >> 4 | v3 << 58;
  a[3] = v3 >> 6 | v4 << 56;
}

/// m⁻¹ mod 2^62 for odd m (Newton's iteration doubles the correct bits: 1, 2, 4 … 64).
constexpr uint64_t inverse_mod_2_62(uint64_t m0) {
  uint64_t x = 1;
  for (int i = 0; i < 6; ++i) x *= 2 - m0 * x;
  return x & kM62;
}

/// 59 half-delta divsteps on the low bits f0, g0 (f odd); returns the new zeta.
inline int64_t divsteps_59(int64_t zeta, uint64_t f0, uint64_t g0, Trans& t) {
  // The matrix starts as the identity times 8: 59 doublings bring it to 2^62.
  // Held unsigned (mod 2^64) so the left shifts are defined; in range as signed.
  uint64_t u = 8, v = 0, q = 0, r = 8, f = f0, g = g0;
  for (int i = 3; i < 62; ++i) {
    // volatile: keeps the compiler from turning the masks back into branches.
    volatile uint64_t c1 = uint64_t(zeta >> 63), c2 = g & 1;
    uint64_t neg = c1, odd = 0 - uint64_t(c2);
    // (zeta < 0 ? −f : f) added to g when g is odd; the same for the matrix rows.
    const uint64_t x = (f ^ neg) - neg, y = (u ^ neg) - neg, z = (v ^ neg) - neg;
    g += x & odd;
    q += y & odd;
    r += z & odd;
    const uint64_t both = neg & odd;  // zeta < 0 and g odd: f and g swap (f takes the old g)
    zeta = int64_t((uint64_t(zeta) ^ both) - 1);  // −zeta − 2, or zeta − 1
    f += g & both;
    u += q & both;
    v += r & both;
    g >>= 1;
    u <<= 1;
    v <<= 1;
  }
  t = {int64_t(u), int64_t(v), int64_t(q), int64_t(r)};
  return zeta;
}

/// [f, g] = T·[f, g] / 2^62 (the low 62 bits are zero by construction).
inline void update_fg(S62& f, S62& g, const Trans& t) {
  using i128 = __int128;
  i128 cf = i128(t.u) * f.v[0] + i128(t.v) * g.v[0];
  i128 cg = i128(t.q) * f.v[0] + i128(t.r) * g.v[0];
  cf >>= 62;
  cg >>= 62;
  for (int i = 1; i < 5; ++i) {
    cf += i128(t.u) * f.v[i] + i128(t.v) * g.v[i];
    cg += i128(t.q) * f.v[i] + i128(t.r) * g.v[i];
    f.v[i - 1] = int64_t(uint64_t(cf) & kM62);
    g.v[i - 1] = int64_t(uint64_t(cg) & kM62);
    cf >>= 62;
    cg >>= 62;
  }
  f.v[4] = int64_t(cf);
  g.v[4] = int64_t(cg);
}

/// [d, e] = (T·[d, e] + m·[md, me]) / 2^62, md and me chosen to make the
/// division exact and to keep d, e in (−2m, m).
inline void update_de(S62& d, S62& e, const Trans& t, const S62& m, uint64_t m_inv62) {
  using i128 = __int128;
  const int64_t sd = d.v[4] >> 63, se = e.v[4] >> 63;  // all ones when negative
  int64_t md = (t.u & sd) + (t.v & se), me = (t.q & sd) + (t.r & se);
  i128 cd = i128(t.u) * d.v[0] + i128(t.v) * e.v[0];
  i128 ce = i128(t.q) * d.v[0] + i128(t.r) * e.v[0];
  md -= int64_t((m_inv62 * uint64_t(cd) + uint64_t(md)) & kM62);
  me -= int64_t((m_inv62 * uint64_t(ce) + uint64_t(me)) & kM62);
  cd += i128(m.v[0]) * md;
  ce += i128(m.v[0]) * me;
  cd >>= 62;
  ce >>= 62;
  for (int i = 1; i < 5; ++i) {
    cd += i128(t.u) * d.v[i] + i128(t.v) * e.v[i] + i128(m.v[i]) * md;
    ce += i128(t.q) * d.v[i] + i128(t.r) * e.v[i] + i128(m.v[i]) * me;
    d.v[i - 1] = int64_t(uint64_t(cd) & kM62);
    e.v[i - 1] = int64_t(uint64_t(ce) & kM62);
    cd >>= 62;
    ce >>= 62;
  }
  d.v[4] = int64_t(cd);
  e.v[4] = int64_t(ce);
}

/// d from (−2m, m) to [0, m), negated first when `sign` is negative.
inline void normalize(S62& d, int64_t sign, const S62& m) {
  auto add_m_if_negative = [&] {
    const int64_t c = d.v[4] >> 63;
    for (int i = 0; i < 5; ++i) d.v[i] += m.v[i] & c;
  };
  auto carry = [&] {
    for (int i = 0; i < 4; ++i) {
      d.v[i + 1] += d.v[i] >> 62;  // arithmetic shift: a negative limb borrows
      d.v[i] &= int64_t(kM62);
    }
  };
  add_m_if_negative();  // (−2m, m) -> (−m, m)
  const int64_t neg = sign >> 63;
  for (int i = 0; i < 5; ++i) d.v[i] = (d.v[i] ^ neg) - neg;
  carry();
  add_m_if_negative();  // (−m, m) -> [0, m)
  carry();
}

/// out = x⁻¹ mod m for x < m (0 for x = 0); m odd, below 2^256, four
/// little-endian limbs; `m_inv62` = inverse_mod_2_62(m[0]).
inline void inverse(const uint64_t x[4], const uint64_t m_limbs[4], uint64_t m_inv62, uint64_t out[4]) {
  const S62 m = to_s62(m_limbs);
  S62 d{{0, 0, 0, 0, 0}}, e{{1, 0, 0, 0, 0}}, f = m, g = to_s62(x);
  int64_t zeta = -1;
  for (int round = 0; round < 10; ++round) {
    Trans t;
    zeta = divsteps_59(zeta, uint64_t(f.v[0]), uint64_t(g.v[0]), t);
    update_de(d, e, t, m, m_inv62);
    update_fg(f, g, t);
  }
  normalize(d, f.v[4], m);  // f = ±1: its sign is its top limb's
  from_s62(d, out);
}

}  // namespace zkfarm::safegcd
