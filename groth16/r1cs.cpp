// circom .r1cs: header, constraint walk and label map checks.
#include "groth16/r1cs.hpp"

#include <string>

#include "groth16/errors.hpp"

namespace zkfarm {
namespace {

constexpr const char* kMatrixNames[] = {"A", "B", "C"};

// Walks section 2 with bounds checks on every count, so that for_each_constraint
// can later walk it without any. Messages are built only on failure: circuits
// have millions of constraints.
void check_constraints(const R1cs& r) {
  const BinFile& f = r.file;
  SectionReader s(f, 2);
  const uint64_t term_bytes = 4 + uint64_t{r.n8};
  for (uint32_t i = 0; i < r.n_constraints; ++i) {
    for (int m = 0; m < 3; ++m) {
      auto at = [&] { return "constraint " + std::to_string(i) + ": " + kMatrixNames[m]; };
      if (s.remaining() < 4) s.u32((at() + " term count").c_str());  // throws "truncated"
      const uint32_t n_terms = s.u32("term count");
      if (s.remaining() < n_terms * term_bytes) s.bytes(n_terms * term_bytes, (at() + " terms").c_str());
      const auto terms = s.bytes(n_terms * term_bytes, "terms");
      for (uint32_t t = 0; t < n_terms; ++t) {
        const uint8_t* p = terms.data() + t * term_bytes;
        const uint32_t wire = read_u32(p);
        if (wire >= r.n_wires) {
          f.fail(2, at() + " term " + std::to_string(t) + ": wire " + std::to_string(wire) +
                        " out of range (nWires " + std::to_string(r.n_wires) + ")");
        }
        if (!le_less({p + 4, r.n8}, r.prime_le)) {
          f.fail(2, at() + " term " + std::to_string(t) + ": coefficient not below the prime");
        }
      }
    }
  }
  if (s.remaining() != 0) {
    f.fail(2, std::to_string(s.remaining()) + " trailing bytes after the " + std::to_string(r.n_constraints) +
                  " constraints the header declares");
  }
}

}  // namespace

R1cs R1cs::open(const std::string& path) {
  R1cs r(BinFile(path, "r1cs", 1));
  const BinFile& f = r.file;

  SectionReader hdr(f, 1);
  r.n8 = hdr.u32("n8");
  if (r.n8 == 0 || r.n8 % 8 != 0 || r.n8 > kMaxR1csN8) {
    f.fail(1, "n8 " + std::to_string(r.n8) + " is not a multiple of 8 in 8.." + std::to_string(kMaxR1csN8));
  }
  const uint64_t header_bytes = uint64_t{r.n8} + 32;
  if (f.section(1).size() != header_bytes) {
    f.fail(1, "size " + std::to_string(f.section(1).size()) + " bytes, expected " + std::to_string(header_bytes) +
                  " (header with a prime of " + std::to_string(r.n8) + " bytes)");
  }
  r.prime_le = hdr.bytes(r.n8, "prime");
  if (r.n8 == 32) r.prime = read_u256(r.prime_le.data());
  r.n_wires = hdr.u32("nWires");
  r.n_pub_out = hdr.u32("nPubOut");
  r.n_pub_in = hdr.u32("nPubIn");
  r.n_prv_in = hdr.u32("nPrvIn");
  r.n_labels = hdr.u64("nLabels");
  r.n_constraints = hdr.u32("nConstraints");
  // Wire 0 and the inputs/outputs come first, so they must all fit in nWires.
  const uint64_t io = 1 + uint64_t{r.n_pub_out} + r.n_pub_in + r.n_prv_in;
  if (io > r.n_wires) {
    f.fail(1, "1 + nPubOut + nPubIn + nPrvIn = " + std::to_string(io) + " exceeds nWires " +
                  std::to_string(r.n_wires));
  }

  r.constraints = f.section(2);
  check_constraints(r);

  r.labels = f.section(3);
  const uint64_t label_bytes = uint64_t{r.n_wires} * 8;
  if (r.labels.size() != label_bytes) {
    f.fail(3, "size " + std::to_string(r.labels.size()) + " bytes, expected " + std::to_string(label_bytes) +
                  " (nWires " + std::to_string(r.n_wires) + " u64 label ids)");
  }
  for (uint32_t w = 0; w < r.n_wires; ++w) {
    if (r.label(w) >= r.n_labels) {
      f.fail(3, "wire " + std::to_string(w) + ": label " + std::to_string(r.label(w)) + " out of range (nLabels " +
                    std::to_string(r.n_labels) + ")");
    }
  }
  return r;
}

}  // namespace zkfarm
