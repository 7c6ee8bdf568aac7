#include "protocol/messages.hpp"

#include <charconv>
#include <cstdint>

#include "protocol/msgpack_limits.hpp"

namespace zkfarm::protocol {

Message make(std::string_view type) {
  Message m = Message::object();
  m["v"] = kProtocolVersion;
  m["t"] = std::string(type);
  return m;
}

std::string encode(const Message& msg) {
  std::vector<uint8_t> bytes = Message::to_msgpack(msg);
  return std::string(bytes.begin(), bytes.end());
}

Message decode(std::string_view frame) {
  if (frame.size() > kMaxFrameBytes) {
    throw ProtocolError("frame of " + std::to_string(frame.size()) + " bytes exceeds the limit of " +
                        std::to_string(kMaxFrameBytes));
  }
  // Bounded walk first: nlohmann's reader recurses per nesting level and
  // would overflow the stack on a deep frame before any check of ours ran.
  check_msgpack(frame);
  Message m;
  try {
    m = Message::from_msgpack(frame.begin(), frame.end());
  } catch (const nlohmann::json::exception& e) {
    throw ProtocolError(std::string("not a MessagePack message: ") + e.what());
  }
  if (!m.is_object()) throw ProtocolError("message is not a map");
  auto v = m.find("v");
  if (v == m.end() || !v->is_number_integer()) throw ProtocolError("message has no protocol version \"v\"");
  if (v->get<int64_t>() != kProtocolVersion) {
    throw VersionError("protocol version " + std::to_string(v->get<int64_t>()) + ", this side speaks version " +
                        std::to_string(kProtocolVersion));
  }
  auto t = m.find("t");
  if (t == m.end() || !t->is_string()) throw ProtocolError("message has no type \"t\"");
  return m;
}

std::string type_of(const Message& msg) { return msg.at("t").get<std::string>(); }

namespace {
const Message& field(const Message& msg, const char* name) {
  auto it = msg.find(name);
  if (it == msg.end()) throw ProtocolError(std::string("missing field \"") + name + "\"");
  return *it;
}
}  // namespace

uint64_t get_u64(const Message& msg, const char* name) {
  const Message& f = field(msg, name);
  if (f.is_number_unsigned()) return f.get<uint64_t>();
  if (f.is_number_integer() && f.get<int64_t>() >= 0) return uint64_t(f.get<int64_t>());
  throw ProtocolError(std::string("field \"") + name + "\" is not a non-negative integer");
}

uint32_t get_u32(const Message& msg, const char* name) {
  uint64_t v = get_u64(msg, name);
  if (v > UINT32_MAX) throw ProtocolError(std::string("field \"") + name + "\" is out of range");
  return uint32_t(v);
}

std::string get_str(const Message& msg, const char* name) {
  const Message& f = field(msg, name);
  if (!f.is_string()) throw ProtocolError(std::string("field \"") + name + "\" is not a string");
  return f.get<std::string>();
}

bool get_bool(const Message& msg, const char* name) {
  const Message& f = field(msg, name);
  if (!f.is_boolean()) throw ProtocolError(std::string("field \"") + name + "\" is not a boolean");
  return f.get<bool>();
}

std::string get_bin(const Message& msg, const char* name) {
  const Message& f = field(msg, name);
  if (!f.is_binary()) throw ProtocolError(std::string("field \"") + name + "\" is not binary");
  const auto& b = f.get_binary();
  return std::string(b.begin(), b.end());
}

std::optional<std::string> find_str(const Message& msg, const char* name) {
  auto it = msg.find(name);
  if (it == msg.end()) return std::nullopt;
  if (!it->is_string()) throw ProtocolError(std::string("field \"") + name + "\" is not a string");
  return it->get<std::string>();
}

nlohmann::json bin(std::string_view bytes) {
  return nlohmann::json::binary(std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

std::string worker_route(std::string_view worker_id, long pid) {
  return std::string(worker_id) + "#" + std::to_string(pid);
}

std::optional<std::pair<std::string, long>> parse_worker_route(std::string_view route) {
  const size_t hash = route.rfind('#');
  if (hash == std::string_view::npos || hash == 0) return std::nullopt;
  const std::string_view digits = route.substr(hash + 1);
  // Canonical decimal only (no sign, no leading zero): the route zkfarmd sends to must be this one.
  if (digits.empty() || digits[0] < '1' || digits[0] > '9') return std::nullopt;
  int32_t pid = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return std::pair<std::string, long>(std::string(route.substr(0, hash)), pid);
}

}  // namespace zkfarm::protocol
