#!/usr/bin/env python3
"""Small, readable pure-Python reference for BN254 (alt_bn128) arithmetic.

Independent of the C++ code; used only to generate test vectors.
No third-party packages: plain Python integers only.

Conventions
  * Fq / Fr elements are ints in [0, p).
  * Fq2 elements are tuples (c0, c1) meaning c0 + c1*u, with u^2 = -1.
  * Curve points are affine tuples (x, y); None is the point at infinity.
"""

# ---------------------------------------------------------------- moduli
Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583
R_ORDER = 21888242871839275222246405745257275088548364400416034343698204186575808495617
r = R_ORDER
q = Q

# Montgomery radix used by 4x64-bit limb implementations.
MONT_R = 1 << 256


def to_mont(x, p):
    """Montgomery form of x modulo p: x * 2^256 mod p."""
    return (x * MONT_R) % p


def from_mont(xm, p):
    return (xm * pow(MONT_R, -1, p)) % p


# ---------------------------------------------------------------- prime fields
def f_add(a, b, p): return (a + b) % p
def f_sub(a, b, p): return (a - b) % p
def f_mul(a, b, p): return (a * b) % p
def f_sqr(a, p): return (a * a) % p
def f_neg(a, p): return (-a) % p


def f_inv(a, p):
    a %= p
    if a == 0:
        raise ZeroDivisionError("inverse of zero")
    return pow(a, p - 2, p)  # Fermat; p is prime


# Fq shorthands
def fq_add(a, b): return f_add(a, b, Q)
def fq_sub(a, b): return f_sub(a, b, Q)
def fq_mul(a, b): return f_mul(a, b, Q)
def fq_sqr(a): return f_sqr(a, Q)
def fq_neg(a): return f_neg(a, Q)
def fq_inv(a): return f_inv(a, Q)


# Fr shorthands
def fr_add(a, b): return f_add(a, b, r)
def fr_sub(a, b): return f_sub(a, b, r)
def fr_mul(a, b): return f_mul(a, b, r)
def fr_sqr(a): return f_sqr(a, r)
def fr_neg(a): return f_neg(a, r)
def fr_inv(a): return f_inv(a, r)


# ---------------------------------------------------------------- Fq2 = Fq[u]/(u^2+1)
FQ2_ZERO = (0, 0)
FQ2_ONE = (1, 0)


def fq2_add(a, b): return ((a[0] + b[0]) % Q, (a[1] + b[1]) % Q)
def fq2_sub(a, b): return ((a[0] - b[0]) % Q, (a[1] - b[1]) % Q)
def fq2_neg(a): return ((-a[0]) % Q, (-a[1]) % Q)


def fq2_mul(a, b):
    # (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + (a0 b1 + a1 b0) u
    return ((a[0] * b[0] - a[1] * b[1]) % Q,
            (a[0] * b[1] + a[1] * b[0]) % Q)


def fq2_sqr(a):
    return fq2_mul(a, a)


def fq2_inv(a):
    # 1/(a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2)
    n = (a[0] * a[0] + a[1] * a[1]) % Q
    ni = fq_inv(n)
    return ((a[0] * ni) % Q, (-a[1] * ni) % Q)


def fq2_scalar(a, k):
    return ((a[0] * k) % Q, (a[1] * k) % Q)


# ---------------------------------------------------------------- generic affine curve y^2 = x^3 + b
class Field:
    """Bundle of field operations so the curve code is written once."""

    def __init__(self, add, sub, mul, sqr, neg, inv, zero, one, scal):
        self.add, self.sub, self.mul, self.sqr = add, sub, mul, sqr
        self.neg, self.inv, self.zero, self.one, self.scal = neg, inv, zero, one, scal


FQ = Field(fq_add, fq_sub, fq_mul, fq_sqr, fq_neg, fq_inv, 0, 1,
           lambda a, k: (a * k) % Q)
FQ2 = Field(fq2_add, fq2_sub, fq2_mul, fq2_sqr, fq2_neg, fq2_inv,
            FQ2_ZERO, FQ2_ONE, fq2_scalar)


