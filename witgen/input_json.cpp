#include "witgen/input_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

namespace zkfarm::witgen {

namespace {

// ordered_json: signals in the file's order (duplicate keys: the last wins, as in JSON.parse).
using json = nlohmann::ordered_json;

// Nested arrays deeper than this are refused before parsing (nlohmann's
// parser recurses; a file of a million '[' would overflow the stack).
constexpr int kMaxDepth = 64;

// A natural number as little-endian 32-bit limbs, without leading zero limbs.
struct Nat {
  std::vector<uint32_t> limbs;

  void mul_add(uint32_t m, uint32_t a) {
    uint64_t carry = a;
    for (auto& l : limbs) {
      const uint64_t t = uint64_t(l) * m + carry;
      l = uint32_t(t);
      carry = t >> 32;
    }
    if (carry) limbs.push_back(uint32_t(carry));
  }
  static Nat from_le(const std::vector<uint8_t>& b) {
    Nat n;
    n.limbs.assign((b.size() + 3) / 4, 0);
    for (size_t i = 0; i < b.size(); ++i) n.limbs[i / 4] |= uint32_t(b[i]) << (8 * (i % 4));
    n.trim();
    return n;
  }
  void trim() {
    while (!limbs.empty() && limbs.back() == 0) limbs.pop_back();
  }
  bool zero() const { return limbs.empty(); }
  // -1, 0, 1
  static int cmp(const Nat& a, const Nat& b) {
    if (a.limbs.size() != b.limbs.size()) return a.limbs.size() < b.limbs.size() ? -1 : 1;
    for (size_t i = a.limbs.size(); i-- > 0;)
      if (a.limbs[i] != b.limbs[i]) return a.limbs[i] < b.limbs[i] ? -1 : 1;
    return 0;
  }
  // a - b, a >= b
  static Nat sub(const Nat& a, const Nat& b) {
    Nat r = a;
    int64_t borrow = 0;
    for (size_t i = 0; i < r.limbs.size(); ++i) {
      int64_t t = int64_t(r.limbs[i]) - borrow - (i < b.limbs.size() ? int64_t(b.limbs[i]) : 0);
      borrow = t < 0;
      r.limbs[i] = uint32_t(t + (borrow << 32));
    }
    r.trim();
    return r;
  }
  std::vector<uint8_t> to_le(size_t n8) const {
    std::vector<uint8_t> out(n8, 0);
    for (size_t i = 0; i < limbs.size() * 4 && i < n8; ++i) out[i] = uint8_t(limbs[i / 4] >> (8 * (i % 4)));
    return out;
  }
};

std::string shorten(const std::string& v) { return v.size() <= 80 ? v : v.substr(0, 77) + "..."; }

// Digits of `s` in `base` into a Nat, or nullopt if any character is not a digit of it.
std::optional<Nat> digits(std::string_view s, uint32_t base, size_t max_bits) {
  if (s.empty()) return std::nullopt;
  Nat n;
  for (char c : s) {
    uint32_t d;
    if (c >= '0' && c <= '9') d = uint32_t(c - '0');
    else if (c >= 'a' && c <= 'f') d = uint32_t(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = uint32_t(c - 'A' + 10);
    else return std::nullopt;
    if (d >= base) return std::nullopt;
    n.mul_add(base, d);
    if (n.limbs.size() * 32 > max_bits + 64) return n;  // already far past p: stop growing
  }
  n.trim();
  return n;
}

std::vector<uint8_t> field_value(const json& v, const Nat& p, size_t n8, const std::string& where) {
  auto fault = [&](const std::string& why) {
    return InputFault(where + " = " + shorten(v.dump(-1, ' ', false, json::error_handler_t::replace)) + ": " + why);
  };
  bool negative = false;
  Nat n;
  if (v.is_number_integer()) {
    // Within JavaScript's exact range: what snarkjs's JSON.parse would keep.
    const bool is_unsigned = v.is_number_unsigned();
    const uint64_t mag = is_unsigned ? v.get<uint64_t>()
                                     : (v.get<int64_t>() < 0 ? uint64_t(-(v.get<int64_t>() + 1)) + 1 : uint64_t(v.get<int64_t>()));
    negative = !is_unsigned && v.get<int64_t>() < 0;
    if (mag > (uint64_t(1) << 53))
      throw fault("a JSON number beyond 2^53 loses digits in JavaScript; write it as a string");
    n.limbs = {uint32_t(mag), uint32_t(mag >> 32)};
    n.trim();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) throw fault("not an integer");
    if (std::fabs(d) > 9007199254740992.0)
      throw fault("a JSON number beyond 2^53 loses digits in JavaScript; write it as a string");
    negative = d < 0;
    const uint64_t mag = uint64_t(std::fabs(d));
    n.limbs = {uint32_t(mag), uint32_t(mag >> 32)};
    n.trim();
  } else if (v.is_string()) {
    std::string_view s = v.get_ref<const std::string&>();
    uint32_t base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16;
    else if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) base = 8;
    else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) base = 2;
    if (base != 10) {
      s.remove_prefix(2);
    } else if (!s.empty() && s[0] == '-') {
      negative = true;
      s.remove_prefix(1);
    }
    auto parsed = digits(s, base, p.limbs.size() * 32);
    if (!parsed)
      throw fault(s.empty() ? "not a number (an empty string)"
                            : "not a number (decimal digits with an optional '-', or 0x, 0o, 0b digits)");
    n = std::move(*parsed);
  } else {
    const char* kind = v.is_boolean() ? "a boolean" : v.is_null() ? "null" : v.is_object() ? "an object" : "not a value";
    throw fault(std::string("not a field element (") + kind + ")");
  }
  if (Nat::cmp(n, p) >= 0)
    throw fault("not a field element: its magnitude is not below the prime " + to_decimal(p.to_le(n8)));
  if (negative && !n.zero()) n = Nat::sub(p, n);
  return n.to_le(n8);
}

