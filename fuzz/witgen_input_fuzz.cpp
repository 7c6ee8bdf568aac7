// Fuzzes witgen::parse_input, the reader of circom input.json files that
// every witness generator and every submit of inputs runs on a client's
// bytes. Oracles besides the sanitizers:
//  - it throws InputFault or returns; nothing else escapes;
//  - every value it returns is n8 bytes and below the prime (a field element);
//  - a value's decimal form read again (as a string) gives the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "groth16/bn254.hpp"
#include "witgen/input_json.hpp"

using namespace zkfarm::witgen;

namespace {

std::vector<uint8_t> prime() {
  const auto& r = zkfarm::FrParams::kModulus;  // BN254's r, as the prover has it
  std::vector<uint8_t> p(32);
  for (int i = 0; i < 32; ++i) p[size_t(i)] = uint8_t(r[i / 8] >> (8 * (i % 8)));
  return p;
}

// a < b for little-endian byte strings of one length.
bool below(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = a.size(); i-- > 0;)
    if (a[i] != b[i]) return a[i] < b[i];
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<uint8_t> p = prime();
  std::vector<InputSignal> signals;
  try {
    signals = parse_input(std::string_view(reinterpret_cast<const char*>(data), size), p);
  } catch (const InputFault&) {
    return 0;
  }
  for (const auto& s : signals) {
    if (fnv1a(s.name) != s.hash) std::abort();
    for (const auto& v : s.values) {
      if (v.size() != p.size() || !below(v, p)) std::abort();
      const auto again = parse_input("{\"x\": \"" + to_decimal(v) + "\"}", p);
      if (again.size() != 1 || again[0].values.size() != 1 || again[0].values[0] != v) std::abort();
    }
  }
  return 0;
}