class Curve:
    def __init__(self, F, b, gen, name):
        self.F, self.b, self.gen, self.name = F, b, gen, name

    def on_curve(self, P):
        if P is None:
            return True
        F = self.F
        x, y = P
        return F.sqr(y) == F.add(F.mul(F.sqr(x), x), self.b)

    def neg(self, P):
        if P is None:
            return None
        return (P[0], self.F.neg(P[1]))

    def double(self, P):
        if P is None:
            return None
        F = self.F
        x, y = P
        if y == F.zero:          # 2-torsion (does not occur on BN254 G1/G2)
            return None
        lam = F.mul(F.scal(F.sqr(x), 3), F.inv(F.scal(y, 2)))   # 3x^2 / 2y
        x3 = F.sub(F.sqr(lam), F.scal(x, 2))
        y3 = F.sub(F.mul(lam, F.sub(x, x3)), y)
        return (x3, y3)

    def add(self, P, Qp):
        if P is None:
            return Qp
        if Qp is None:
            return P
        F = self.F
        x1, y1 = P
        x2, y2 = Qp
        if x1 == x2:
            if y1 == y2:
                return self.double(P)
            return None          # P + (-P)
        lam = F.mul(F.sub(y2, y1), F.inv(F.sub(x2, x1)))
        x3 = F.sub(F.sub(F.sqr(lam), x1), x2)
        y3 = F.sub(F.mul(lam, F.sub(x1, x3)), y1)
        return (x3, y3)

    def mul(self, P, k):
        """Left-to-right double-and-add on the integer k >= 0 (not reduced)."""
        if k < 0:
            return self.mul(self.neg(P), -k)
        acc = None
        for bit in bin(k)[2:]:
            acc = self.double(acc)
            if bit == "1":
                acc = self.add(acc, P)
        return acc


# G1: y^2 = x^3 + 3 over Fq, generator (1, 2)
G1_B = 3
G1_GEN = (1, 2)
G1 = Curve(FQ, G1_B, G1_GEN, "G1")

# G2 (sextic D-twist): y^2 = x^3 + 3/(9+u) over Fq2
G2_B = fq2_mul((3, 0), fq2_inv((9, 1)))
G2_GEN = (
    (10857046999023057135944570762232829481370756359578518086990519993285655852781,
     11559732032986387107991004021392285783925812861821192530917403151452391805634),
    (8495653923123431417604973247489272438418190587263600148770280649306958101930,
     4082367875863433681332203403145435568316851327593401208105741076214120093531),
)
G2 = Curve(FQ2, G2_B, G2_GEN, "G2")


def g1_add(P, Qp): return G1.add(P, Qp)
def g1_dbl(P): return G1.double(P)
def g1_neg(P): return G1.neg(P)
def g1_mul(P, k): return G1.mul(P, k)
def g2_add(P, Qp): return G2.add(P, Qp)
def g2_dbl(P): return G2.double(P)
def g2_neg(P): return G2.neg(P)
def g2_mul(P, k): return G2.mul(P, k)


# ---------------------------------------------------------------- Fr roots of unity (snarkjs / ffjavascript)
# ffjavascript (F1Field and WasmField1) pick nqr = smallest n >= 2 with
# n^((r-1)/2) == -1, which is 5 for BN254 Fr; s = 2-adicity = 28;
# w[s] = nqr^t, w[i] = w[i+1]^2.
FR_S = 28
FR_T = (r - 1) >> FR_S
FR_NQR = 5


def _compute_roots():
    w = [0] * (FR_S + 1)
    w[FR_S] = pow(FR_NQR, FR_T, r)
    for k in range(FR_S - 1, -1, -1):
        w[k] = (w[k + 1] * w[k + 1]) % r
    return w


FR_ROOTS = _compute_roots()

# ffjavascript 0.3.1 (node_modules/ffjavascript/src/wasm_field1.js line 49:
# `this.shift = this.mul(this.nqr, this.nqr)`; src/f1field.js line 55:
# `this.shift = this.square(this.nqr)`) -> shift = nqr^2 = 25.
# snarkjs 0.7.6 groth16_prove.js line 64 uses
# `inc = power == Fr.s ? Fr.shift : Fr.w[power+1]`.
FR_SHIFT = (FR_NQR * FR_NQR) % r


