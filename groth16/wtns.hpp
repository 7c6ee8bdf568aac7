#pragma once
// A witness as snarkjs/circom write it (.wtns, container version 2; circom
// witness_calculator.js calculateWTNSBin, snarkjs src/wtns_utils.js):
//   section 1  u32 n8, prime[n8], u32 nWitness
//   section 2  nWitness values of n8 bytes each, little-endian, plain (NOT Montgomery)
// Value 0 is the constant signal 1; values 1..nPublic are the public signals in
// the order snarkjs writes public.json.
#include <cstdint>
#include <span>
#include <string>

#include "groth16/binfile.hpp"
#include "groth16/curve_id.hpp"

namespace zkfarm {

struct Zkey;

/// Largest element size accepted, bytes (BLS12-381's base field needs 48; a
/// witness is over the scalar field, 32 for every curve snarkjs knows).
inline constexpr uint32_t kMaxWtnsN8 = 64;

/// A mapped, validated witness. open() checks the section sizes, that every
/// value is below the witness's own prime, and that value 0 is 1. Whether the
/// prime and count fit a key is check_witness_matches()'s job. Spans point into
/// `file`'s mapping and stay valid while this Wtns lives.
struct Wtns {
  /// Maps PATH and validates it. Throws InputError "PATH: FAULT" (container
  /// faults, see BinFile) or "PATH: section N: FAULT", e.g.
  /// "size 48641 bytes, expected 48640 (nWitness 1520 values of 32 bytes)",
  /// "value 7 not below the prime", "value 0 (the constant signal) is not 1".
  static Wtns open(const std::string& path);

  /// Value I (n8 bytes, little-endian, plain form). Requires i < n_witness.
  std::span<const uint8_t> value(uint32_t i) const { return values.subspan(uint64_t{i} * n8, n8); }

  std::string path;
  uint32_t n8 = 0;                    // bytes per value, 8..kMaxWtnsN8, a multiple of 8
  std::span<const uint8_t> prime_le;  // the field prime as stored, n8 bytes
  U256 prime{};                       // the prime when n8 == 32, else all zero
  uint32_t n_witness = 0;             // number of values, >= 1
  std::span<const uint8_t> values;    // section 2: n_witness * n8 bytes

  /// The mapping the spans above point into.
  BinFile file;

 private:
  explicit Wtns(BinFile f) : path(f.path()), file(std::move(f)) {}
};

/// Checks that W's values are elements of CURVE's scalar field: its prime must
/// be that curve's r. Throws InputError naming the witness file:
/// "W.PATH: witness is over another field (a prime of 48 bytes), key expects bn128's r".
void check_witness_field(const Wtns& w, CurveId curve);

/// Checks that witness W can be proved with KEY: W's prime must be the r of
/// the key's curve (its scalar field) and W must have exactly key.n_vars
/// values. Throws InputError naming the witness file:
/// "W.PATH: witness is over another field (a prime of 48 bytes), key expects bn128's r" or
/// "W.PATH: witness has N values, key expects nVars M (KEY.PATH)".
void check_witness_matches(const Zkey& key, const Wtns& w);
/// The same check against a key known only by its nVars, path and curve
/// (what the farm keeps of a key it has checked before); same errors.
void check_witness_matches(uint32_t n_vars, const std::string& key_path, const Wtns& w,
                           CurveId curve = CurveId::bn254);

}  // namespace zkfarm
