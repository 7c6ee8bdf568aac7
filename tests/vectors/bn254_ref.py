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


if __name__ == "__main__":
    self_check()
    print("bn254_ref self-check OK")
