#!/usr/bin/env python3
"""A plain-integer reference for the BLS12-381 pairing (no third-party packages).

Written from the definitions, not from the C++ code's tower or formulas:
  * Fq12 is flat: Fq[w]/(w^12 - 2w^6 + 2). With xi = 1 + u and w^6 = xi,
    u = w^6 - 1 and u^2 = -1 give (w^6 - 1)^2 + 1 = w^12 - 2w^6 + 2 = 0.
    Inverses by the extended Euclidean algorithm on polynomials over Fq.
  * G2 lives on the M-type twist E': y^2 = x^3 + 4*xi and is untwisted into
    E(Fq12): y^2 = x^3 + 4 by psi(x', y') = (x'/w^2, y'/w^3).
  * The Miller loop is the optimal ate loop of BLS12 curves, f_{x,Q}(P) with
    the curve's parameter x = -0xd201000000010000 (draft-irtf-cfrg-pairing-
    friendly-curves-11 section 4.2.1; Vercauteren, "Optimal pairings", 2010):
    an affine chord-and-tangent loop over |x| in E(Fq12), then f_{x,Q} =
    1/f_{|x|,Q} (up to a vertical line, which the final exponentiation kills).
  * The final exponentiation is one power: (q^12 - 1)/r.
tower_from_flat / flat_from_tower convert to and from the tower the C++ code
(groth16/bls12_381_pairing.hpp), zkcrypto's bls12_381 and ffjavascript's
bls12381 use: Fq12 = Fq6[w]/(w^2 - v), Fq6 = Fq2[v]/(v^3 - (1 + u)).

`python3 tests/vectors/bls12_381_pairing_ref.py` runs the self-checks
(bilinearity, non-degeneracy, order r, the tower conversion): about a minute.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bn254_ref import Curve, Field  # noqa: E402 (curve-free helpers)
import bls12_381_ref as ref  # noqa: E402

Q, r = ref.Q, ref.r
BLS_X = -0xd201000000010000   # the curve's parameter: q = (x-1)^2 (x^4 - x^2 + 1)/3 + x, r = x^4 - x^2 + 1
FQ12_MOD_LOW = [2, 0, 0, 0, 0, 0, -2, 0, 0, 0, 0, 0]   # w^12 - 2w^6 + 2 below w^12

F12_ZERO = [0] * 12
F12_ONE = [1] + [0] * 11


def f12(coeffs):
    return [c % Q for c in coeffs]


def f12_add(a, b): return [(x + y) % Q for x, y in zip(a, b)]
def f12_sub(a, b): return [(x - y) % Q for x, y in zip(a, b)]
def f12_neg(a): return [(-x) % Q for x in a]
def f12_scal(a, k): return [(x * k) % Q for x in a]


def f12_mul(a, b):
    prod = [0] * 23
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                prod[i + j] += x * y
    for k in range(22, 11, -1):   # w^k = 2 w^(k-6) - 2 w^(k-12), from the top down
        c = prod[k]
        if c:
            prod[k] = 0
            prod[k - 6] += 2 * c
            prod[k - 12] -= 2 * c
    return [c % Q for c in prod[:12]]


def f12_sqr(a): return f12_mul(a, a)


def f12_pow(a, e):
    acc = F12_ONE
    for bit in bin(e)[2:]:
        acc = f12_sqr(acc)
        if bit == "1":
            acc = f12_mul(acc, a)
    return acc


def _deg(p):
    d = len(p) - 1
    while d >= 0 and p[d] % Q == 0:
        d -= 1
    return d


def _divmod(a, b):
    """Quotient and remainder of polynomials over Fq (lists, low first)."""
    a = [c % Q for c in a]
    db = _deg(b)
    inv_lead = pow(b[db], -1, Q)
    quot = [0] * max(1, len(a))
    for k in range(_deg(a), db - 1, -1):
        c = a[k] * inv_lead % Q
        if c:
            quot[k - db] = c
            for i in range(db + 1):
                a[k - db + i] = (a[k - db + i] - c * b[i]) % Q
    return quot, a


def _poly_mul(a, b):
    out = [0] * (len(a) + len(b))
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def f12_inv(a):
    """Extended Euclid: keeps s with s*a = rem (mod m) until rem is a constant."""
    if all(c % Q == 0 for c in a):
        raise ZeroDivisionError("inverse of zero")
    m = [c % Q for c in FQ12_MOD_LOW] + [1]
    r0, r1 = m, [c % Q for c in a]
    s0, s1 = [0], [1]
    while _deg(r1) > 0:
        quot, rem = _divmod(r0, r1)
        prod = _poly_mul(quot, s1)
        width = max(len(s0), len(prod))
        s_new = [((s0[i] if i < len(s0) else 0) - (prod[i] if i < len(prod) else 0)) % Q for i in range(width)]
        r0, r1, s0, s1 = r1, rem, s1, s_new
    _, s_red = _divmod(s1, m)
    c = pow(r1[0], -1, Q)
    inv = [x * c % Q for x in (s_red + [0] * 12)[:12]]
    assert f12_mul(inv, f12(a)) == F12_ONE
    return inv


FQ12 = Field(f12_add, f12_sub, f12_mul, f12_sqr, f12_neg, f12_inv, F12_ZERO, F12_ONE, f12_scal)
E12 = Curve(FQ12, f12([4] + [0] * 11), None, "E(Fq12)")

W = [0, 1] + [0] * 10
W_INV = f12_inv(W)


def fq2_to_f12(a):
    """a0 + a1 u with u = w^6 - 1."""
    out = [0] * 12
    out[0] = (a[0] - a[1]) % Q
    out[6] = a[1] % Q
    return out


def untwist(Qp):
    """psi: E'(Fq2) -> E(Fq12), (x', y') -> (x'/w^2, y'/w^3) (M-type twist)."""
    if Qp is None:
        return None
    w2i = f12_sqr(W_INV)
    w3i = f12_mul(w2i, W_INV)
    return (f12_mul(fq2_to_f12(Qp[0]), w2i), f12_mul(fq2_to_f12(Qp[1]), w3i))


