// Groth16 .zkey: section size, header, coefficient and coordinate checks.
#include "groth16/zkey.hpp"

#include <algorithm>
#include <thread>
#include <vector>

#include <bit>
#include <string>

#include "groth16/curve_list.hpp"
#include "groth16/curves.hpp"
#include "groth16/errors.hpp"

namespace zkfarm {
namespace {

constexpr uint32_t kGroth16 = 1;  // snarkjs: 1 Groth16, 2 Plonk, 3 Fflonk

// Section 2's size: n8q, q, n8r, r, nVars, nPublic, domainSize, then 3 G1
// and 3 G2 points.
uint64_t header_section_bytes(uint32_t n8q) { return 4 + n8q + 4 + kFrBytes + 12 + 3 * 2 * n8q + 3 * 4 * n8q; }

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

// Index of the first n8q-byte coordinate in BYTES that is not below the
// key's q, or -1. Montgomery form keeps elements in [0, q), so any coordinate
// >= q is corrupt; this touches every page of the big sections once, at
// memory bandwidth.
int64_t first_noncanonical(const Zkey& k, std::span<const uint8_t> bytes) {
  const CurvePrimes& c = curve_primes(k.curve);
  const size_t limbs = c.n8q / 8;
  return first_bad(bytes.size() / c.n8q, [&](uint64_t i) { return !le_limbs_less(bytes.data() + i * c.n8q, c.q, limbs); });
}

// Fails naming the point and coordinate: "point 7 (y.c1): coordinate not canonical (>= q)".
void check_points(const Zkey& k, uint32_t section, std::span<const uint8_t> points, bool g2) {
  const BinFile& f = k.file;
  const int64_t bad = first_noncanonical(k, points);
  if (bad < 0) return;
  const int64_t per_point = g2 ? 4 : 2;
  const char* coord = g2 ? kG2Coords[bad % per_point] : kG1Coords[bad % per_point];
  f.fail(section, "point " + std::to_string(bad / per_point) + " (" + coord +
                      "): coordinate not canonical (>= q)");
}

// Same for one named point of section 2.
void check_named_point(const Zkey& k, const char* name, const uint8_t* p, bool g2) {
  const BinFile& f = k.file;
  const int64_t bad = first_noncanonical(k, {p, g2 ? k.g2_bytes : k.g1_bytes});
  if (bad < 0) return;
  const char* coord = g2 ? kG2Coords[bad] : kG1Coords[bad];
  f.fail(2, std::string(name) + " (" + coord + "): coordinate not canonical (>= q)");
}

[[noreturn]] void wrong_curve(const BinFile& f, const std::string& what) {
  f.fail(2, "wrong curve: key is over " + what + ", zkfarm supports " + curve_names(Curves{}));
}

// Section 2 up to and including r: which curve the key is over. This comes
// before the size check, so that a key over a curve zkfarm does not know
// says "wrong curve" rather than "wrong size".
CurveId check_curve(const BinFile& f) {
  SectionReader rd(f, 2);
  // The primes themselves are never printed (errors.hpp): their sizes, and
  // which one differs, say enough.
  const uint32_t n8q = rd.u32("n8q");
  const CurvePrimes* curve = nullptr;
  for (const CurvePrimes& c : known_curves())
    if (c.n8q == n8q) curve = &c;
  if (!curve) wrong_curve(f, "a base field of " + std::to_string(n8q) + " bytes");
  const std::string known = std::string(curve_name(curve->id)) + "'s";
  if (!le_limbs_equal(rd.bytes(n8q, "q"), curve->q)) {
    wrong_curve(f, "a " + std::to_string(n8q) + "-byte base field whose q is not " + known);
  }
  const uint32_t n8r = rd.u32("n8r");
  if (n8r != kFrBytes) wrong_curve(f, "a scalar field of " + std::to_string(n8r) + " bytes");
  if (!le_limbs_equal(rd.bytes(kFrBytes, "r"), curve->r)) {
    wrong_curve(f, "a 32-byte scalar field whose r is not " + known);
  }
  return curve->id;
}

void check_coefficients(const Zkey& k) {
  const BinFile& f = k.file;
  auto record = [&](uint64_t i) { return k.coeffs.data() + i * kCoeffRecordBytes; };
  const uint64_t* r = curve_primes(k.curve).r;
  const int64_t bad = first_bad(k.n_coeffs, [&](uint64_t i) {
    const uint8_t* rec = record(i);
    return read_u32(rec) > 1 || read_u32(rec + 4) >= k.domain_size || read_u32(rec + 8) >= k.n_vars ||
           !le_limbs_less(rec + 12, r, 4);
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

  k.curve = check_curve(f);
  k.fq_bytes = curve_primes(k.curve).n8q;
  k.g1_bytes = 2 * k.fq_bytes;
  k.g2_bytes = 4 * k.fq_bytes;
  expect_size(f, 2, header_section_bytes(k.fq_bytes),
              "header with " + std::to_string(k.fq_bytes) + "-byte q and 32-byte r");
  SectionReader hdr(f, 2);
  hdr.bytes(4 + k.fq_bytes + 4 + kFrBytes, "n8q, q, n8r, r");  // checked by check_curve
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
    *p.dst = hdr.bytes(p.g2 ? k.g2_bytes : k.g1_bytes, p.name).data();
    check_named_point(k, p.name, *p.dst, p.g2);
  }

  // Sizes of sections 3..9 from the header, all in 64-bit: nVars * 128 < 2^39.
  const uint64_t n_vars = k.n_vars;
  const uint64_t n_ic = uint64_t{k.n_public} + 1;
  const uint64_t n_c = n_vars - n_ic;
  const uint64_t g1 = k.g1_bytes, g2 = k.g2_bytes;
  const std::string of_g1 = " G1 points of " + std::to_string(g1) + " bytes";
  const std::string of_g2 = " G2 points of " + std::to_string(g2) + " bytes";
  expect_size(f, 3, n_ic * g1, "IC: nPublic+1 = " + std::to_string(n_ic) + of_g1);

  SectionReader coefs(f, 4);
  k.n_coeffs = coefs.u32("nCoefs");
  expect_size(f, 4, 4 + uint64_t{k.n_coeffs} * kCoeffRecordBytes,
              "u32 count and " + std::to_string(k.n_coeffs) + " coefficient records of 44 bytes");
  k.coeffs = coefs.bytes(uint64_t{k.n_coeffs} * kCoeffRecordBytes, "coefficient records");

  const std::string vars = std::to_string(n_vars);
  expect_size(f, 5, n_vars * g1, "A: nVars " + vars + of_g1);
  expect_size(f, 6, n_vars * g1, "B1: nVars " + vars + of_g1);
  expect_size(f, 7, n_vars * g2, "B2: nVars " + vars + of_g2);
  expect_size(f, 8, n_c * g1, "C: nVars-nPublic-1 = " + std::to_string(n_c) + of_g1);
  expect_size(f, 9, uint64_t{k.domain_size} * g1, "H: domainSize " + std::to_string(k.domain_size) + of_g1);

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
  check_points(*this, 3, ic, false);
  check_points(*this, 5, a, false);
  check_points(*this, 6, b1, false);
  check_points(*this, 7, b2, true);
  check_points(*this, 8, c, false);
  check_points(*this, 9, h, false);
}

}  // namespace zkfarm
