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

/// True for the operations computed on canonical integers (relations,
/// booleans, bitwise, shifts, integer division): the evaluator keeps their
/// operands and results in canonical form, not Montgomery form.
constexpr bool canonical_op(Op op) {
  switch (op) {
    case Op::kIdiv: case Op::kMod: case Op::kEq: case Op::kNeq: case Op::kLt: case Op::kGt: case Op::kLeq:
    case Op::kGeq: case Op::kLand: case Op::kLor: case Op::kLnot: case Op::kBand: case Op::kBor: case Op::kBxor:
    case Op::kBnot: case Op::kShl: case Op::kShr:
      return true;
    default:
      return false;
  }
}

/// circom's operations over the field F (an Fp<P> of 4 limbs). canonical()
/// computes the canonical_op ones on canonical residues; apply() computes
/// any operation of arity 1 or 2 on values in Montgomery form. `fault` is
/// set (never cleared) by an integer division or modulo by zero.
template <class F>
struct FieldOps {
  using I = Limbs<4>;
  struct Consts {
    I p, half, mask;
    unsigned bits;
    Consts() : p(F::modulus()), half(u256::shr(p, 1)), mask{}, bits(u256::bits(p)) {
      for (unsigned i = 0; i < bits; ++i) mask[i / 64] |= uint64_t(1) << (i % 64);
    }
  };
  static const Consts& k() {
    static const Consts c;
    return c;
  }
  static I modulus() { return k().p; }
  static bool negative(const I& x) { return u256::cmp(x, k().half) > 0; }  // above (p − 1)/2
  static I reduce(I x) {  // x < 2^bits < 2p
    if (u256::cmp(x, k().p) >= 0) x = u256::sub(x, k().p);
    return x;
  }
  static I from_bool(bool b) { return I{uint64_t(b), 0, 0, 0}; }
  /// −1, 0 or 1: val(x) against val(y).
  static int signed_cmp(const I& x, const I& y) {
    const bool nx = negative(x), ny = negative(y);
    if (nx != ny) return nx ? -1 : 1;
    return u256::cmp(x, y);  // same sign: residues order as the values
  }
  static I shift(const I& x, I s, bool left) {
    if (negative(s)) {
      s = u256::sub(k().p, s);
      left = !left;
    }
    if (s[1] | s[2] | s[3] || s[0] >= k().bits) return I{};
    if (!left) return u256::shr(x, unsigned(s[0]));
    I r = u256::shl(x, unsigned(s[0]));
    for (int i = 0; i < 4; ++i) r[i] &= k().mask[i];
    return reduce(r);
  }
  static bool nonzero(const I& x) { return !u256::is_zero(x); }

  /// A canonical_op on canonical residues (y ignored for arity 1).
  static I canonical(Op op, const I& x, const I& y, bool& fault) {
    switch (op) {
      case Op::kEq: return from_bool(x == y);
      case Op::kNeq: return from_bool(x != y);
      case Op::kLt: return from_bool(signed_cmp(x, y) < 0);
      case Op::kGt: return from_bool(signed_cmp(x, y) > 0);
      case Op::kLeq: return from_bool(signed_cmp(x, y) <= 0);
      case Op::kGeq: return from_bool(signed_cmp(x, y) >= 0);
      case Op::kLand: return from_bool(nonzero(x) && nonzero(y));
      case Op::kLor: return from_bool(nonzero(x) || nonzero(y));
      case Op::kLnot: return from_bool(!nonzero(x));
      case Op::kBand: return I{x[0] & y[0], x[1] & y[1], x[2] & y[2], x[3] & y[3]};
      case Op::kBor: return reduce(I{x[0] | y[0], x[1] | y[1], x[2] | y[2], x[3] | y[3]});
      case Op::kBxor: return reduce(I{x[0] ^ y[0], x[1] ^ y[1], x[2] ^ y[2], x[3] ^ y[3]});
      case Op::kBnot: {
        const I& m = k().mask;
        return reduce(I{~x[0] & m[0], ~x[1] & m[1], ~x[2] & m[2], ~x[3] & m[3]});
      }
      case Op::kShl: return shift(x, y, true);
      case Op::kShr: return shift(x, y, false);
      case Op::kIdiv:
      case Op::kMod: {
        if (u256::is_zero(y)) {
          fault = true;
          return I{};
        }
        I q, r;
        u256::divmod(x, y, q, r);
        return op == Op::kMod ? r : q;
      }
      default: return I{};
    }
  }

  /// One operation of arity 1 or 2 (b ignored for arity 1) on Montgomery
  /// values; kSelect and the value-less operations are the evaluator's.
  static F apply(Op op, const F& a, const F& b, bool& fault) {
    if (canonical_op(op)) return F::from_int(canonical(op, a.to_int(), b.to_int(), fault));
    switch (op) {
      case Op::kAdd: return a + b;
      case Op::kSub: return a - b;
      case Op::kMul: return a * b;
      case Op::kDiv: return a * b.inv();
      case Op::kPow: return a.pow(b.to_int());
      case Op::kNeg: return -a;
      case Op::kInv: return a.inv();
      default: return F::zero();
    }
  }
};

}  // namespace zkfarm::witgen::graph