void flatten(const json& v, const Nat& p, size_t n8, const std::string& name, std::vector<std::vector<uint8_t>>& out) {
  if (v.is_array()) {
    for (const auto& e : v) flatten(e, p, n8, name, out);
    return;
  }
  out.push_back(field_value(v, p, n8, "signal " + name + " value " + std::to_string(out.size())));
}

// Refuses nesting deeper than kMaxDepth (outside strings) before any parse.
void check_depth(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        throw InputFault("nested more than " + std::to_string(kMaxDepth) + " levels deep (at byte " + std::to_string(i) + ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

}  // namespace

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

std::string to_decimal(const std::vector<uint8_t>& le) {
  Nat n = Nat::from_le(le);
  if (n.zero()) return "0";
  std::string out;
  while (!n.zero()) {
    uint64_t rem = 0;
    for (size_t i = n.limbs.size(); i-- > 0;) {
      const uint64_t cur = (rem << 32) | n.limbs[i];
      n.limbs[i] = uint32_t(cur / 10);
      rem = cur % 10;
    }
    out.push_back(char('0' + rem));
    n.trim();
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<InputSignal> parse_input(std::string_view text, const std::vector<uint8_t>& prime_le) {
  check_depth(text);
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw InputFault(std::string("not JSON: ") + e.what());
  } catch (const json::exception& e) {
    // out_of_range.406: a number beyond a double (1e400); JSON.parse reads
    // Infinity there, which no field element is (found by witgen_input_fuzz).
    throw InputFault(std::string("a number out of range: ") + e.what());
  }
  if (!doc.is_object()) throw InputFault("not a JSON object of input signals");
  const Nat p = Nat::from_le(prime_le);
  std::vector<InputSignal> out;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key().empty()) throw InputFault("an input signal with an empty name");
    if (it.value().is_object())
      throw InputFault("signal " + shorten(it.key()) + ": a nested object (write bus fields as \"" + shorten(it.key()) +
                       ".field\")");
    InputSignal s{it.key(), fnv1a(it.key()), {}};
    flatten(it.value(), p, prime_le.size(), shorten(it.key()), s.values);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace zkfarm::witgen
