#pragma once
// A Groth16 proving key as snarkjs 0.7 writes it (.zkey, container version 1;
// snarkjs src/zkey_new.js and zkey_utils.js writeHeader), BN254 or BLS12-381:
//   section 1  u32 protocol (1 = Groth16)
//   section 2  u32 n8q, q[n8q], u32 n8r, r[n8r], u32 nVars, u32 nPublic, u32 domainSize,
//              alpha1 G1, beta1 G1, beta2 G2, gamma2 G2, delta1 G1, delta2 G2
//   section 3  IC: (nPublic+1) G1
//   section 4  u32 nCoefs, nCoefs x { u32 matrix (0=A, 1=B), u32 constraint, u32 signal, value[n8r] }
//   section 5  A: nVars G1        section 6  B1: nVars G1      section 7  B2: nVars G2
//   section 8  C: (nVars-nPublic-1) G1                          section 9  H: domainSize G1
//   section 10 contributions (ignored)
// Points are affine, each coordinate n8q bytes little-endian in Montgomery form
// (R = 2^(8·n8q)); G1 = x|y, G2 = x.c0|x.c1|y.c0|y.c1; all zero bytes = infinity.
// BN254: n8q = 32, G1 64 bytes, G2 128. BLS12-381: n8q = 48, G1 96, G2 192.
// n8r = 32 for both, so coefficient records and witness values are 32 bytes.
#include <cstdint>
#include <span>
#include <string>

#include "groth16/binfile.hpp"
#include "groth16/bn254.hpp"
#include "groth16/curve_id.hpp"

namespace zkfarm {

/// Bytes of one BN254 coordinate (an Fq element); a key's own are Zkey::fq_bytes.
inline constexpr uint64_t kFqBytes = 32;
/// Bytes of one Fr element (both curves) and of one section-4 coefficient record.
inline constexpr uint64_t kFrBytes = 32;
inline constexpr uint64_t kCoeffRecordBytes = 12 + kFrBytes;
/// Largest domain zkfarm accepts (2^28 points: the H section alone is then 16 GiB).

/// What Zkey::open checks before it returns: everything, or the structure
/// only (container, protocol, curve, header, every section's size, the
/// section-2 points), leaving the passes over the big sections to
/// check_contents(), e.g. to run them while the key's bytes are uploaded.
enum class ZkeyContents { checked, unchecked };

/// A mapped, validated proving key. open() checks every section's exact size,
/// the header's counts, every coefficient record, and that every point
/// coordinate in sections 2, 3, 5-9 is canonical (< q). All spans and pointers
/// point into the mapping held by `file` and stay valid while this Zkey lives
/// (moving it keeps them valid).
///
/// Not checked here: that points lie on the curve and in the prime-order
/// subgroup, which needs field arithmetic. That check belongs after open(),
/// over the raw spans below (the hook for it).
struct Zkey {
  /// Maps PATH and validates it. Throws InputError "PATH: FAULT" (container
  /// faults, see BinFile) or "PATH: section N: FAULT", e.g.
  /// "unsupported protocol 2, only Groth16 (1)",
  /// "wrong curve: key is over a base field of 40 bytes, zkfarm supports bn128, bls12381",
  /// "size 131073 bytes, expected 131072 (H: domainSize 2048 G1 points of 64 bytes)",
  /// "coefficient 17: signal 900 out of range (nVars 812)",
  /// "point 3 (y.c1): coordinate not canonical (>= q)".
  /// With ZkeyContents::unchecked it stops before the content checks (the
  /// last two kinds): the spans have their exact sizes, but the records and
  /// coordinates must not be trusted until check_contents() has returned.
  static Zkey open(const std::string& path, ZkeyContents contents = ZkeyContents::checked);

  /// The content checks open() runs last: every coefficient record (matrix
  /// ∈ {0, 1}, constraint < domainSize, signal < nVars, value < r), then every
  /// coordinate of sections 3, 5-9 canonical; on all cores for big keys (about
  /// 100 ms for a 2^22 key on 16 cores). Throws the InputError open() would
  /// have thrown for the first fault. Reads the mapping only: other threads
  /// may read the key meanwhile.
  void check_contents() const;

  std::string path;
  /// The curve, from section 2's n8q, q, n8r and r (both primes must be the
  /// curve's exactly), and its sizes: fq_bytes = n8q (32 or 48), G1 points
  /// 2·n8q bytes, G2 points 4·n8q bytes.
  CurveId curve = CurveId::bn254;
  uint32_t fq_bytes = 32, g1_bytes = 64, g2_bytes = 128;
  uint32_t n_vars = 0;       // witness length, including the constant 1 at index 0
  uint32_t n_public = 0;     // public signals (outputs then public inputs), excluding the constant
  uint32_t domain_size = 0;  // power of two, <= 2^kMaxLogDomain
  uint32_t log_domain = 0;   // log2(domain_size)
  uint32_t n_coeffs = 0;     // records in section 4

  // Verification/proving key points from section 2, raw bytes as stored
  // (Montgomery, little-endian): g1_bytes and g2_bytes each.
  const uint8_t* alpha1 = nullptr;
  const uint8_t* beta1 = nullptr;
  const uint8_t* beta2 = nullptr;
  const uint8_t* gamma2 = nullptr;
  const uint8_t* delta1 = nullptr;
  const uint8_t* delta2 = nullptr;

  std::span<const uint8_t> ic;      // section 3: (n_public+1) G1 points
  std::span<const uint8_t> coeffs;  // section 4 after the u32 count: n_coeffs * 44 bytes
  std::span<const uint8_t> a;       // section 5: n_vars G1 points
  std::span<const uint8_t> b1;      // section 6: n_vars G1 points
  std::span<const uint8_t> b2;      // section 7: n_vars G2 points
  std::span<const uint8_t> c;       // section 8: (n_vars - n_public - 1) G1 points
  std::span<const uint8_t> h;       // section 9: domain_size G1 points

  /// The mapping the spans above point into.
  BinFile file;

 private:
  explicit Zkey(BinFile f) : path(f.path()), file(std::move(f)) {}
};

}  // namespace zkfarm
