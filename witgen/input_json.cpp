#include "witgen/input_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <unordered_map>

namespace zkfarm::witgen {

namespace {

// Values are judged one at a time (field_value takes a json scalar); the
// reader below keeps signals in the file's order itself.
using json = nlohmann::json;

// Nested arrays deeper than this are refused (no input of a circuit nests
// deeper than its signals' dimensions; the parser itself does not recurse).
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

// A name or value for a message: control characters as \u00XX (a NUL cut
// the message where it passed through a C string), at most 80 bytes.
std::string shorten(const std::string& v) {
  std::string out;
  for (unsigned char c : v) {
    if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out.size() <= 80 ? out : out.substr(0, 77) + "...";
}

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

// The reader as a SAX handler (nlohmann's parser is iterative and calls these
// per token): one pass over the text, no document tree, so time is linear in
// the text and memory is the depth plus the signals' names (and, when
// `keep`, their values). A fault is recorded and parsing stops (a handler
// returning false ends sax_parse); parse_signals then throws it.
class InputReader {
 public:
  InputReader(const Nat& p, size_t n8, const InputLimits& limits, bool keep)
      : p_(p), n8_(n8), limits_(limits), keep_(keep) {}

  // nlohmann's SAX interface (json_sax<json>).
  bool null() { return scalar(json(nullptr)); }
  bool boolean(bool v) { return scalar(json(v)); }
  bool number_integer(json::number_integer_t v) { return scalar(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return scalar(json(v)); }
  bool string(json::string_t& v) { return scalar(json(std::move(v))); }
  bool binary(json::binary_t&) { return fail("a binary value"); }
  bool start_object(std::size_t) {
    if (!tick()) return false;
    if (depth_ == 0) {
      if (top_seen_) return fail("not a JSON object of input signals");
      top_seen_ = true;
      ++depth_;
      return true;
    }
    if (depth_ == 1)
      return fail("signal " + shorten(current().name) + ": a nested object (write bus fields as \"" +
                  shorten(current().name) + ".field\")");
    return fail("signal " + shorten(current().name) + " value " + std::to_string(current_count_) +
                ": not a field element (an object)");
  }
  bool end_object() {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) {
    if (!tick()) return false;
    if (depth_ == 0) return fail("not a JSON object of input signals");
    if (++depth_ > kMaxDepth)
      return fail("nested more than " + std::to_string(kMaxDepth) + " levels deep");
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }
  bool key(json::string_t& k) {
    if (!tick()) return false;
    if (k.empty()) return fail("an input signal with an empty name");
    // JSON.parse keeps a repeated key at its first place with its last value.
    auto [it, added] = index_.try_emplace(k, signals_.size());
    if (added) {
      if (signals_.size() >= limits_.max_signals)
        return fail("more than " + std::to_string(limits_.max_signals) + " input signals");
      signals_.push_back(InputSignal{k, fnv1a(k), {}});
    } else {
      values_ -= counts_[it->second];
      signals_[it->second].values.clear();
      counts_[it->second] = 0;
    }
    if (counts_.size() < signals_.size()) counts_.resize(signals_.size(), 0);
    at_ = it->second;
    current_count_ = 0;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    // out_of_range.406: a number beyond a double (1e400); JSON.parse reads
    // Infinity there, which no field element is (found by witgen_input_fuzz).
    if (e.id == 406) return fail(std::string("a number out of range: ") + e.what());
    return fail("not JSON (at byte " + std::to_string(position) + "): " + e.what());
  }

  /// The fault that stopped the parse, "" when none did.
  const std::string& fault() const { return fault_; }
  bool started() const { return top_seen_; }
  std::vector<InputSignal> take() { return std::move(signals_); }
  std::vector<SignalCount> counts() const {
    std::vector<SignalCount> out;
    out.reserve(signals_.size());
    for (size_t i = 0; i < signals_.size(); ++i) out.push_back({signals_[i].name, signals_[i].hash, counts_[i]});
    return out;
  }
  uint64_t values() const { return values_; }
  size_t signals() const { return signals_.size(); }

 private:
  InputSignal& current() { return signals_[at_]; }

  // A value inside a signal: checked (and kept), counted.
  bool scalar(json v) {
    if (!tick()) return false;
    if (depth_ == 0) return fail("not a JSON object of input signals");
    if (values_ >= limits_.max_values)
      return fail("more than " + std::to_string(limits_.max_values) + " input values");
    try {
      std::vector<uint8_t> fe =
          field_value(v, p_, n8_, "signal " + shorten(current().name) + " value " + std::to_string(current_count_));
      if (keep_) current().values.push_back(std::move(fe));
    } catch (const InputFault& e) {
      return fail(e.what());
    }
    ++current_count_;
    ++counts_[at_];
    ++values_;
    return true;
  }

  // Every few thousand tokens: has the caller given up (a submit timed out)?
  bool tick() {
    if ((++ticks_ & 0xfff) == 0 && limits_.cancel && limits_.cancel->load(std::memory_order_relaxed))
      return fail("stopped: the check was given up (its deadline passed)");
    return true;
  }

  bool fail(std::string why) {
    if (fault_.empty()) fault_ = std::move(why);
    return false;
  }

  const Nat& p_;
  size_t n8_;
  InputLimits limits_;
  bool keep_;
  int depth_ = 0;
  bool top_seen_ = false;
  std::vector<InputSignal> signals_;
  std::vector<uint64_t> counts_;  // values of each signal (what a repeated key takes back)
  std::unordered_map<std::string, size_t> index_;
  size_t at_ = 0;
  uint64_t current_count_ = 0;
  uint64_t values_ = 0;
  uint64_t ticks_ = 0;
  std::string fault_;
};

// One pass of the reader over `source` (a text's iterators, or a stream);
// throws InputFault.
template <typename... Source>
InputReader read_signals(const std::vector<uint8_t>& prime_le, const InputLimits& limits, bool keep, const Nat& p,
                         Source&&... source) {
  InputReader r(p, prime_le.size(), limits, keep);
  const bool ok = json::sax_parse(std::forward<Source>(source)..., &r);
  if (!r.fault().empty()) throw InputFault(r.fault());
  if (!ok || !r.started()) throw InputFault("not a JSON object of input signals");
  return r;
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

std::vector<InputSignal> parse_input(std::string_view text, const std::vector<uint8_t>& prime_le,
                                     const InputLimits& limits) {
  const Nat p = Nat::from_le(prime_le);
  return read_signals(prime_le, limits, true, p, text.begin(), text.end()).take();
}

InputSummary check_input(std::string_view text, const std::vector<uint8_t>& prime_le, const InputLimits& limits) {
  const Nat p = Nat::from_le(prime_le);
  const InputReader r = read_signals(prime_le, limits, false, p, text.begin(), text.end());
  return InputSummary{r.signals(), r.values(), r.counts()};
}

InputSummary check_input(std::istream& in, const std::vector<uint8_t>& prime_le, const InputLimits& limits) {
  const Nat p = Nat::from_le(prime_le);
  const InputReader r = read_signals(prime_le, limits, false, p, in);
  return InputSummary{r.signals(), r.values(), r.counts()};
}

void check_signals(const std::vector<SignalCount>& given, const std::function<std::optional<uint32_t>(uint64_t)>& size_of,
                   uint64_t input_count) {
  uint64_t sets = 0;
  for (const auto& s : given) {
    const auto size = size_of(s.hash);
    if (!size) throw InputFault("signal " + shorten(s.name) + " is not an input of the circuit");
    if (s.values != *size)
      throw InputFault("signal " + shorten(s.name) + " has " + std::to_string(s.values) + " values, the circuit's has " +
                       std::to_string(*size));
    sets += *size;
  }
  if (sets != input_count)
    throw InputFault("the input sets " + std::to_string(sets) + " of the circuit's " + std::to_string(input_count) +
                     " input values: " + (sets < input_count ? "a signal is missing" : "a signal is given twice"));
}

std::string signal_shapes_json(const std::vector<SignalShape>& shapes) {
  json list = json::array();
  char hex[17];
  for (const auto& s : shapes) {
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(s.hash));
    json e = {{"hash", hex}, {"size", s.size}};
    if (s.at) e["at"] = s.at;
    list.push_back(std::move(e));
  }
  return list.dump();
}

std::vector<SignalShape> signal_shapes_from_json(std::string_view text) {
  const json list = json::parse(text);
  if (!list.is_array()) throw std::runtime_error("the inputs are not a list");
  std::vector<SignalShape> out;
  for (const auto& e : list) {
    const std::string hex = e.at("hash").get<std::string>();
    size_t used = 0;
    SignalShape s;
    s.hash = std::stoull(hex, &used, 16);
    if (used != hex.size() || hex.size() != 16) throw std::runtime_error("an input's hash is not 16 hex digits");
    s.size = e.at("size").get<uint32_t>();
    if (s.size == 0) throw std::runtime_error("an input of no values");
    if (e.contains("at")) s.at = e.at("at").get<uint32_t>();
    out.push_back(s);
  }
  return out;
}

}  // namespace zkfarm::witgen
