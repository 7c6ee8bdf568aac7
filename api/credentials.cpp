#include "api/credentials.hpp"

#include "files/sha256.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <system_error>

namespace zkfarm::api {

namespace {

void random_bytes(unsigned char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t k = ::getrandom(p + got, n - got, 0);
    if (k < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    got += size_t(k);
  }
}

bool is_lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

std::optional<Role> parse_role(std::string_view name) {
  if (name == "read") return Role::kRead;
  if (name == "submit") return Role::kSubmit;
  if (name == "operator") return Role::kOperator;
  return std::nullopt;
}

const char* role_name(Role role) {
  switch (role) {
    case Role::kRead: return "read";
    case Role::kSubmit: return "submit";
    case Role::kOperator: return "operator";
  }
  return "?";
}

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  random_bytes(reinterpret_cast<unsigned char*>(raw.data()), bytes);
  return files::hex_lower(reinterpret_cast<const unsigned char*>(raw.data()), bytes);
}

NewToken make_token() {
  unsigned char id[8], secret[32];
  random_bytes(id, sizeof id);
  random_bytes(secret, sizeof secret);
  NewToken t;
  t.id = files::hex_lower(id, sizeof id);
  t.text = "zkf_" + t.id + "_" + files::hex_lower(secret, sizeof secret);
  return t;
}

std::optional<std::string> token_id(std::string_view text) {
  // zkf_ + 16 + _ + 64
  if (text.size() != 4 + 16 + 1 + 64 || text.substr(0, 4) != "zkf_" || text[20] != '_') return std::nullopt;
  if (!is_lower_hex(text.substr(4, 16)) || !is_lower_hex(text.substr(21))) return std::nullopt;
  return std::string(text.substr(4, 16));
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool valid_tenant(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '_' && c != '-'))) return false;
  }
  return true;
}

bool valid_circuit_name(std::string_view name) {
  if (name.empty() || name.size() > 31) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                    c == '-';
    if (!ok) return false;
  }
  return name != "." && name != "..";
}

}  // namespace zkfarm::api