def fr_root(k):
    """Primitive 2^k-th root of unity as used by snarkjs (w[0] = 1)."""
    return FR_ROOTS[k]


def fr_coset_gen(k):
    """Generator of the odd coset used by snarkjs for a domain of size 2^k."""
    return FR_ROOTS[k + 1] if k < FR_S else FR_SHIFT


# ---------------------------------------------------------------- pairing (optimal ate)
# A deliberately plain reference, written from the definitions and not from
# the C++ code's tower or formulas:
#   * Fq12 is flat: Fq[w]/(w^12 - 18 w^6 + 82), elements are lists of 12 ints
#     (coefficient of w^k at index k), inverses by the extended Euclidean
#     algorithm on polynomials. u = w^6 - 9 embeds Fq2 (then u^2 = -1).
#   * G2 points are untwisted into E(Fq12) by psi(x, y) = (x w^2, y w^3), and
#     the Miller loop runs with the affine chord-and-tangent formulas of the
#     generic Curve class above, over E(Fq12): y^2 = x^3 + 3.
#   * e(P, Q) = f^((q^12 - 1)/r), f = f_{6x+2,Q}(P) * l_{[6x+2]Q, pi(Q)}(P)
#     * l_{[6x+2]Q + pi(Q), -pi^2(Q)}(P), the optimal ate pairing of
#     Vercauteren, "Optimal pairings" (IEEE Trans. Inf. Theory 2010), as in the
#     BN254 precompile of EIP-197 (and py_ecc's bn128 module).
# tower_from_flat / flat_from_tower convert to and from the representation the
# C++ code and snarkjs use: Fq12 = Fq6[w]/(w^2 - v), Fq6 = Fq2[v]/(v^3 - xi),
# xi = 9 + u, so v = w^2 and w^6 = xi.
BN_X = 4965661367192848881            # the BN parameter (q and r are polynomials in it)
ATE_LOOP = 6 * BN_X + 2
FQ12_MOD = [82, 0, 0, 0, 0, 0, -18, 0, 0, 0, 0, 0]   # w^12 = 18 w^6 - 82 (low coefficients)


def f12(coeffs):
    return [c % Q for c in coeffs]


F12_ZERO = [0] * 12
F12_ONE = [1] + [0] * 11


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
    # reduce with w^12 = 18 w^6 - 82, from the top down
    for k in range(22, 11, -1):
        c = prod[k]
        if c:
            prod[k] = 0
            prod[k - 6] += 18 * c
            prod[k - 12] -= 82 * c
    return [c % Q for c in prod[:12]]


def f12_sqr(a): return f12_mul(a, a)


def _poly_deg(p):
    d = len(p) - 1
    while d >= 0 and p[d] % Q == 0:
        d -= 1
    return d


def _poly_divmod(a, b):
    """Quotient and remainder of polynomials over Fq (lists, low first)."""
    a = [c % Q for c in a]
    db = _poly_deg(b)
    inv_lead = fq_inv(b[db])
    quot = [0] * max(1, len(a))
    for k in range(_poly_deg(a), db - 1, -1):
        c = (a[k] * inv_lead) % Q
        if c:
            quot[k - db] = c
            for i in range(db + 1):
                a[k - db + i] = (a[k - db + i] - c * b[i]) % Q
    return quot, a


def f12_inv(a):
    """Inverse in Fq[w]/(m(w)) by the extended Euclidean algorithm: keeps
    s with s * a = r (mod m) until r is a nonzero constant."""
    if all(c % Q == 0 for c in a):
        raise ZeroDivisionError("inverse of zero")
    m = [c % Q for c in FQ12_MOD] + [1]      # w^12 - 18 w^6 + 82, low first
    r0, r1 = m, [c % Q for c in a]
    s0, s1 = [0], [1]
    while _poly_deg(r1) > 0:
        quot, rem = _poly_divmod(r0, r1)
        prod = [0] * (len(quot) + len(s1))
        for i, x in enumerate(quot):
            for j, y in enumerate(s1):
                prod[i + j] += x * y
        width = max(len(s0), len(prod))
        s_new = [((s0[i] if i < len(s0) else 0) - prod[i] if i < len(prod) else s0[i]) % Q
                 for i in range(width)]
        r0, r1, s0, s1 = r1, rem, s1, s_new
    _, s_red = _poly_divmod(s1, m)           # degree below 12
    c = fq_inv(r1[0])
    inv = [(x * c) % Q for x in (s_red + [0] * 12)[:12]]
    assert f12_mul(inv, [x % Q for x in a]) == F12_ONE
    return inv


