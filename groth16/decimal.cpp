#include "groth16/decimal.hpp"

#include <algorithm>

namespace zkfarm {

std::string to_decimal(const U256& x) {
  U256 v = x;
  std::string out;
  auto is_zero = [&] { return (v[0] | v[1] | v[2] | v[3]) == 0; };
  do {
    // Divide v by 10^19 (fits a limb), collecting 19 digits at a time.
    constexpr uint64_t kBase = 10000000000000000000ULL;
    u128 rem = 0;
    for (int i = 3; i >= 0; --i) {
      u128 cur = (rem << 64) | v[i];
      v[i] = uint64_t(cur / kBase);
      rem = cur % kBase;
    }
    uint64_t chunk = uint64_t(rem);
    for (int d = 0; d < 19; ++d) {
      out.push_back(char('0' + chunk % 10));
      chunk /= 10;
      if (chunk == 0 && is_zero()) break;
    }
  } while (!is_zero());
  while (out.size() > 1 && out.back() == '0') out.pop_back();
  std::reverse(out.begin(), out.end());
  return out;
}

std::optional<U256> parse_decimal(std::string_view s) {
  if (s.empty() || s.size() > 78) return std::nullopt;
  U256 v{0, 0, 0, 0};
  for (char ch : s) {
    if (ch < '0' || ch > '9') return std::nullopt;
    u128 carry = uint64_t(ch - '0');
    for (int i = 0; i < 4; ++i) {
      u128 cur = (u128)v[i] * 10 + carry;
      v[i] = uint64_t(cur);
      carry = cur >> 64;
    }
    if (carry) return std::nullopt;
  }
  return v;
}

}  // namespace zkfarm