def g1_to_e12(P):
    return None if P is None else (f12([P[0]] + [0] * 11), f12([P[1]] + [0] * 11))


def _line(A, B, T):
    """The line through A and B (tangent when A == B) evaluated at T; a vertical
    line gives x_T - x_A. All points affine on E(Fq12), none infinity."""
    (x1, y1), (x2, y2), (xt, yt) = A, B, T
    if x1 != x2:
        m = f12_mul(f12_sub(y2, y1), f12_inv(f12_sub(x2, x1)))
    elif y1 == y2:
        m = f12_mul(f12_scal(f12_sqr(x1), 3), f12_inv(f12_scal(y1, 2)))
    else:
        return f12_sub(xt, x1)
    return f12_sub(f12_mul(m, f12_sub(xt, x1)), f12_sub(yt, y1))


def miller_loop(Pe, Qe):
    """f_{x,Q}(P) for the negative x: 1/f_{|x|,Q}(P)."""
    R, f = Qe, F12_ONE
    for bit in bin(-BLS_X)[3:]:
        f = f12_mul(f12_sqr(f), _line(R, R, Pe))
        R = E12.double(R)
        if bit == "1":
            f = f12_mul(f, _line(R, Qe, Pe))
            R = E12.add(R, Qe)
    assert R == E12.mul(Qe, -BLS_X)
    return f12_inv(f)


FINAL_EXP = (Q ** 12 - 1) // r


def final_exp(f):
    return f12_pow(f, FINAL_EXP)


def pairing(P, Qp):
    """e(P, Q) for P in G1 (affine over Fq), Q in G2 (affine over Fq2); flat Fq12."""
    if P is None or Qp is None:
        return F12_ONE
    return final_exp(miller_loop(g1_to_e12(P), untwist(Qp)))


def tower_from_flat(a):
    """Flat Fq12 -> the 12 Fq coordinates of the tower, in the order
    c0.c0.c0, c0.c0.c1, c0.c1.c0, ..., c1.c2.c1 (c_j.c_i = the Fq2 coefficient
    of v^i w^j = w^(2i+j), each written c0 c1): (a + b u) w^k with u = w^6 - 1
    is (a - b) w^k + b w^(k+6), so a = f_k + f_(k+6), b = f_(k+6)."""
    out = []
    for j in (0, 1):
        for i in (0, 1, 2):
            k = 2 * i + j
            out += [(a[k] + a[k + 6]) % Q, a[k + 6] % Q]
    return out


def flat_from_tower(t):
    f = [0] * 12
    n = 0
    for j in (0, 1):
        for i in (0, 1, 2):
            k = 2 * i + j
            a, b = t[n], t[n + 1]
            n += 2
            f[k] = (a - b) % Q
            f[k + 6] = b % Q
    return f


def fq_sqrt(a):
    """A square root in Fq (q = 3 mod 4), or None."""
    s = pow(a, (Q + 1) // 4, Q)
    return s if s * s % Q == a % Q else None


def fq2_sqrt(a):
    """A square root in Fq2 by the norm method, or None."""
    if a == (0, 0):
        return (0, 0)
    n = fq_sqrt((a[0] * a[0] + a[1] * a[1]) % Q)
    if n is None:
        return None
    half = pow(2, -1, Q)
    for cand in ((a[0] + n) * half % Q, (a[0] - n) * half % Q):
        c0 = fq_sqrt(cand)
        if c0:
            c1 = a[1] * pow(2 * c0, -1, Q) % Q
            if ref.fq2_sqr((c0, c1)) == a:
                return (c0, c1)
    return None


def twist_point_from_x(x):
    """A point of E'(Fq2) with this x (any subgroup), or None."""
    y = fq2_sqrt(ref.fq2_add(ref.fq2_mul(ref.fq2_sqr(x), x), ref.G2_B))
    return None if y is None else (x, y)


def pairing_self_check():
    """Bilinearity, non-degeneracy, order r, the tower conversion (about a minute)."""
    x = BLS_X
    assert r == x ** 4 - x ** 2 + 1 and Q == (x - 1) ** 2 * (x ** 4 - x ** 2 + 1) // 3 + x
    assert f12_sqr(fq2_to_f12((0, 1))) == f12([-1] + [0] * 11)       # u^2 = -1
    assert f12_pow(W, 6) == fq2_to_f12((1, 1))                        # w^6 = xi
    g1, g2 = ref.G1_GEN, ref.G2_GEN
    assert E12.on_curve(untwist(g2)) and E12.on_curve(g1_to_e12(g1))
    e = pairing(g1, g2)
    assert e != F12_ONE
    assert f12_pow(e, r) == F12_ONE
    assert pairing(ref.G1.mul(g1, 2), g2) == f12_sqr(e)
    assert pairing(g1, ref.G2.mul(g2, 3)) == f12_mul(f12_sqr(e), e)
    assert pairing(ref.G1.neg(g1), g2) == f12_inv(e)
    assert flat_from_tower(tower_from_flat(e)) == e
    return True


if __name__ == "__main__":
    ref.self_check()
    pairing_self_check()
    print("bls12_381_pairing_ref: self-checks passed")
