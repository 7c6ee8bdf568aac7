#pragma once
// API tokens and roles (docs/api.md, "Authentication"). A token is
// "zkf_" + 16 hex digits of id + "_" + 64 hex digits of secret: 8 and 32
// bytes from getrandom(2). Only its SHA-256 (FIPS 180-4) is stored; the id,
// which is not secret, finds the row, and the hashes are compared in constant
// time. A plain SHA-256 suffices because the secret is 256 random bits (a slow
// password hash protects guessable secrets, which these are not).
#include <optional>
#include <string>
#include <string_view>

#include "files/sha256.hpp"

namespace zkfarm::api {

using files::sha256_hex;  // tokens and requests are hashed as everything else is (files/sha256.hpp)

/// What a token may do. Each role includes the ones before it: read (GET a
/// tenant's jobs, results, circuits, uploads) < submit (upload, register,
/// submit, cancel, delete) < operator (also the farm's status, drain, resume).
enum class Role { kRead = 0, kSubmit = 1, kOperator = 2 };

/// "read", "submit", "operator" → Role; nullopt for anything else.
std::optional<Role> parse_role(std::string_view name);
/// Role → its name.
const char* role_name(Role role);
/// True when `have` includes `need`.
inline bool role_allows(Role have, Role need) { return int(have) >= int(need); }

/// A freshly made token: `text` is shown to the operator once, never stored.
struct NewToken {
  std::string id;    ///< 16 lowercase hex digits
  std::string text;  ///< "zkf_ID_SECRET"
};
/// `bytes` random bytes from getrandom(2) as lowercase hex (upload ids,
/// temporary folders). Throws std::system_error if the source fails.
std::string random_hex(size_t bytes);

/// Makes a token from getrandom(2). Throws std::system_error if the kernel's
/// random source fails.
NewToken make_token();

/// The id of a well-formed token text (exact length, prefix, lowercase hex);
/// nullopt otherwise (nothing is looked up for a malformed token).
std::optional<std::string> token_id(std::string_view text);

/// Compares two strings in time that depends only on their lengths.
bool equal_constant_time(std::string_view a, std::string_view b);

/// A tenant name: 1–32 of a-z, 0-9, '_' and '-', starting with a letter or
/// digit. Tenant names become part of circuit names in zkfarmd ("TENANT.NAME").
bool valid_tenant(std::string_view name);

/// A circuit name as a tenant gives it: 1–31 of letters, digits, '.', '_', '-'
/// (with the tenant's prefix it fits zkfarmd's 64-character circuit names).
bool valid_circuit_name(std::string_view name);

}  // namespace zkfarm::api