def f12_pow(a, e):
    acc = F12_ONE
    for bit in bin(e)[2:]:
        acc = f12_sqr(acc)
        if bit == "1":
            acc = f12_mul(acc, a)
    return acc


FQ12 = Field(f12_add, f12_sub, f12_mul, f12_sqr, f12_neg, f12_inv,
             F12_ZERO, F12_ONE, f12_scal)
E12 = Curve(FQ12, f12([3] + [0] * 11), None, "E(Fq12)")


def fq2_to_f12(a):
    """a0 + a1 u with u = w^6 - 9."""
    out = [0] * 12
    out[0] = (a[0] - 9 * a[1]) % Q
    out[6] = a[1] % Q
    return out


def untwist(Qp):
    """psi: E'(Fq2) -> E(Fq12), (x, y) -> (x w^2, y w^3)."""
    if Qp is None:
        return None
    x, y = fq2_to_f12(Qp[0]), fq2_to_f12(Qp[1])
    w2 = [0, 0, 1] + [0] * 9
    w3 = [0, 0, 0, 1] + [0] * 8
    return (f12_mul(x, w2), f12_mul(y, w3))


def g1_to_e12(P):
    return None if P is None else (f12([P[0]] + [0] * 11), f12([P[1]] + [0] * 11))


def _line(A, B, T):
    """The line through A and B (tangent when A == B) evaluated at T; vertical
    lines give x_T - x_A. All points affine on E(Fq12), none infinity."""
    (x1, y1), (x2, y2), (xt, yt) = A, B, T
    if x1 != x2:
        m = f12_mul(f12_sub(y2, y1), f12_inv(f12_sub(x2, x1)))
    elif y1 == y2:
        m = f12_mul(f12_scal(f12_sqr(x1), 3), f12_inv(f12_scal(y1, 2)))
    else:
        return f12_sub(xt, x1)
    return f12_sub(f12_mul(m, f12_sub(xt, x1)), f12_sub(yt, y1))


def frobenius_point(A):
    return (f12_pow(A[0], Q), f12_pow(A[1], Q))


def miller_loop(Pe, Qe):
    """f_{6x+2,Q}(P) times the two Frobenius lines (no final exponentiation)."""
    R, f = Qe, F12_ONE
    for bit in bin(ATE_LOOP)[3:]:
        f = f12_mul(f12_sqr(f), _line(R, R, Pe))
        R = E12.double(R)
        if bit == "1":
            f = f12_mul(f, _line(R, Qe, Pe))
            R = E12.add(R, Qe)
    Q1 = frobenius_point(Qe)
    nQ2 = E12.neg(frobenius_point(Q1))
    f = f12_mul(f, _line(R, Q1, Pe))
    R = E12.add(R, Q1)
    f = f12_mul(f, _line(R, nQ2, Pe))
    return f


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
    c0.c0.c0, c0.c0.c1, c0.c1.c0, ..., c1.c2.c1 (c_j.c_i = coefficient of v^i w^j
    in Fq2, each written c0 c1): sum_k (a_k + b_k u) w^k with k = 2i + j,
    a_k = f_k + 9 f_(k+6), b_k = f_(k+6)."""
    out = []
    for j in (0, 1):
        for i in (0, 1, 2):
            k = 2 * i + j
            out += [(a[k] + 9 * a[k + 6]) % Q, a[k + 6] % Q]
    return out


def flat_from_tower(t):
    f = [0] * 12
    n = 0
    for j in (0, 1):
        for i in (0, 1, 2):
            k = 2 * i + j
            a, b = t[n], t[n + 1]
            n += 2
            f[k] = (a - 9 * b) % Q
            f[k + 6] = b % Q
    return f


def fq_sqrt(a):
    """A square root in Fq (q = 3 mod 4), or None."""
    s = pow(a, (Q + 1) // 4, Q)
    return s if (s * s) % Q == a % Q else None


def fq2_sqrt(a):
    """A square root in Fq2 by the norm method, or None."""
    if a == (0, 0):
        return (0, 0)
    n = fq_sqrt((a[0] * a[0] + a[1] * a[1]) % Q)
    if n is None:
        return None
    for cand in ((a[0] + n) * fq_inv(2) % Q, (a[0] - n) * fq_inv(2) % Q):
        c0 = fq_sqrt(cand)
        if c0:
            c1 = (a[1] * fq_inv(2 * c0)) % Q
            if fq2_sqr((c0, c1)) == a:
                return (c0, c1)
    return None


def twist_point_from_x(x):
    """A point of E'(Fq2) with this x (any subgroup), or None."""
    y = fq2_sqrt(fq2_add(fq2_mul(fq2_sqr(x), x), G2_B))
    return None if y is None else (x, y)


