// Fuzzes protocol::decode (the frame size limit, the bounded MessagePack walk
// check_msgpack, nlohmann's reader, the message checks) and the typed field
// getters on whatever decodes. Oracles besides the sanitizers:
//  - decode throws ProtocolError or nothing;
//  - a message that decodes can be printed as JSON (dump does not throw: its
//    strings are UTF-8) and encodes and decodes back to the same bytes;
//  - check_msgpack agrees with nlohmann: what it accepts nlohmann parses, and
//    on small frames (where nlohmann's recursion is harmless) what nlohmann
//    parses it refuses only for one of its deliberate limits (depth, ext
//    types, UTF-8);
//  - the typed worker-message decoders (worker_messages.hpp) give a struct
//    or a ProtocolError, and a struct encodes and decodes back to itself.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "protocol/messages.hpp"
#include "protocol/msgpack_limits.hpp"
#include "protocol/worker_messages.hpp"

using namespace zkfarm;
using protocol::Message;
using protocol::ProtocolError;

namespace {

// Each getter, by index, so that the loop below can pick them in turn.
using Getter = void (*)(const Message&, const char*);
constexpr Getter kGetters[] = {
    [](const Message& m, const char* n) { (void)protocol::get_u64(m, n); },
    [](const Message& m, const char* n) { (void)protocol::get_u32(m, n); },
    [](const Message& m, const char* n) { (void)protocol::get_str(m, n); },
    [](const Message& m, const char* n) { (void)protocol::get_bool(m, n); },
    [](const Message& m, const char* n) { (void)protocol::get_bin(m, n); },
    [](const Message& m, const char* n) { (void)protocol::find_str(m, n); },
};
constexpr size_t kNumGetters = sizeof(kGetters) / sizeof(kGetters[0]);

void call(Getter g, const Message& m, const char* name) {
  try {
    g(m, name);
  } catch (const ProtocolError&) {
  }
}

// Reads every field of M with the getter that fits its type and with one
// other getter (in turn), and a missing field: each getter's success and
// refusal paths, without the cost of all getters on every field (throwing is
// what makes a fuzz iteration slow under ASan).
void read_fields(const Message& m) {
  (void)protocol::type_of(m);
  size_t turn = 0;
  for (auto it = m.begin(); it != m.end(); ++it) {
    const std::string key = it.key();
    const Message& v = it.value();
    const size_t fit = v.is_number_integer() ? (v.is_number_unsigned() ? 0 : 1)
                       : v.is_string()       ? 2
                       : v.is_boolean()      ? 3
                       : v.is_binary()       ? 4
                                             : 5;
    call(kGetters[fit], m, key.c_str());
    call(kGetters[turn++ % kNumGetters], m, key.c_str());
  }
  call(kGetters[turn % kNumGetters], m, "no such field");
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "oracle failed: %s\n", what);
  std::abort();
}

// Where check_msgpack refused a small frame that nlohmann parses, the reason
// must be one of its deliberate limits. (The other direction, accepted by the
// check but not parsed by nlohmann, shows as decode's "not a MessagePack
// message" below.) Large refused frames are not given to nlohmann: its
// recursion is what the check is there to prevent.
void differential(std::string_view frame) {
  try {
    protocol::check_msgpack(frame);
    return;
  } catch (const ProtocolError& e) {
    if (frame.size() > 512) return;
    const std::string refusal = e.what();
    try {
      (void)Message::from_msgpack(frame.begin(), frame.end());
    } catch (const nlohmann::json::exception&) {
      return;
    }
    if (refusal.find("nested deeper") == std::string::npos && refusal.find("extension type") == std::string::npos &&
        refusal.find("UTF-8") == std::string::npos) {
      std::fprintf(stderr, "refusal: %s\n", refusal.c_str());
      fail("check_msgpack refused a frame nlohmann parses, for no deliberate limit");
    }
  }
}

// One side's decoder (`from`: map → variant; `back`: frame → variant) on a
// decoded map. Re-encoding may only be refused for size (defaults filled in,
// e.g. input_name, can make a frame near the limit grow past it).
template <class From, class Back>
void typed(const Message& m, From from, Back back) {
  decltype(from(m)) v;
  try {
    v = from(m);
  } catch (const ProtocolError&) {
    return;
  }
  std::string frame;
  std::visit([&](const auto& msg) { frame = protocol::encode(msg); }, v);
  try {
    if (back(frame) != v) fail("a typed message does not decode back to itself");
  } catch (const ProtocolError& e) {
    if (std::string_view(e.what()).find("exceeds the limit") == std::string_view::npos) {
      std::fprintf(stderr, "refusal: %s\n", e.what());
      fail("a typed message's own encoding is refused");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  differential(frame);
  try {
    const Message m = protocol::decode(frame);
    read_fields(m);
    typed(m, protocol::from_worker, protocol::decode_from_worker);
    typed(m, protocol::from_supervisor, protocol::decode_from_supervisor);
    (void)m.dump();
    const std::string again = protocol::encode(m);
    if (protocol::encode(protocol::decode(again)) != again) fail("decode(encode(m)) differs from m");
  } catch (const ProtocolError& e) {
    if (std::string_view(e.what()).starts_with("not a MessagePack message")) {
      std::fprintf(stderr, "refusal: %s\n", e.what());
      fail("check_msgpack accepted a frame nlohmann cannot parse");
    }
  }
  return 0;
}
