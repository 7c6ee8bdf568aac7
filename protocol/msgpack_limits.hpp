#pragma once
// A bounded, non-recursive check of MessagePack bytes, run before any parser
// builds a value from them (protocol::decode calls it first).
//
// Why: nlohmann's binary reader recurses once per nesting level, so one 500 KB
// frame of arrays nested 500,000 deep overflows the receiver's stack (a SAX
// handler does not help: the recursion is in the reader itself). This walk uses
// a fixed-size explicit stack instead, so its own stack use is constant, its
// time is linear in the frame, and it allocates nothing.
//
// Format: the MessagePack specification (github.com/msgpack/msgpack/blob/master/spec.md),
// every type: positive/negative fixint, nil, false/true, (u)int 8..64,
// float 32/64, fixstr/str 8..32, bin 8..32, fixarray/array 16/32,
// fixmap/map 16/32, fixext 1..16/ext 8..32, and the never-used marker 0xc1.
#include <cstddef>
#include <string_view>

namespace zkfarm::protocol {

/// Deepest nesting of arrays and maps accepted: the top-level map is level 1.
/// The deepest message zkfarm sends has 3 levels (a status reply: map → "jobs"
/// list → job map); 16 leaves room for later fields while keeping the
/// recursion of any parser that runs after this check trivially shallow
/// (16 frames of nlohmann's reader, a few KB of stack).
inline constexpr size_t kMaxMsgpackDepth = 16;

/// Most values one frame may hold, counting every value: containers, map keys,
/// elements. nlohmann spends 16 bytes plus, for a map or string, a heap block
/// per value, so 1 MiB of one-byte values (a million empty maps) took 180 MB
/// to decode; at 2^17 values the worst case is about 25 MB. Still more than any
/// message needs: a submit of 100,000 witnesses holds about 100,000 values and
/// cannot fit in kMaxFrameBytes with paths of 10 bytes or more anyway.
inline constexpr size_t kMaxMsgpackValues = size_t{1} << 17;

/// Checks that FRAME holds exactly one MessagePack value that zkfarm's messages
/// can be, within limits, without building anything. Refuses, with
/// ProtocolError (protocol/messages.hpp) whose message names the fault and its
/// byte offset (never the bytes themselves):
///  - arrays or maps nested deeper than kMaxMsgpackDepth levels;
///  - more than kMaxMsgpackValues values in all;
///  - an array or map declaring more elements than the bytes left in the frame
///    could hold (every element takes at least one byte; a map entry two), e.g.
///    2^32-1 elements in a 10-byte frame;
///  - a str or bin whose declared length runs past the end of the frame, and a
///    frame that ends inside a number or a length;
///  - bytes after the one top-level value (trailing bytes) and an empty frame;
///  - extension types (fixext, ext 8/16/32): no zkfarm message uses them;
///  - the never-used marker 0xc1;
///  - a map key that is not a str (nlohmann's reader, like zkfarm, keys maps by
///    string), and a str that is not well-formed UTF-8 (the MessagePack spec
///    requires UTF-8; JSON output of a decoded message, e.g. a status page,
///    would throw on it later).
/// Constant stack, O(frame.size()) time, no allocation.
void check_msgpack(std::string_view frame);

}  // namespace zkfarm::protocol
