#pragma once
// Helpers shared by the tests: fixture paths, random field elements and points.
#include <stdlib.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "groth16/bn254.hpp"
#include "groth16/decimal.hpp"
#include "random_inputs.hpp"

namespace zkfarm::test {

/// A fresh folder under the temp dir, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "zkfarm-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

/// A whole file's bytes ("" if it cannot be read).
inline std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A file of ../shared/fixtures: from $ZKFARM_SHARED_FIXTURES when set (a
/// GPU machine gets the fixtures in scripts/gpu-pack.sh's folder), else the
/// path the build was configured with.
inline std::string shared_fixture(const std::string& name) {
  const char* env = std::getenv("ZKFARM_SHARED_FIXTURES");
  return std::string(env && *env ? env : ZKFARM_SHARED_FIXTURES) + "/" + name;
}
/// A file of this checkout: under $ZKFARM_SOURCE_DIR when set (a packed test
/// binary on a machine where the checkout sits elsewhere: scripts/gpu-pack.sh),
/// else under the path the build was configured with.
inline std::string repo_path(const std::string& rel) {
  const char* env = std::getenv("ZKFARM_SOURCE_DIR");
  return std::string(env && *env ? env : ZKFARM_SOURCE_DIR) + "/" + rel;
}

inline U256 dec(const std::string& s) {
  auto v = parse_decimal(s);
  if (!v) throw std::runtime_error("bad decimal in test: " + s);
  return *v;
}

inline G1Affine g1_generator() { return Bn254::g1_generator(); }
inline G2Affine g2_generator() { return Bn254::g2_generator(); }

/// n points and scalars for MSM tests: every 9th point infinity, others
/// repeated or opposite of earlier ones; scalars 0, 1, r − 1, 16-bit and random.
template <class C>
struct MsmCase {
  std::vector<uint8_t> points;
  std::vector<U256> scalars;
};

/// n points (multiples of gen, infinity, repeats, opposites) and scalars
/// below FrP's r (0, 1, r − 1, small, values just below r, random < 2^253).
template <class C, class FrP = FrParams>
MsmCase<C> make_msm_case(size_t n, const Affine<C>& gen, std::mt19937_64& rng) {
  constexpr size_t stride = sizeof(Affine<C>);
  MsmCase<C> c;
  c.points.resize(n * stride);
  c.scalars.resize(n);
  const U256 r_minus_1{FrP::kModulus[0] - 1, FrP::kModulus[1], FrP::kModulus[2], FrP::kModulus[3]};
  for (size_t i = 0; i < n; ++i) {
    Affine<C> p;
    switch (i % 9) {
      case 3: p = Affine<C>::infinity(); break;                                        // infinity
      case 5: p = i >= 5 ? Affine<C>::load(&c.points[(i - 5) * stride]) : gen; break;   // repeated point
      case 7: p = -(i >= 1 ? Affine<C>::load(&c.points[(i - 1) * stride]) : gen); break;  // opposite
      default: p = Xyzz<C>::from_affine(gen).mul(test::random_scalar(rng)).to_affine();
    }
    p.store(&c.points[i * stride]);
    switch (i % 7) {
      case 0: c.scalars[i] = U256{0, 0, 0, 0}; break;
      case 1: c.scalars[i] = U256{1, 0, 0, 0}; break;
      case 2: c.scalars[i] = r_minus_1; break;
      case 4: c.scalars[i] = U256{rng() & 0xffff, 0, 0, 0}; break;
      case 6: c.scalars[i] = r_minus_1, c.scalars[i][0] -= rng() & 0xffffffff; break;  // top bits set
      default: c.scalars[i] = test::random_scalar(rng);
    }
  }
  return c;
}

}  // namespace zkfarm::test
