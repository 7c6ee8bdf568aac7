#pragma once
// The curves zkfarm proves, as one type list, and the one place where a curve
// known at run time (CurveId: a key's header, a proof's size) becomes the
// traits type every template takes (bn254.hpp's Bn254, bls12_381.hpp's
// bls12_381::Curve). Every caller dispatches through with_curve, so adding a
// curve to `Curves` reaches all of them, and an id without a curve throws
// instead of falling through to one of them.
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "groth16/curve_id.hpp"

namespace zkfarm {

/// A list of curve-traits types (each with kId, kName, Fq, Fr, G1Params, …).
template <class... Cs>
struct CurveList {
  static constexpr size_t kSize = sizeof...(Cs);
  /// std::variant<T<C>...>, e.g. Variant<ProofOf>: a value of any curve's type.
  template <template <class> class T>
  using Variant = std::variant<T<Cs>...>;
};

/// Every curve zkfarm knows, BN254 first (tables list curves in this order).
using Curves = CurveList<Bn254, bls12_381::Curve>;

/// Applies the macro M to every curve of Curves, in the same order. The
/// templates defined in .cpp files (prover, ntt, constraint_matrix,
/// proof_json, pairing, verify, proof_codec) instantiate themselves with it,
/// so a new curve is named here, in Curves and this list, and nowhere else
/// in the prover library. The static_assert below holds the two together.
#define ZKFARM_FOR_EACH_CURVE(M) M(Bn254) M(bls12_381::Curve)

namespace detail {
template <class List, class Last>
struct Append;
template <class... Cs, class Last>
struct Append<CurveList<Cs...>, Last> {
  using type = CurveList<Cs..., Last>;
};
#define ZKFARM_CURVE_AND_COMMA(C) C,
static_assert(std::is_same_v<CurveList<ZKFARM_FOR_EACH_CURVE(ZKFARM_CURVE_AND_COMMA) void>,
                             typename Append<Curves, void>::type>,
              "ZKFARM_FOR_EACH_CURVE must list the curves of Curves, in order");
#undef ZKFARM_CURVE_AND_COMMA
}  // namespace detail
/// The curve a tool takes when none is named (snarkjs's and circom's default).
using DefaultCurve = Bn254;

/// The names of a list's curves, "bn128, bls12381" (for messages).
template <class... Cs>
std::string curve_names(CurveList<Cs...>) {
  std::string s;
  ((s += s.empty() ? "" : ", ", s += Cs::kName), ...);
  return s;
}

/// What with_curve throws for an id that no curve in Curves has (a value cast
/// from a corrupt or newer byte; the formats themselves only make known ids).
class UnknownCurve : public std::invalid_argument {
 public:
  explicit UnknownCurve(CurveId id)
      : std::invalid_argument("unknown curve id " + std::to_string(unsigned(id)) +
                              " (this build knows " + curve_names(Curves{}) + ")") {}
};

namespace detail {

template <class F, class C, class... Rest>
decltype(auto) with_curve_in(CurveId id, F&& f) {
  if (id == C::kId) return std::forward<F>(f)(std::type_identity<C>{});
  if constexpr (sizeof...(Rest) == 0) throw UnknownCurve(id);
  else return with_curve_in<F, Rest...>(id, std::forward<F>(f));
}

template <class F, class... Cs>
decltype(auto) with_curve_list(CurveList<Cs...>, CurveId id, F&& f) {
  using R = decltype(std::forward<F>(f)(std::type_identity<typename std::tuple_element<0, std::tuple<Cs...>>::type>{}));
  static_assert((std::is_same_v<R, decltype(std::forward<F>(f)(std::type_identity<Cs>{}))> && ...),
                "with_curve: the visitor must return the same type for every curve");
  return with_curve_in<F, Cs...>(id, std::forward<F>(f));
}

}  // namespace detail

/// Calls f(std::type_identity<C>{}) for the curve C of Curves whose C::kId is
/// `id`, and returns what it returns (the same type for every curve):
///   with_curve(key.curve, [&]<class C>(std::type_identity<C>) { return prove<C>(…); });
/// Throws UnknownCurve when no curve has that id; never picks a default.
template <class F>
decltype(auto) with_curve(CurveId id, F&& f) {
  return detail::with_curve_list(Curves{}, id, std::forward<F>(f));
}

/// Calls f(std::type_identity<C>{}) for every curve of Curves, in order.
template <class F>
void for_each_curve(F&& f) {
  [&]<class... Cs>(CurveList<Cs...>) { (f(std::type_identity<Cs>{}), ...); }(Curves{});
}

/// The id of the curve snarkjs calls `name` ("bn128", "bls12381": C::kName),
/// or nullopt for a name of no curve.
inline std::optional<CurveId> curve_id_of_name(std::string_view name) {
  std::optional<CurveId> id;
  for_each_curve([&]<class C>(std::type_identity<C>) {
    if (name == C::kName) id = C::kId;
  });
  return id;
}

}  // namespace zkfarm
