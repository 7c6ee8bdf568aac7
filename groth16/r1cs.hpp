#pragma once
// A constraint system as circom writes it (.r1cs, container version 1; the
// iden3 r1cs binary format spec, read by snarkjs via r1csfile):
//   section 1  header: u32 n8, prime[n8], u32 nWires, u32 nPubOut, u32 nPubIn,
//              u32 nPrvIn, u64 nLabels, u32 nConstraints                (n8 + 32 bytes)
//   section 2  nConstraints x { A, B, C }, each linear combination
//              u32 nTerms, nTerms x { u32 wireId, coefficient[n8] (little-endian, plain) }
//   section 3  wire -> label map: nWires x u64 label id (each < nLabels)
//   sections 4, 5 (custom gates) and any others: ignored
// Wire 0 is the constant 1, then nPubOut outputs, nPubIn public inputs, nPrvIn
// private inputs, then internal wires. Circom writes section 2 before section 1.
#include <cstdint>
#include <span>
#include <string>

#include "groth16/binfile.hpp"

namespace zkfarm {

/// Largest coefficient size accepted, bytes (fields of up to 512 bits).
inline constexpr uint32_t kMaxR1csN8 = 64;

/// One term of a linear combination: coefficient (n8 bytes, little-endian,
/// plain form, below the prime) times wire.
struct R1csTerm {
  uint32_t wire;
  std::span<const uint8_t> coeff;
};

/// A linear combination in place in the mapped section 2: a view, no copy.
/// Only R1cs makes these, over bytes it has validated.
class LinearCombination {
 public:
  LinearCombination(const uint8_t* terms, uint32_t n_terms, uint32_t n8)
      : terms_(terms), n_terms_(n_terms), n8_(n8) {}
  /// Number of terms.
  uint32_t size() const { return n_terms_; }
  /// Term I; requires i < size().
  R1csTerm term(uint32_t i) const {
    const uint8_t* p = terms_ + uint64_t{i} * (4 + n8_);
    return {read_u32(p), {p + 4, n8_}};
  }
  /// Bytes the terms take (without the u32 count): size() * (4 + n8).
  uint64_t bytes() const { return uint64_t{n_terms_} * (4 + n8_); }

 private:
  const uint8_t* terms_;
  uint32_t n_terms_;
  uint32_t n8_;
};

/// One constraint: <A, w> * <B, w> = <C, w>.
struct R1csConstraint {
  LinearCombination a, b, c;
};

/// A mapped, validated r1cs. open() checks the header size and counts, walks
/// section 2 once (every wire id < nWires, every coefficient < prime, the
/// section consumed exactly) and checks the label map. Any prime is accepted
/// (circom writes bn128, bls12381, goldilocks, ...); callers compare `prime`
/// with the field they need. Spans point into `file`'s mapping.
struct R1cs {
  /// Maps PATH and validates it. Throws InputError "PATH: FAULT" (container
  /// faults, see BinFile) or "PATH: section N: FAULT", e.g.
  /// "constraint 17: B term 2: wire 900 out of range (nWires 812)",
  /// "constraint 3: C term 0: coefficient not below the prime",
  /// "12 trailing bytes after constraint 1516".
  static R1cs open(const std::string& path);

  /// Calls F(index, const R1csConstraint&) for each constraint in order.
  /// Cheap: no allocation, no checks (open() made them).
  template <class F>
  void for_each_constraint(F&& f) const {
    const uint8_t* p = constraints.data();
    for (uint32_t i = 0; i < n_constraints; ++i) {
      const LinearCombination a = lc_at(p);
      p += 4 + a.bytes();
      const LinearCombination b = lc_at(p);
      p += 4 + b.bytes();
      const LinearCombination c = lc_at(p);
      p += 4 + c.bytes();
      f(i, R1csConstraint{a, b, c});
    }
  }

  /// Label id of wire W (from section 3); requires w < n_wires.
  uint64_t label(uint32_t w) const { return read_u64(labels.data() + uint64_t{w} * 8); }

  std::string path;
  uint32_t n8 = 0;                    // bytes per coefficient, 8..kMaxR1csN8, a multiple of 8
  std::span<const uint8_t> prime_le;  // the field prime as stored, n8 bytes
  U256 prime{};                       // the prime when n8 == 32, else all zero
  uint32_t n_wires = 0;               // including wire 0, the constant 1
  uint32_t n_pub_out = 0;
  uint32_t n_pub_in = 0;
  uint32_t n_prv_in = 0;
  uint64_t n_labels = 0;
  uint32_t n_constraints = 0;
  std::span<const uint8_t> constraints;  // section 2, whole
  std::span<const uint8_t> labels;       // section 3: n_wires * 8 bytes

  /// The mapping the spans above point into.
  BinFile file;

 private:
  explicit R1cs(BinFile f) : path(f.path()), file(std::move(f)) {}
  LinearCombination lc_at(const uint8_t* p) const { return {p + 4, read_u32(p), n8}; }
};

}  // namespace zkfarm
