// snarkjs .wtns: header and value checks, and the fit against a proving key.
#include "groth16/wtns.hpp"

#include "groth16/curves.hpp"

#include <algorithm>
#include <string>

#include "groth16/errors.hpp"
#include "groth16/zkey.hpp"

namespace zkfarm {

Wtns Wtns::open(const std::string& path) {
  Wtns w(BinFile(path, "wtns", 2));
  const BinFile& f = w.file;

  SectionReader hdr(f, 1);
  w.n8 = hdr.u32("n8");
  // circom writes n8 as whole 64-bit words; anything else is a damaged header.
  if (w.n8 == 0 || w.n8 % 8 != 0 || w.n8 > kMaxWtnsN8) {
    f.fail(1, "n8 " + std::to_string(w.n8) + " is not a multiple of 8 in 8.." + std::to_string(kMaxWtnsN8));
  }
  const uint64_t header_bytes = 4 + uint64_t{w.n8} + 4;
  if (f.section(1).size() != header_bytes) {
    f.fail(1, "size " + std::to_string(f.section(1).size()) + " bytes, expected " + std::to_string(header_bytes) +
                  " (u32 n8, prime of " + std::to_string(w.n8) + " bytes, u32 nWitness)");
  }
  w.prime_le = hdr.bytes(w.n8, "prime");
  if (w.n8 == 32) w.prime = read_u256(w.prime_le.data());
  w.n_witness = hdr.u32("nWitness");
  // Value 0 must be the constant 1, so an empty witness is already corrupt.
  if (w.n_witness == 0) f.fail(1, "nWitness is 0; a witness holds at least the constant signal");

  const uint64_t expected = uint64_t{w.n_witness} * w.n8;
  w.values = f.section(2);
  if (w.values.size() != expected) {
    f.fail(2, "size " + std::to_string(w.values.size()) + " bytes, expected " + std::to_string(expected) +
                  " (nWitness " + std::to_string(w.n_witness) + " values of " + std::to_string(w.n8) + " bytes)");
  }
  for (uint32_t i = 0; i < w.n_witness; ++i) {
    if (!le_less(w.value(i), w.prime_le)) f.fail(2, "value " + std::to_string(i) + " not below the prime");
  }
  const auto v0 = w.value(0);
  if (v0[0] != 1 || !std::all_of(v0.begin() + 1, v0.end(), [](uint8_t b) { return b == 0; })) {
    f.fail(2, "value 0 (the constant signal) is not 1");  // the value itself is not shown (errors.hpp)
  }
  return w;
}

void check_witness_matches(const Zkey& key, const Wtns& w) {
  check_witness_matches(key.n_vars, key.path, w, key.curve);
}

void check_witness_field(const Wtns& w, CurveId curve) {
  if (w.n8 == 32 && le_limbs_equal(w.prime_le, curve_primes(curve).r)) return;
  const std::string name = curve_name(curve);
  w.file.fail_file("witness is over another field (" +
                   (w.n8 == 32 ? "a 32-byte prime that is not " + name + "'s r"
                               : "a prime of " + std::to_string(w.n8) + " bytes") +
                   "), key expects " + name + "'s r");
}

void check_witness_matches(uint32_t n_vars, const std::string& key_path, const Wtns& w, CurveId curve) {
  check_witness_field(w, curve);
  if (w.n_witness != n_vars) {
    w.file.fail_file("witness has " + std::to_string(w.n_witness) + " values, key expects nVars " +
                     std::to_string(n_vars) + " (" + key_path + ")");
  }
}

}  // namespace zkfarm
