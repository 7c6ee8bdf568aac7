// The one curve dispatch (groth16/curve_list.hpp): with_curve reaches each
// curve of Curves by its id, throws for an id of none (never a default), and
// the tables made from the list agree with the curves' own constants.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "groth16/curve_list.hpp"
#include "groth16/curves.hpp"
#include "groth16/proof_codec.hpp"

namespace zkfarm {
namespace {

TEST(CurveList, WithCurveReachesEachCurveByItsId) {
  size_t seen = 0;
  for_each_curve([&]<class C>(std::type_identity<C>) {
    ++seen;
    const std::string name = with_curve(C::kId, []<class D>(std::type_identity<D>) { return std::string(D::kName); });
    EXPECT_EQ(name, C::kName);
    EXPECT_EQ(curve_id_of_name(C::kName), C::kId);
    EXPECT_STREQ(curve_name(C::kId), C::kName);
    EXPECT_EQ(curve_primes(C::kId).n8q, C::Fq::kBytes);
    EXPECT_EQ(proof_curve(kProofBytesOf<C>), C::kId);
  });
  EXPECT_EQ(seen, Curves::kSize);
  EXPECT_EQ(known_curves().size(), Curves::kSize);
  EXPECT_TRUE((std::is_same_v<Curves, CurveList<Bn254, bls12_381::Curve>>));
}

TEST(CurveList, UnknownIdThrowsInsteadOfDefaulting) {
  const auto bad = CurveId(200);
  bool called = false;
  EXPECT_THROW(with_curve(bad, [&]<class C>(std::type_identity<C>) { called = true; }), UnknownCurve);
  EXPECT_FALSE(called);
  EXPECT_THROW(curve_primes(bad), UnknownCurve);
  EXPECT_STREQ(curve_name(bad), "unknown");
  EXPECT_FALSE(curve_id_of_name("secp256k1").has_value());
  try {
    with_curve(bad, []<class C>(std::type_identity<C>) {});
  } catch (const UnknownCurve& e) {
    EXPECT_EQ(std::string(e.what()), "unknown curve id 200 (this build knows bn128, bls12381)");
  }
}

}  // namespace
}  // namespace zkfarm
