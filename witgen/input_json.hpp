#pragma once
// A circom input file (input.json) read the way snarkjs's `wtns calculate`
// reads it, but strictly: every value must be a field element, written so
// that it cannot change meaning on its way in. Used by both witness
// generator hosts (wasm_host.cpp, native_main.cpp), so a circuit's inputs
// are judged the same way whichever generator runs it.
//
// Format (circom_runtime's witness_calculator.js and snarkjs's
// unstringifyBigInts): a JSON object; each key names an input signal of the
// main component (`in`, `a.b` for a bus field); its value is one value or an
// array of them, nested arrays flattened in order. A value is
//   - a JSON integer of at most 2^53 in magnitude (JavaScript's exact range;
//     larger numbers lose digits in JSON.parse, so they must be strings), or
//     a JSON number with no fraction (3.0);
//   - a string: decimal with an optional '-', or 0x/0X (hex), 0o/0O (octal),
//     0b/0B (binary) digits, no spaces, at least one digit;
// and its magnitude must be below the prime p. A negative v becomes p - |v|
// (snarkjs's normalize()). What snarkjs would also take but zkfarm refuses,
// naming the signal and the value: fractions, booleans (true would be 1),
// null, nested objects, the empty string (snarkjs: 0), and values of p or
// more (snarkjs reduces them mod p: an input that silently wraps is almost
// always a bug).
#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace zkfarm::witgen {

/// A fault of the input file: what() names the signal and the fault, never
/// more than 80 characters of the offending value.
struct InputFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One input signal of the file: its name, circom's 64-bit FNV-1a hash of the
/// name (the key of the circuit's input hash map), and its values, each as
/// n8 little-endian bytes of the canonical residue in [0, p).
struct InputSignal {
  std::string name;
  uint64_t hash = 0;
  std::vector<std::vector<uint8_t>> values;
};

/// circom's FNV-1a 64 of a signal name (calcwit.cpp's fnv1a, utils.js's fnvHash).
uint64_t fnv1a(std::string_view s);

/// Bounds on one input file beyond its size in bytes (which the caller caps).
/// The defaults bound nothing: a generator parses its one input inside its
/// own memory limit; zkfarmd, which checks every input of every submit in
/// its own process, sets them (input_max_signals, input_max_values).
struct InputLimits {
  uint64_t max_signals = UINT64_MAX;  ///< distinct top-level keys
  uint64_t max_values = UINT64_MAX;   ///< values over all signals, arrays flattened
  /// Read every few thousand tokens; true stops the parse with an InputFault
  /// (a submit whose check passed its deadline stops instead of running on).
  const std::atomic<bool>* cancel = nullptr;
};

/// One signal of an input file as check_input saw it: no values, their count.
struct SignalCount {
  std::string name;
  uint64_t hash = 0;    ///< fnv1a(name)
  uint64_t values = 0;  ///< arrays flattened
};

/// What check_input found.
struct InputSummary {
  uint64_t signals = 0;  ///< distinct signal names
  uint64_t values = 0;   ///< values over all signals
  std::vector<SignalCount> per_signal;  ///< in the file's order (a repeated name: its last values' count)
};

/// One input signal of a circuit: the hash of its name (circom's input hash
/// map holds hashes, not names) and its number of values, arrays flattened.
struct SignalShape {
  uint64_t hash = 0;
  uint32_t size = 0;
  /// The witness index of its first value (the rest follow), as the
  /// generator's own signal map says (its input hash map's signal id, through
  /// the witness-to-signal list for native code); 0 when not known (a
  /// generator built before it said so). JSON "at".
  uint32_t at = 0;
};

/// Checks the signals an input file sets against the circuit's inputs:
/// `size_of(hash)` is the circuit's number of values for that input, nullopt
/// when it has none of that name; `input_count` all its input values. Throws
/// InputFault with the generators' own words: "signal z is not an input of
/// the circuit", "signal b has 3 values, the circuit's has 2", "the input sets
/// 3 of the circuit's 4 input values: a signal is missing". Used by the
/// generators (generator_host.hpp) and by zkfarmd at submit, so both say the
/// same thing of one file.
void check_signals(const std::vector<SignalCount>& given, const std::function<std::optional<uint32_t>(uint64_t)>& size_of,
                   uint64_t input_count);

/// The circuit's inputs as `GENERATOR --info` prints them:
/// [{"hash":"0123456789abcdef","size":2},...] (the hash as 16 hex digits:
/// JSON numbers past 2^53 lose digits in many readers).
std::string signal_shapes_json(const std::vector<SignalShape>& shapes);
/// The reverse; throws std::runtime_error (nlohmann's, or its own) on anything else.
std::vector<SignalShape> signal_shapes_from_json(std::string_view text);

/// Parses `text` (the whole input file) against prime `prime_le` (n8 bytes,
/// little-endian, as a .wtns header holds it). Signals come in the file's
/// order; a repeated name keeps its first place and its last values (as
/// JSON.parse does). One pass over the text with nlohmann's SAX parser (no
/// document tree): time linear in the text's length, memory the values kept
/// (n8 bytes each plus a vector's overhead) and the names. Throws InputFault:
/// not JSON (with the byte offset), nested deeper than 64 levels, not an
/// object, an empty key, a value that is not a field element (which one, and
/// why), past a limit of `limits`, or stopped by its `cancel`.
std::vector<InputSignal> parse_input(std::string_view text, const std::vector<uint8_t>& prime_le,
                                     const InputLimits& limits = {});

/// The same checks as parse_input, keeping no value: memory is the nesting
/// depth and the signals' names only, whatever the number of values. What
/// zkfarmd runs on every input at submit. Throws InputFault.
InputSummary check_input(std::string_view text, const std::vector<uint8_t>& prime_le, const InputLimits& limits);
/// The same, reading the text from `in` as it goes (zkfarmd holds no copy of
/// a file in memory: memory stays the depth plus the names).
InputSummary check_input(std::istream& in, const std::vector<uint8_t>& prime_le, const InputLimits& limits);

/// The decimal digits of a little-endian byte string (for messages and for
/// circom's Fr_str2element).
std::string to_decimal(const std::vector<uint8_t>& le);

}  // namespace zkfarm::witgen
