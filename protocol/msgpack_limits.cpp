// The bounded MessagePack walk: an explicit stack of open containers instead
// of recursion (see msgpack_limits.hpp for why).
#include "protocol/msgpack_limits.hpp"

#include <array>
#include <cstdint>
#include <string>

#include "protocol/messages.hpp"

namespace zkfarm::protocol {
namespace {

[[noreturn]] void refuse(size_t offset, const std::string& fault) {
  throw ProtocolError("MessagePack frame refused at offset " + std::to_string(offset) + ": " + fault);
}

// N bytes (1..8) at P as a big-endian unsigned integer: MessagePack's byte order.
uint64_t read_be(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

// Whether [p, p+n) is well-formed UTF-8: the byte sequences of the Unicode
// Standard, table 3-7 (no overlong forms, no surrogates, nothing past U+10FFFF),
// the same set nlohmann's JSON writer accepts.
bool valid_utf8(const uint8_t* p, uint64_t n) {
  uint64_t i = 0;
  while (i < n) {
    const uint8_t c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    uint64_t len = 0;
    uint8_t lo = 0x80, hi = 0xbf;  // range of the second byte
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      if (c == 0xe0) lo = 0xa0;  // overlong
      if (c == 0xed) hi = 0x9f;  // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      if (c == 0xf0) lo = 0x90;  // overlong
      if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
    } else {
      return false;
    }
    if (n - i < len || p[i + 1] < lo || p[i + 1] > hi) return false;
    for (uint64_t k = 2; k < len; ++k) {
      if (p[i + k] < 0x80 || p[i + k] > 0xbf) return false;
    }
    i += len;
  }
  return true;
}

// What one marker byte announces.
enum class Kind { kScalar, kStr, kBin, kArray, kMap };
struct Marker {
  Kind kind = Kind::kScalar;
  uint64_t fixed = 0;      // kScalar: payload bytes; fix types: the length/count in the marker
  size_t length_bytes = 0;  // bytes of the big-endian length/count after the marker (0: fixed)
};

// Decodes marker M at OFFSET; refuses ext types and 0xc1.
Marker classify(uint8_t m, size_t offset) {
  if (m <= 0x7f || m >= 0xe0) return {};                    // positive / negative fixint
  if (m <= 0x8f) return {Kind::kMap, uint64_t{m & 0x0fu}, 0};    // fixmap
  if (m <= 0x9f) return {Kind::kArray, uint64_t{m & 0x0fu}, 0};  // fixarray
  if (m <= 0xbf) return {Kind::kStr, uint64_t{m & 0x1fu}, 0};    // fixstr
  switch (m) {
    case 0xc0:  // nil
    case 0xc2:  // false
    case 0xc3:  // true
      return {};
    case 0xc1:
      refuse(offset, "marker 0xc1 is never used in MessagePack");
    case 0xc4: return {Kind::kBin, 0, 1};
    case 0xc5: return {Kind::kBin, 0, 2};
    case 0xc6: return {Kind::kBin, 0, 4};
    case 0xc7: case 0xc8: case 0xc9:                        // ext 8/16/32
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:  // fixext 1/2/4/8/16
      refuse(offset, "extension type: no zkfarm message uses one");
    case 0xca: return {Kind::kScalar, 4, 0};  // float 32
    case 0xcb: return {Kind::kScalar, 8, 0};  // float 64
    case 0xcc: return {Kind::kScalar, 1, 0};  // uint 8
    case 0xcd: return {Kind::kScalar, 2, 0};  // uint 16
    case 0xce: return {Kind::kScalar, 4, 0};  // uint 32
    case 0xcf: return {Kind::kScalar, 8, 0};  // uint 64
    case 0xd0: return {Kind::kScalar, 1, 0};  // int 8
    case 0xd1: return {Kind::kScalar, 2, 0};  // int 16
    case 0xd2: return {Kind::kScalar, 4, 0};  // int 32
    case 0xd3: return {Kind::kScalar, 8, 0};  // int 64
    case 0xd9: return {Kind::kStr, 0, 1};
    case 0xda: return {Kind::kStr, 0, 2};
    case 0xdb: return {Kind::kStr, 0, 4};
    case 0xdc: return {Kind::kArray, 0, 2};
    case 0xdd: return {Kind::kArray, 0, 4};
    case 0xde: return {Kind::kMap, 0, 2};
    default:   return {Kind::kMap, 0, 4};  // 0xdf: every other byte is handled above
  }
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kStr: return "str";
    case Kind::kBin: return "bin";
    case Kind::kArray: return "array";
    case Kind::kMap: return "map";
    default: return "number";
  }
}

}  // namespace

