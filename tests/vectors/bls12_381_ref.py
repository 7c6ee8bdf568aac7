#!/usr/bin/env python3
"""A plain-integer reference for BLS12-381 (no third-party packages).

Fields: q (381 bits, 6 limbs), r (255 bits, 4 limbs); Fq2 = Fq[u]/(u² + 1);
G1: y² = x³ + 4 over Fq; G2: y² = x³ + 4(1 + u) over Fq2 (the M-type twist).
Sources: the curve's definition in the IETF draft "Pairing-Friendly Curves"
(draft-irtf-cfrg-pairing-friendly-curves-11, section 4.2.1) and zkcrypto's
bls12_381 crate (generators); ffjavascript's bls12381.js (snarkjs's) for the
same generators and the roots of unity (w[s] = nqr^t, nqr the smallest
quadratic non-residue from 2, s = 32, Fr.shift = nqr²).

`python3 tests/vectors/bls12_381_ref.py` runs the self-checks: generators on
their curves with order r, the Montgomery constants, the roots' orders.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bn254_ref import Curve, Field, f_add, f_inv, f_mul, f_neg, f_sqr, f_sub  # noqa: E402 (curve-free helpers)

NAME = "BLS12-381"
Q = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
R_ORDER = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
r = R_ORDER
q = Q
Q_LIMBS, R_LIMBS = 6, 4


def mont_r(p):
    """The Montgomery radix of p's field: 2^384 for Fq (6 limbs), 2^256 for Fr."""
    return 1 << (64 * (Q_LIMBS if p == Q else R_LIMBS))


def to_mont(x, p):
    return x * mont_r(p) % p


def from_mont(xm, p):
    return xm * pow(mont_r(p), -1, p) % p


def mont_constants(p):
    """(R mod p, R² mod p, −p⁻¹ mod 2⁶⁴) for the C++ field parameters."""
    rr = mont_r(p) % p
    return rr, rr * rr % p, (-pow(p, -1, 1 << 64)) % (1 << 64)


# Fq2 = Fq[u]/(u² + 1), elements (c0, c1)
def fq2_add(a, b): return ((a[0] + b[0]) % Q, (a[1] + b[1]) % Q)
def fq2_sub(a, b): return ((a[0] - b[0]) % Q, (a[1] - b[1]) % Q)
def fq2_neg(a): return ((-a[0]) % Q, (-a[1]) % Q)
def fq2_mul(a, b): return ((a[0] * b[0] - a[1] * b[1]) % Q, (a[0] * b[1] + a[1] * b[0]) % Q)
def fq2_sqr(a): return fq2_mul(a, a)
def fq2_scalar(a, k): return (a[0] * k % Q, a[1] * k % Q)


def fq2_inv(a):
    t = pow((a[0] * a[0] + a[1] * a[1]) % Q, -1, Q)
    return (a[0] * t % Q, -a[1] * t % Q)


FQ = Field(lambda a, b: f_add(a, b, Q), lambda a, b: f_sub(a, b, Q), lambda a, b: f_mul(a, b, Q),
           lambda a: f_sqr(a, Q), lambda a: f_neg(a, Q), lambda a: f_inv(a, Q), 0, 1, lambda a, k: a * k % Q)
FQ2 = Field(fq2_add, fq2_sub, fq2_mul, fq2_sqr, fq2_neg, fq2_inv, (0, 0), (1, 0), fq2_scalar)

# G1: y² = x³ + 4 over Fq; G2 (M-type twist): y² = x³ + 4(1 + u) over Fq2.
G1_B = 4
G1_GEN = (0x17f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb,
          0x08b3f481e3aaa0f1a09e30ed741d8ae4fcf5e095d5d00af600db18cb2c04b3edd03cc744a2888ae40caa232946c5e7e1)
G2_B = (4, 4)
G2_GEN = ((0x024aa2b2f08f0a91260805272dc51051c6e47ad4fa403b02b4510b647ae3d1770bac0326a805bbefd48056c8c121bdb8,
           0x13e02b6052719f607dacd3a088274f65596bd0d09920b61ab5da61bbdc7f5049334cf11213945d57e5ac7d055d042b7e),
          (0x0ce5d527727d6e118cc9cdc6da2e351aadfd9baa8cbdd3a76d429a695160d12c923ac9cc3baca289e193548608b82801,
           0x0606c4a02ea734cc32acd2b02bc28b99cb3e287e85a763af267492ab572e99ab3f370d275cec1da1aaa9075ff05f79be))
G1 = Curve(FQ, G1_B, G1_GEN, "G1")
G2 = Curve(FQ2, G2_B, G2_GEN, "G2")

# Fr's roots of unity as ffjavascript (snarkjs) picks them: nqr the smallest
# n ≥ 2 with n^((r−1)/2) = −1 (5 here), r − 1 = 2^s·t with s = 32,
# w[s] = nqr^t, w[k] = w[k+1]²; the odd coset of the largest domain is
# Fr.shift = nqr² (ffjavascript 0.3.1 src/f1field.js:55, wasm_field1.js:49).
FR_S = 32
FR_T = (r - 1) >> FR_S
FR_NQR = 5
FR_ROOTS = [0] * (FR_S + 1)
FR_ROOTS[FR_S] = pow(FR_NQR, FR_T, r)
for _k in range(FR_S - 1, -1, -1):
    FR_ROOTS[_k] = FR_ROOTS[_k + 1] * FR_ROOTS[_k + 1] % r
FR_SHIFT = FR_NQR * FR_NQR % r


def fr_root(k):
    return FR_ROOTS[k]


def fr_coset_gen(k):
    return FR_ROOTS[k + 1] if k < FR_S else FR_SHIFT


def self_check():
    assert Q.bit_length() == 381 and r.bit_length() == 255
    for C in (G1, G2):
        assert C.on_curve(C.gen) and C.mul(C.gen, r) is None and C.mul(C.gen, r - 1) == C.neg(C.gen)
    assert pow(FR_NQR, (r - 1) // 2, r) == r - 1 and all(pow(n, (r - 1) // 2, r) == 1 for n in range(2, FR_NQR))
    assert FR_T % 2 == 1 and FR_ROOTS[0] == 1 and FR_ROOTS[1] == r - 1
    for p in (Q, r):
        one, r2, inv = mont_constants(p)
        assert (inv * p) % (1 << 64) == (1 << 64) - 1 and r2 == one * one % p
    print("bls12_381_ref: self-checks passed (generators of order r, nqr = %d, s = %d)" % (FR_NQR, FR_S))


if __name__ == "__main__":
    self_check()
