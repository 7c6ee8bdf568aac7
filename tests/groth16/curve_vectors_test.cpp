// Both curves' fields, Fq2 and groups against known answers from independent
// plain-Python references (tests/vectors/bn254.txt from bn254_ref.py,
// bls12_381.txt from bls12_381_ref.py; tests/vectors/README.md): one typed
// test per operation, run for every curve zkfarm knows.
#include <gtest/gtest.h>


#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "groth16/roots.hpp"
#include "test_util.hpp"
#include "vector_file.hpp"

namespace zkfarm {
namespace {

/// Up to 384 bits, from decimal (the vectors' numbers).
using Big = Limbs<6>;

Big parse_big(const std::string& s) {
  Big x{};
  for (char ch : s) {
    if (ch < '0' || ch > '9') throw std::runtime_error("bad decimal in vectors: " + s);
    u128 carry = uint64_t(ch - '0');
    for (auto& limb : x) {
      const u128 t = u128(limb) * 10 + carry;
      limb = uint64_t(t);
      carry = t >> 64;
    }
    if (carry) throw std::runtime_error("number over 384 bits in vectors: " + s);
  }
  return x;
}

/// The low M limbs of x; the rest must be zero.
template <size_t M>
Limbs<M> narrow(const Big& x) {
  Limbs<M> r{};
  for (size_t i = 0; i < 6; ++i) {
    if (i < M) r[i] = x[i];
    else if (x[i]) throw std::runtime_error("a vector's number is wider than its field");
  }
  return r;
}

template <size_t M>
Big widen(const Limbs<M>& x) {
  Big r{};
  for (size_t i = 0; i < M; ++i) r[i] = x[i];
  return r;
}

using Vectors = test::VectorFile<Big>;

template <class C>
const Vectors& vectors_of() {
  static Vectors v(std::string(C::kName) == "bn128" ? "bn254.txt" : "bls12_381.txt", parse_big);
  return v;
}

template <class C>
class CurveVectors : public ::testing::Test {
 protected:
  using Fq = typename C::Fq;
  using Fr = typename C::Fr;
  using Fq2 = typename C::Fq2;
  using G1Affine = Affine<typename C::G1Params>;
  using G2Affine = Affine<typename C::G2Params>;
  using G1 = Xyzz<typename C::G1Params>;
  using G2 = Xyzz<typename C::G2Params>;

  static const Vectors& v() { return vectors_of<C>(); }

  template <class F>
  static F el(const Big& x) {
    return F::from_int(narrow<F::N>(x));
  }
  template <class F>
  static Big val(const F& x) {
    return widen(x.to_int());
  }
  static Fq2 fq2(const std::vector<Big>& r, size_t at) { return {el<Fq>(r[at]), el<Fq>(r[at + 1])}; }
  static G1Affine g1(const std::vector<Big>& r, size_t at) { return {el<Fq>(r[at]), el<Fq>(r[at + 1])}; }
  static G2Affine g2(const std::vector<Big>& r, size_t at) { return {fq2(r, at), fq2(r, at + 2)}; }
  static void expect_g1(const G1& p, const std::vector<Big>& r, size_t at) {
    const G1Affine a = p.to_affine();
    EXPECT_EQ(val(a.x), r[at]);
    EXPECT_EQ(val(a.y), r[at + 1]);
  }
  static void expect_g2(const G2& p, const std::vector<Big>& r, size_t at) {
    const G2Affine a = p.to_affine();
    EXPECT_EQ(val(a.x.c0), r[at]);
    EXPECT_EQ(val(a.x.c1), r[at + 1]);
    EXPECT_EQ(val(a.y.c0), r[at + 2]);
    EXPECT_EQ(val(a.y.c1), r[at + 3]);
  }