void check_msgpack(std::string_view frame) {
  const auto* d = reinterpret_cast<const uint8_t*>(frame.data());
  const size_t size = frame.size();
  if (size == 0) refuse(0, "empty frame");

  // The open containers, outermost first: values still to read in each (a map
  // counts its keys and values, so a key is due when the count left is odd
  // after taking one).
  std::array<uint64_t, kMaxMsgpackDepth> left{};
  std::array<bool, kMaxMsgpackDepth> is_map{};
  size_t depth = 0;
  size_t pos = 0;
  size_t values_seen = 0;
  bool root_taken = false;

  for (;;) {
    while (depth > 0 && left[depth - 1] == 0) --depth;
    bool key = false;
    if (depth == 0) {
      if (root_taken) break;
      root_taken = true;
    } else {
      --left[depth - 1];
      key = is_map[depth - 1] && left[depth - 1] % 2 == 1;
    }

    const size_t at = pos;
    if (pos >= size) refuse(at, "truncated: the frame ends where a value should start");
    if (++values_seen > kMaxMsgpackValues) {
      refuse(at, "more than " + std::to_string(kMaxMsgpackValues) + " values in one frame");
    }
    const Marker mk = classify(d[pos++], at);
    if (key && mk.kind != Kind::kStr) refuse(at, std::string("map key is a ") + kind_name(mk.kind) + ", not a str");

    uint64_t n = mk.fixed;  // payload bytes (scalars, str, bin) or elements (array, map)
    if (mk.length_bytes > 0) {
      if (mk.length_bytes > size - pos) {
        refuse(at, std::string("truncated: the ") + kind_name(mk.kind) + "'s " + std::to_string(mk.length_bytes) +
                       "-byte length runs past the end of the frame");
      }
      n = read_be(d + pos, mk.length_bytes);
      pos += mk.length_bytes;
    }
    const uint64_t rest = size - pos;

    switch (mk.kind) {
      case Kind::kScalar:
        if (n > rest) refuse(at, "truncated: a number of " + std::to_string(n) + " bytes, " + std::to_string(rest) + " left");
        pos += n;
        break;
      case Kind::kStr:
      case Kind::kBin:
        if (n > rest) {
          refuse(at, std::string(kind_name(mk.kind)) + " of " + std::to_string(n) + " bytes runs past the end of the frame (" +
                         std::to_string(rest) + " bytes left)");
        }
        if (mk.kind == Kind::kStr && !valid_utf8(d + pos, n)) refuse(at, "str is not well-formed UTF-8");
        pos += n;
        break;
      case Kind::kArray:
      case Kind::kMap: {
        // Every element takes at least one byte (a map entry two), so a count
        // above what is left is a lie, whatever the nesting below it.
        const uint64_t values = mk.kind == Kind::kMap ? 2 * n : n;
        if (values > rest) {
          refuse(at, std::string(kind_name(mk.kind)) + " declares " + std::to_string(n) +
                         (mk.kind == Kind::kMap ? " entries" : " elements") + ", more than the " + std::to_string(rest) +
                         " bytes left in the frame can hold");
        }
        if (depth + 1 > kMaxMsgpackDepth) {
          refuse(at, "arrays and maps nested deeper than " + std::to_string(kMaxMsgpackDepth) + " levels");
        }
        if (values > 0) {
          left[depth] = values;
          is_map[depth] = mk.kind == Kind::kMap;
          ++depth;
        }
        break;
      }
    }
  }
  if (pos != size) {
    refuse(pos, std::to_string(size - pos) + " trailing bytes after the message's value (frame of " +
                    std::to_string(size) + " bytes)");
  }
}

}  // namespace zkfarm::protocol