# ---------------------------------------------------------------- self checks
def self_check():
    # moduli are (probable) primes: Fermat test with a few bases
    for p in (Q, r):
        for a in (2, 3, 5, 7, 11):
            assert pow(a, p - 1, p) == 1
    assert Q % 4 == 3                      # so u^2 = -1 gives a field
    assert pow(Q - 1, (Q - 1) // 2, Q) == Q - 1   # -1 is a non-residue mod q

    # Montgomery helper round-trip
    for x in (0, 1, 2, Q - 1):
        assert from_mont(to_mont(x, Q), Q) == x

    # curves: generators on curve with order r
    for C in (G1, G2):
        assert C.on_curve(C.gen), C.name
        assert C.mul(C.gen, r) is None, C.name
        assert C.mul(C.gen, r - 1) == C.neg(C.gen), C.name
        assert C.mul(C.gen, 1) == C.gen
        assert C.add(C.gen, C.gen) == C.double(C.gen)
        assert C.on_curve(C.double(C.gen))
        assert not C.on_curve((C.F.zero, C.F.zero))   # (0,0) safe as "infinity" encoding
    assert G2_B == fq2_mul((3, 0), fq2_inv((9, 1)))
    assert fq2_mul(G2_B, (9, 1)) == (3, 0)

    # roots of unity
    assert (r - 1) % (1 << FR_S) == 0 and FR_T % 2 == 1
    assert pow(FR_NQR, (r - 1) // 2, r) == r - 1, "5 must be a non-residue"
    for n in (2, 3, 4):                       # and it is the smallest >= 2
        assert pow(n, (r - 1) // 2, r) == 1
    assert FR_ROOTS[0] == 1
    for k in range(FR_S + 1):
        w = FR_ROOTS[k]
        assert pow(w, 1 << k, r) == 1
        if k > 0:
            assert pow(w, 1 << (k - 1), r) == r - 1   # order exactly 2^k
    assert FR_ROOTS[FR_S] == 19103219067921713944291392827692070036145651957329286315305642004821462161904
    assert FR_SHIFT == 25
    assert pow(FR_SHIFT, 1 << FR_S, r) != 1   # shift lies outside the 2^28 subgroup
    return True


def pairing_self_check():
    """Bilinearity, non-degeneracy and order r of the reference pairing (a few seconds)."""
    e = pairing(G1_GEN, G2_GEN)
    assert e != F12_ONE
    assert f12_pow(e, r) == F12_ONE
    assert pairing(g1_mul(G1_GEN, 2), G2_GEN) == f12_sqr(e)
    assert pairing(G1_GEN, g2_mul(G2_GEN, 3)) == f12_mul(f12_sqr(e), e)
    assert pairing(g1_neg(G1_GEN), G2_GEN) == f12_inv(e)
    assert flat_from_tower(tower_from_flat(e)) == e
    assert fq2_to_f12((0, 1)) == [Q - 9] + [0] * 5 + [1] + [0] * 5
    assert f12_sqr(fq2_to_f12((0, 1))) == f12([-1] + [0] * 11)      # u^2 = -1
    return True


if __name__ == "__main__":
    self_check()
    pairing_self_check()
    print("bn254_ref self-check OK")
