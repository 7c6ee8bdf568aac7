#pragma once
// CLI11 validators for the programs' numbers (zkfarmctl's and zkfarmd's
// flags). CLI11 2.1 reads an unsigned
// option with strtoull, base 0: "-5" wraps to 18446744073709551611, "010"
// is eight, "0x10" sixteen. These take plain decimal only, within bounds,
// and say which bounds when they refuse.
#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

namespace zkfarm::cli {

/// A whole number in decimal digits (no sign, no prefix), from `min` to `max`.
inline CLI::Validator whole_number(uint64_t min, uint64_t max) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& in) -> std::string {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(in.data(), in.data() + in.size(), v);
        if (in.empty() || in[0] == '+' || ec != std::errc() || end != in.data() + in.size() || v < min || v > max)
          return "expected a whole number in " + range + ", not " + in;
        return "";
      },
      "UINT in " + range, "whole_number");
}

/// Seconds: a finite decimal number from 0 to `max` (fractions allowed).
inline CLI::Validator seconds_upto(double max) {
  return CLI::Validator(
      [max](std::string& in) -> std::string {
        try {
          size_t used = 0;
          const double v = std::stod(in, &used);
          if (used == in.size() && std::isfinite(v) && v >= 0 && v <= max) return "";
        } catch (const std::exception&) {
        }
        return "expected seconds from 0 to " + std::to_string(uint64_t(max)) + ", not " + in;
      },
      "SECONDS", "seconds_upto");
}

}  // namespace zkfarm::cli
