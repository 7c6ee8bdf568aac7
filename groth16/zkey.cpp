// Groth16 .zkey: section size, header, coefficient and coordinate checks.
#include "groth16/zkey.hpp"

#include <algorithm>
#include <thread>
#include <vector>

#include <bit>
#include <string>

#include "groth16/errors.hpp"

namespace zkfarm {
namespace {

constexpr uint32_t kGroth16 = 1;  // snarkjs: 1 Groth16, 2 Plonk, 3 Fflonk
// Section 2 with BN254's 32-byte fields: n8q, q, n8r, r, nVars, nPublic,
// domainSize, then 3 G1 and 3 G2 points.
constexpr uint64_t kHeaderSectionBytes = 4 + kFqBytes + 4 + kFrBytes + 12 + 3 * kG1Bytes + 3 * kG2Bytes;

constexpr const char* kG1Coords[] = {"x", "y"};
constexpr const char* kG2Coords[] = {"x.c0", "x.c1", "y.c0", "y.c1"};

void expect_size(const BinFile& f, uint32_t section, uint64_t expected, const std::string& what) {
  const uint64_t actual = f.section(section).size();
  if (actual != expected) {
    f.fail(section, "size " + std::to_string(actual) + " bytes, expected " + std::to_string(expected) + " (" +
                        what + ")");
  }
}

// The smallest i < n for which bad(i) holds, or -1. Large inputs are split
// over the machine's cores (a key of 2^22 constraints has gigabytes to check,
// and a restarted GPU worker waits for it), small ones stay on this thread.
template <class Bad>
int64_t first_bad(uint64_t n, const Bad& bad) {
  const unsigned cores = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  const unsigned parts = n < (uint64_t{1} << 18) ? 1u : cores;
  std::vector<int64_t> found(parts, -1);
  auto scan = [&](unsigned t) {
    const uint64_t lo = n * t / parts, hi = n * (t + 1) / parts;
    for (uint64_t i = lo; i < hi; ++i) {
      if (bad(i)) {
        found[t] = static_cast<int64_t>(i);
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < parts; ++t) threads.emplace_back(scan, t);
  scan(0);
  for (auto& th : threads) th.join();
  for (int64_t f : found)
    if (f >= 0) return f;  // chunks are in order: the first hit is the smallest
  return -1;
}

// Index of the first 32-byte coordinate in BYTES that is not below q, or -1.
// Montgomery form keeps elements in [0, q), so any coordinate >= q is corrupt;
// this touches every page of the big sections once, at memory bandwidth.
int64_t first_noncanonical(std::span<const uint8_t> bytes) {
  return first_bad(bytes.size() / kFqBytes,
                   [&](uint64_t i) { return !u256_less(read_u256(bytes.data() + i * kFqBytes), kBn254Q); });
}

// Fails naming the point and coordinate: "point 7 (y.c1): coordinate not canonical (>= q)".
void check_points(const BinFile& f, uint32_t section, std::span<const uint8_t> points, bool g2) {
  const int64_t bad = first_noncanonical(points);
  if (bad < 0) return;
  const int64_t per_point = g2 ? 4 : 2;
  const char* coord = g2 ? kG2Coords[bad % per_point] : kG1Coords[bad % per_point];
  f.fail(section, "point " + std::to_string(bad / per_point) + " (" + coord +
                      "): coordinate not canonical (>= q)");
}

// Same for one named point of section 2.
void check_named_point(const BinFile& f, const char* name, const uint8_t* p, bool g2) {
  const int64_t bad = first_noncanonical({p, g2 ? kG2Bytes : kG1Bytes});
  if (bad < 0) return;
  const char* coord = g2 ? kG2Coords[bad] : kG1Coords[bad];
  f.fail(2, std::string(name) + " (" + coord + "): coordinate not canonical (>= q)");
}

[[noreturn]] void wrong_curve(const BinFile& f, const std::string& what) {
  f.fail(2, "wrong curve: key is over " + what + ", zkfarm supports BN254 (bn128) only");
}

// Section 2 up to and including r: the curve check comes before the size
// check, so that a BLS12-381 key (n8q = 48, a bigger section) says "wrong
// curve" rather than "wrong size".
void check_curve(const BinFile& f) {
  SectionReader r(f, 2);
  // The primes themselves are never printed (errors.hpp): their sizes, and
  // which one differs, say enough.
  const uint32_t n8q = r.u32("n8q");
  if (n8q != kFqBytes) wrong_curve(f, "a base field of " + std::to_string(n8q) + " bytes");
  const U256 q = read_u256(r.bytes(kFqBytes, "q").data());
  if (q != kBn254Q) wrong_curve(f, "a 32-byte base field whose q is not BN254's");
  const uint32_t n8r = r.u32("n8r");
  if (n8r != kFrBytes) wrong_curve(f, "a scalar field of " + std::to_string(n8r) + " bytes");
  const U256 rr = read_u256(r.bytes(kFrBytes, "r").data());
  if (rr != kBn254R) wrong_curve(f, "a 32-byte scalar field whose r is not BN254's");
}

void check_coefficients(const Zkey& k) {
  const BinFile& f = k.file;
  auto record = [&](uint64_t i) { return k.coeffs.data() + i * kCoeffRecordBytes; };
  const int64_t bad = first_bad(k.n_coeffs, [&](uint64_t i) {
    const uint8_t* rec = record(i);
    return read_u32(rec) > 1 || read_u32(rec + 4) >= k.domain_size || read_u32(rec + 8) >= k.n_vars ||
           !u256_less(read_u256(rec + 12), kBn254R);
  });
  if (bad < 0) return;
  const uint8_t* rec = record(uint64_t(bad));
  const uint32_t matrix = read_u32(rec);
  const uint32_t constraint = read_u32(rec + 4);
  const uint32_t signal = read_u32(rec + 8);
  const std::string at = "coefficient " + std::to_string(bad) + ": ";
  if (matrix > 1) f.fail(4, at + "matrix " + std::to_string(matrix) + " is neither A (0) nor B (1)");
  if (constraint >= k.domain_size) {
    f.fail(4, at + "constraint " + std::to_string(constraint) + " out of range (domainSize " +
                  std::to_string(k.domain_size) + ")");
  }
  if (signal >= k.n_vars) {
    f.fail(4, at + "signal " + std::to_string(signal) + " out of range (nVars " + std::to_string(k.n_vars) + ")");
  }
  f.fail(4, at + "value not below r");
}

}  // namespace

Zkey Zkey::open(const std::string& path, ZkeyContents contents) {
  Zkey k(BinFile(path, "zkey", 1));
  const BinFile& f = k.file;

  expect_size(f, 1, 4, "u32 protocol");
  const uint32_t protocol = read_u32(f.section(1).data());
  if (protocol != kGroth16) f.fail(1, "unsupported protocol " + std::to_string(protocol) + ", only Groth16 (1)");

  check_curve(f);
  expect_size(f, 2, kHeaderSectionBytes, "header with 32-byte q and r");
  SectionReader hdr(f, 2);
  hdr.bytes(4 + kFqBytes + 4 + kFrBytes, "n8q, q, n8r, r");  // checked by check_curve
  k.n_vars = hdr.u32("nVars");
  k.n_public = hdr.u32("nPublic");
  k.domain_size = hdr.u32("domainSize");
  if (k.n_public >= k.n_vars) {
    f.fail(2, "nPublic " + std::to_string(k.n_public) + " not below nVars " + std::to_string(k.n_vars));
  }
  if (!std::has_single_bit(k.domain_size)) {
    f.fail(2, "domainSize " + std::to_string(k.domain_size) + " is not a power of two");
  }
  k.log_domain = static_cast<uint32_t>(std::countr_zero(k.domain_size));
  if (k.log_domain > kMaxLogDomain) {
    f.fail(2, "domainSize " + std::to_string(k.domain_size) + " exceeds 2^" + std::to_string(kMaxLogDomain));
  }
  struct Named {
    const char* name;
    const uint8_t** dst;
    bool g2;
  };
  for (const Named& p : {Named{"alpha1", &k.alpha1, false}, Named{"beta1", &k.beta1, false},
                         Named{"beta2", &k.beta2, true}, Named{"gamma2", &k.gamma2, true},
                         Named{"delta1", &k.delta1, false}, Named{"delta2", &k.delta2, true}}) {
    *p.dst = hdr.bytes(p.g2 ? kG2Bytes : kG1Bytes, p.name).data();
    check_named_point(f, p.name, *p.dst, p.g2);
  }

  // Sizes of sections 3..9 from the header, all in 64-bit: nVars * 128 < 2^39.
  const uint64_t n_vars = k.n_vars;
  const uint64_t n_ic = uint64_t{k.n_public} + 1;
  const uint64_t n_c = n_vars - n_ic;
  expect_size(f, 3, n_ic * kG1Bytes, "IC: nPublic+1 = " + std::to_string(n_ic) + " G1 points of 64 bytes");

  SectionReader coefs(f, 4);
  k.n_coeffs = coefs.u32("nCoefs");
  expect_size(f, 4, 4 + uint64_t{k.n_coeffs} * kCoeffRecordBytes,
              "u32 count and " + std::to_string(k.n_coeffs) + " coefficient records of 44 bytes");
  k.coeffs = coefs.bytes(uint64_t{k.n_coeffs} * kCoeffRecordBytes, "coefficient records");

  const std::string vars = std::to_string(n_vars);
  expect_size(f, 5, n_vars * kG1Bytes, "A: nVars " + vars + " G1 points of 64 bytes");
  expect_size(f, 6, n_vars * kG1Bytes, "B1: nVars " + vars + " G1 points of 64 bytes");
  expect_size(f, 7, n_vars * kG2Bytes, "B2: nVars " + vars + " G2 points of 128 bytes");
  expect_size(f, 8, n_c * kG1Bytes, "C: nVars-nPublic-1 = " + std::to_string(n_c) + " G1 points of 64 bytes");
  expect_size(f, 9, uint64_t{k.domain_size} * kG1Bytes,
              "H: domainSize " + std::to_string(k.domain_size) + " G1 points of 64 bytes");

  k.ic = f.section(3);
  k.a = f.section(5);
  k.b1 = f.section(6);
  k.b2 = f.section(7);
  k.c = f.section(8);
  k.h = f.section(9);

  if (contents == ZkeyContents::checked) k.check_contents();
  return k;
}

void Zkey::check_contents() const {
  check_coefficients(*this);
  check_points(file, 3, ic, false);
  check_points(file, 5, a, false);
  check_points(file, 6, b1, false);
  check_points(file, 7, b2, true);
  check_points(file, 8, c, false);
  check_points(file, 9, h, false);
}

}  // namespace zkfarm
