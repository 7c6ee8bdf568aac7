#pragma once
// tests/vectors/pairing.txt (made by tests/vectors/make_pairing_vectors.py from
// the plain Python pairing of bn254_ref.py) and small helpers shared by the
// pairing and verifier tests.
#include <random>
#include <string>
#include <vector>

#include "groth16/pairing.hpp"
#include "test_util.hpp"
#include "vector_file.hpp"

namespace zkfarm::test {

/// Every vector of pairing.txt by op (see tests/vectors/README.md).
inline const VectorFile<U256>& vectors() {
  static VectorFile<U256> v("pairing.txt", dec);
  return v;
}

inline Fq fq(const U256& x) { return Fq::from_u256(x); }

/// 12 canonical integers from v[at], in the order of pairing.txt (c0.c0.c0 … c1.c2.c1).
inline Fq12 fq12_at(const std::vector<U256>& v, size_t at) {
  Fq12 r;
  Fq2* c[6] = {&r.c0.c0, &r.c0.c1, &r.c0.c2, &r.c1.c0, &r.c1.c1, &r.c1.c2};
  for (int i = 0; i < 6; ++i) *c[i] = {fq(v.at(at + 2 * i)), fq(v.at(at + 2 * i + 1))};
  return r;
}
/// A G1 point from v[at], v[at+1]; a G2 point from v[at..at+4) (x.c0 x.c1 y.c0 y.c1).
inline G1Affine g1_at(const std::vector<U256>& v, size_t at) { return {fq(v.at(at)), fq(v.at(at + 1))}; }
inline G2Affine g2_at(const std::vector<U256>& v, size_t at) {
  return {{fq(v.at(at)), fq(v.at(at + 1))}, {fq(v.at(at + 2)), fq(v.at(at + 3))}};
}

/// k·P, affine; a·b mod r.
inline G1Affine g1_mul(const G1Affine& p, const U256& k) { return G1::from_affine(p).mul(k).to_affine(); }
inline G2Affine g2_mul(const G2Affine& p, const U256& k) { return G2::from_affine(p).mul(k).to_affine(); }
inline U256 fr_mul(const U256& a, const U256& b) { return (Fr::from_u256(a) * Fr::from_u256(b)).to_u256(); }

/// An element of the cyclotomic subgroup (the easy part of the final exponentiation).
inline Fq12 cyclotomic(const Fq12& f) {
  Fq12 t = f.conj() * f.inv();
  return t.frobenius(2) * t;
}

}  // namespace zkfarm::test
