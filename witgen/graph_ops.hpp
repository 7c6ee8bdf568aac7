#pragma once
// The meaning of circom's field operations, one place: what a witness graph's
// nodes compute (graph_eval.cpp) and what the graph recorder folds when every
// operand is a constant (graph_recorder.cpp, compiled per circuit). The
// semantics are circom's (docs.circom.io, "Basic operators"; circom's
// generated fr.asm / fr.cpp), on canonical residues x in [0, p):
//   arithmetic   + - * over F_p; a / b = a·b⁻¹ with 0⁻¹ = 0 (GMP's
//                mpz_invert leaves 0 there, as circom's fr.cpp relies on);
//                a \ b = floor(a / b) and a % b on the integers (b = 0: a
//                fault of the input, circom's native code dies of SIGFPE);
//                a ** b = a^b mod p (0^0 = 1)
//   relations    == != on residues; < > <= >= on signed values:
//                val(x) = x − p when x > (p−1)/2, else x
//   booleans     && || ! take any nonzero residue as true, give 0 or 1
//   bitwise      & | ^ on residues, ~x = (~x & mask); mask = 2^b − 1 with b
//                the bits of p; a result ≥ p is reduced (one subtraction)
//   shifts       x >> k = x / 2^k and x << k = (x·2^k & mask) mod p for
//                0 ≤ k ≤ (p−1)/2 (k ≥ b gives 0); for larger k (a "negative"
//                shift, p − k) the other way round
// The build-time check against the circuit's own generator (graph_build.cpp)
// holds every graph to these, byte for byte.
#include <cstdint>

#include "groth16/field.hpp"

namespace zkfarm::witgen::graph {

/// A node's operation. The numbers are the graph file's (graph_format.hpp):
/// never renumber, only add.
enum class Op : uint8_t {
  kAdd = 1, kSub, kMul, kDiv, kIdiv, kMod, kPow, kNeg, kInv,
  kEq, kNeq, kLt, kGt, kLeq, kGeq, kLand, kLor, kLnot,
  kBand, kBor, kBxor, kBnot, kShl, kShr,
  kSelect,    ///< (c, a, b): a when c ≠ 0, else b
  kAssert,    ///< (path, cond): the input fails when path ≠ 0 and cond = 0; no value
  kLogValue,  ///< (path, v): appends v's decimal to the input's log when path ≠ 0; no value
  kLogText,   ///< (path, string index): appends the text; no value
  kLast = kLogText,
};

/// Operands an operation reads (1, 2 or 3).
constexpr int arity(Op op) {
  switch (op) {
    case Op::kNeg: case Op::kInv: case Op::kLnot: case Op::kBnot: return 1;
    case Op::kSelect: return 3;
    default: return 2;
  }
}
/// True for the operations that yield a value other nodes may read.
constexpr bool has_value(Op op) { return op != Op::kAssert && op != Op::kLogValue && op != Op::kLogText; }

/// Canonical-integer helpers over 4 limbs (both scalar fields are 4 limbs).
namespace u256 {
using I = Limbs<4>;
inline int cmp(const I& a, const I& b) {
  for (int i = 3; i >= 0; --i)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}
inline I sub(const I& a, const I& b) {
  I r;
  unsigned char br = 0;
  for (int i = 0; i < 4; ++i) br = _subborrow_u64(br, a[i], b[i], reinterpret_cast<unsigned long long*>(&r[i]));
  return r;
}
inline bool is_zero(const I& a) { return (a[0] | a[1] | a[2] | a[3]) == 0; }
inline I shr(const I& a, unsigned k) {
  I r{};
  if (k >= 256) return r;
  const unsigned w = k / 64, s = k % 64;
  for (unsigned i = 0; i + w < 4; ++i) {
    r[i] = a[i + w] >> s;
    if (s && i + w + 1 < 4) r[i] |= a[i + w + 1] << (64 - s);
  }
  return r;
}
inline I shl(const I& a, unsigned k) {
  I r{};
  if (k >= 256) return r;
  const unsigned w = k / 64, s = k % 64;
  for (unsigned i = w; i < 4; ++i) {
    r[i] = a[i - w] << s;
    if (s && i > w) r[i] |= a[i - w - 1] >> (64 - s);
  }
  return r;
}
inline unsigned bits(const I& a) {
  for (int i = 3; i >= 0; --i)
    if (a[i]) return unsigned(64 * i + 64 - __builtin_clzll(a[i]));
  return 0;
}
/// q = floor(a / d), r = a mod d for d ≠ 0 (binary long division: these
/// operations are rare in circuits).
inline void divmod(const I& a, const I& d, I& q, I& r) {
  q = I{};
  r = I{};
  for (int i = int(bits(a)) - 1; i >= 0; --i) {
    r = shl(r, 1);
    r[0] |= (a[i / 64] >> (i % 64)) & 1;
    if (cmp(r, d) >= 0) {
      r = sub(r, d);
      q[i / 64] |= uint64_t(1) << (i % 64);
    }
  }
}
}  // namespace u256

/// circom's operations over the field F (an Fp<P> of 4 limbs), on values in
/// Montgomery form. `fault` is set (never cleared) by an integer division or
/// modulo by zero.
template <class F>
struct FieldOps {
  using I = Limbs<4>;
  static I modulus() { return F::modulus(); }
  static I half() { return u256::shr(modulus(), 1); }  // (p − 1) / 2, p odd
  static unsigned nbits() { return u256::bits(modulus()); }
  static I mask() {
    const unsigned b = nbits();
    I m{};
    for (unsigned i = 0; i < b; ++i) m[i / 64] |= uint64_t(1) << (i % 64);
    return m;
  }
  static F from_bool(bool b) { return b ? F::one() : F::zero(); }
  static F reduce_from_int(I x) {  // x < 2^b < 2p
    if (u256::cmp(x, modulus()) >= 0) x = u256::sub(x, modulus());
    return F::from_int(x);
  }
  static bool negative(const I& x) { return u256::cmp(x, half()) > 0; }
  /// −1, 0 or 1: val(a) against val(b).
  static int signed_cmp(const F& a, const F& b) {
    const I x = a.to_int(), y = b.to_int();
    const bool nx = negative(x), ny = negative(y);
    if (nx != ny) return nx ? -1 : 1;
    return u256::cmp(x, y);  // same sign: residues order as the values
  }
  static F shift(const F& a, const F& b, bool left) {
    I k = b.to_int();
    if (negative(k)) {
      k = u256::sub(modulus(), k);
      left = !left;
    }
    const I x = a.to_int();
    if (k[1] | k[2] | k[3] || k[0] >= nbits()) return F::zero();
    const unsigned s = unsigned(k[0]);
    if (!left) return F::from_int(u256::shr(x, s));
    I r = u256::shl(x, s);
    const I m = mask();
    for (int i = 0; i < 4; ++i) r[i] &= m[i];
    return reduce_from_int(r);
  }
  static F bitwise(Op op, const F& a, const F& b) {
    const I x = a.to_int(), y = b.to_int();
    I r;
    for (int i = 0; i < 4; ++i)
      r[i] = op == Op::kBand ? x[i] & y[i] : op == Op::kBor ? x[i] | y[i] : x[i] ^ y[i];
    return reduce_from_int(r);
  }
  static F bnot(const F& a) {
    const I x = a.to_int(), m = mask();
    I r;
    for (int i = 0; i < 4; ++i) r[i] = ~x[i] & m[i];
    return reduce_from_int(r);
  }
  static F int_div(const F& a, const F& b, bool mod, bool& fault) {
    const I y = b.to_int();
    if (u256::is_zero(y)) {
      fault = true;
      return F::zero();
    }
    I q, r;
    u256::divmod(a.to_int(), y, q, r);
    return F::from_int(mod ? r : q);
  }

