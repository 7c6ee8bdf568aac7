#include "groth16/curves.hpp"

#include "groth16/binfile.hpp"
#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"

namespace zkfarm {
namespace {

constexpr CurvePrimes kCurves[] = {
    {CurveId::bn254, 32, FqParams::kModulus, FrParams::kModulus},
    {CurveId::bls12_381, 48, bls12_381::FqParams::kModulus, bls12_381::FrParams::kModulus},
};

}  // namespace

std::span<const CurvePrimes> known_curves() { return kCurves; }

const CurvePrimes& curve_primes(CurveId id) {
  for (const CurvePrimes& c : kCurves)
    if (c.id == id) return c;
  return kCurves[0];  // unreachable: every CurveId has a row
}

bool le_limbs_less(const uint8_t* p, const uint64_t* m, size_t limbs) {
  for (size_t i = limbs; i-- > 0;) {
    const uint64_t v = read_u64(p + 8 * i);
    if (v != m[i]) return v < m[i];
  }
  return false;
}

bool le_limbs_equal(std::span<const uint8_t> p, const uint64_t* m) {
  for (size_t i = 0; i < p.size() / 8; ++i)
    if (read_u64(p.data() + 8 * i) != m[i]) return false;
  return true;
}

}  // namespace zkfarm
