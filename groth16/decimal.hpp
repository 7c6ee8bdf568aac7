#pragma once
// Decimal text of 256-bit integers, as snarkjs writes field elements in
// proof.json and public.json ("123…", no sign, no leading zeros, "0" for zero).
#include <optional>
#include <string>
#include <string_view>

#include "groth16/field.hpp"

namespace zkfarm {

/// Decimal digits of x.
std::string to_decimal(const U256& x);

/// Parses 1..78 decimal digits; nullopt on any other character or a value ≥ 2^256.
std::optional<U256> parse_decimal(std::string_view s);

}  // namespace zkfarm