  /// One operation of arity 1 or 2 (b ignored for arity 1); kSelect and the
  /// value-less operations are the evaluator's.
  static F apply(Op op, const F& a, const F& b, bool& fault) {
    switch (op) {
      case Op::kAdd: return a + b;
      case Op::kSub: return a - b;
      case Op::kMul: return a * b;
      case Op::kDiv: return a * b.inv();
      case Op::kIdiv: return int_div(a, b, false, fault);
      case Op::kMod: return int_div(a, b, true, fault);
      case Op::kPow: return a.pow(b.to_int());
      case Op::kNeg: return -a;
      case Op::kInv: return a.inv();
      case Op::kEq: return from_bool(a == b);
      case Op::kNeq: return from_bool(a != b);
      case Op::kLt: return from_bool(signed_cmp(a, b) < 0);
      case Op::kGt: return from_bool(signed_cmp(a, b) > 0);
      case Op::kLeq: return from_bool(signed_cmp(a, b) <= 0);
      case Op::kGeq: return from_bool(signed_cmp(a, b) >= 0);
      case Op::kLand: return from_bool(!a.is_zero() && !b.is_zero());
      case Op::kLor: return from_bool(!a.is_zero() || !b.is_zero());
      case Op::kLnot: return from_bool(a.is_zero());
      case Op::kBand: case Op::kBor: case Op::kBxor: return bitwise(op, a, b);
      case Op::kBnot: return bnot(a);
      case Op::kShl: return shift(a, b, true);
      case Op::kShr: return shift(a, b, false);
      default: return F::zero();
    }
  }
};

}  // namespace zkfarm::witgen::graph
