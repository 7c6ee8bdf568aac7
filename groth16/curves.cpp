#include "groth16/curves.hpp"

#include <array>

#include "groth16/binfile.hpp"
#include "groth16/curve_list.hpp"

namespace zkfarm {
namespace {

// One row per curve of Curves, from the curve's own constants.
template <class... Cs>
constexpr std::array<CurvePrimes, sizeof...(Cs)> primes_of(CurveList<Cs...>) {
  return {CurvePrimes{Cs::kId, uint32_t(Cs::Fq::kBytes), Cs::Fq::Params::kModulus, Cs::Fr::Params::kModulus}...};
}
constexpr auto kCurves = primes_of(Curves{});

}  // namespace

std::span<const CurvePrimes> known_curves() { return kCurves; }

const CurvePrimes& curve_primes(CurveId id) {
  for (const CurvePrimes& c : kCurves)
    if (c.id == id) return c;
  throw UnknownCurve(id);
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