  template <class F>
  static void check_field(const std::string& prefix) {
    for (auto& r : v().get(prefix + "_mul")) EXPECT_EQ(val(el<F>(r[0]) * el<F>(r[1])), r[2]);
    for (auto& r : v().get(prefix + "_mul")) EXPECT_EQ(val(F::mul_portable(el<F>(r[0]), el<F>(r[1]))), r[2]);
    for (auto& r : v().get(prefix + "_add")) EXPECT_EQ(val(el<F>(r[0]) + el<F>(r[1])), r[2]);
    for (auto& r : v().get(prefix + "_sub")) EXPECT_EQ(val(el<F>(r[0]) - el<F>(r[1])), r[2]);
    for (auto& r : v().get(prefix + "_sqr")) EXPECT_EQ(val(el<F>(r[0]).sqr()), r[1]);
    for (auto& r : v().get(prefix + "_inv")) EXPECT_EQ(val(el<F>(r[0]).inv()), r[1]);
    for (auto& r : v().get(prefix + "_mont")) EXPECT_EQ(widen(el<F>(r[0]).mont()), r[1]);
    for (auto& r : v().get(prefix + "_add")) EXPECT_EQ(is_canonical<typename F::Params>(narrow<F::N>(r[2])), true);
  }
};

using TestedCurves = ::testing::Types<Bn254, bls12_381::Curve>;
struct CurveName {
  template <class C>
  static std::string GetName(int) {
    return C::kName;  // snarkjs's: bn128, bls12381
  }
};
TYPED_TEST_SUITE(CurveVectors, TestedCurves, CurveName);

TYPED_TEST(CurveVectors, FqAndFrMatchPython) {
  TestFixture::template check_field<typename TestFixture::Fq>("fq");
  TestFixture::template check_field<typename TestFixture::Fr>("fr");
}

TYPED_TEST(CurveVectors, Fq2MatchesPython) {
  using T = TestFixture;
  for (auto& r : T::v().get("fq2_mul")) {
    auto c = T::fq2(r, 0) * T::fq2(r, 2);
    EXPECT_EQ(T::val(c.c0), r[4]);
    EXPECT_EQ(T::val(c.c1), r[5]);
  }
  for (auto& r : T::v().get("fq2_sqr")) {
    auto c = T::fq2(r, 0).sqr();
    EXPECT_EQ(T::val(c.c0), r[2]);
    EXPECT_EQ(T::val(c.c1), r[3]);
  }
  for (auto& r : T::v().get("fq2_inv")) {
    auto c = T::fq2(r, 0).inv();
    EXPECT_EQ(T::val(c.c0), r[2]);
    EXPECT_EQ(T::val(c.c1), r[3]);
  }
}

TYPED_TEST(CurveVectors, G1MatchesPython) {
  using T = TestFixture;
  using G1 = typename T::G1;
  for (auto& r : T::v().get("g1_add")) {
    G1 p = G1::from_affine(T::g1(r, 0));
    G1 mixed = p;
    mixed.add_affine(T::g1(r, 2));
    T::expect_g1(mixed, r, 4);
    p.add(G1::from_affine(T::g1(r, 2)));
    T::expect_g1(p, r, 4);
  }
  for (auto& r : T::v().get("g1_dbl")) {
    T::expect_g1(G1::from_affine(T::g1(r, 0)).dbl(), r, 2);
    G1 same = G1::from_affine(T::g1(r, 0));  // P + P through the mixed addition's doubling case
    same.add_affine(T::g1(r, 0));
    T::expect_g1(same, r, 2);
  }
  for (auto& r : T::v().get("g1_neg")) T::expect_g1(G1::from_affine(-T::g1(r, 0)), r, 2);
  for (auto& r : T::v().get("g1_mul")) T::expect_g1(G1::from_affine(T::g1(r, 0)).mul(narrow<4>(r[2])), r, 3);
}

TYPED_TEST(CurveVectors, G2MatchesPython) {
  using T = TestFixture;
  using G2 = typename T::G2;
  for (auto& r : T::v().get("g2_add")) {
    G2 p = G2::from_affine(T::g2(r, 0));
    G2 mixed = p;
    mixed.add_affine(T::g2(r, 4));
    T::expect_g2(mixed, r, 8);
    p.add(G2::from_affine(T::g2(r, 4)));
    T::expect_g2(p, r, 8);
  }
  for (auto& r : T::v().get("g2_dbl")) T::expect_g2(G2::from_affine(T::g2(r, 0)).dbl(), r, 4);
  for (auto& r : T::v().get("g2_neg")) T::expect_g2(G2::from_affine(-T::g2(r, 0)), r, 4);
  for (auto& r : T::v().get("g2_mul")) T::expect_g2(G2::from_affine(T::g2(r, 0)).mul(narrow<4>(r[4])), r, 5);
}

// The traits' generators: on their curves, of order r (r·G = O, (r−1)·G = −G).
TYPED_TEST(CurveVectors, GeneratorsHaveOrderR) {
  using T = TestFixture;
  const auto r = T::Fr::modulus();
  auto r_minus_1 = r;
  r_minus_1[0] -= 1;
  const auto g1 = TypeParam::g1_generator();
  const auto g2 = TypeParam::g2_generator();
  EXPECT_TRUE(g1.on_curve());
  EXPECT_TRUE(g2.on_curve());
  EXPECT_TRUE(T::G1::from_affine(g1).mul(r).is_infinity());
  EXPECT_TRUE(T::G2::from_affine(g2).mul(r).is_infinity());
  EXPECT_TRUE(T::G1::from_affine(g1).mul(r_minus_1).equals(T::G1::from_affine(-g1)));
  EXPECT_TRUE(T::G2::from_affine(g2).mul(r_minus_1).equals(T::G2::from_affine(-g2)));
  // The vectors' first G1 point is the generator (make_vectors.py): the traits agree with Python.
  const auto first = T::v().get("g1_neg")[1];
  EXPECT_EQ(T::val(g1.x), first[0]);
  EXPECT_EQ(T::val(g1.y), first[1]);
}

// A point loads from and stores to the zkey's bytes: 2·n8q for G1, 4·n8q for G2.
TYPED_TEST(CurveVectors, PointsRoundTripThroughTheirBytes) {
  using T = TestFixture;
  std::vector<uint8_t> b1(TypeParam::kG1Bytes), b2(TypeParam::kG2Bytes);
  const auto g1 = TypeParam::g1_generator();
  const auto g2 = TypeParam::g2_generator();
  g1.store(b1.data());
  g2.store(b2.data());
  EXPECT_TRUE(T::G1Affine::load(b1.data()) == g1);
  EXPECT_TRUE(T::G2Affine::load(b2.data()) == g2);
  EXPECT_EQ(TypeParam::kG1Bytes, 2 * T::Fq::kBytes);
}

// snarkjs's roots of unity and odd-coset shifts for every domain size.
TYPED_TEST(CurveVectors, RootsOfUnityMatchSnarkjs) {
  using T = TestFixture;
  for (auto& r : T::v().get("fr_root")) EXPECT_EQ(T::val(root_of_unity_of<TypeParam>(uint32_t(r[0][0]))), r[1]);
  for (auto& r : T::v().get("fr_coset_gen"))
    EXPECT_EQ(T::val(odd_coset_generator_of<TypeParam>(uint32_t(r[0][0]))), r[1]);
  EXPECT_EQ(T::v().get("fr_root").size(), TypeParam::kTwoAdicity + 1);
  EXPECT_THROW(root_of_unity_of<TypeParam>(TypeParam::kTwoAdicity + 1), std::invalid_argument);
}

}  // namespace
}  // namespace zkfarm
