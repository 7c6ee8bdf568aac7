#pragma once
// SHA-256 (FIPS 180-4) through OpenSSL's EVP, and lowercase hex: one owner for
// the hashes zkfarm names things by (generator builds, uploads, tokens).
#include <cstddef>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace zkfarm::files {

/// `n` bytes as 2n lowercase hex digits.
std::string hex_lower(const unsigned char* data, size_t n);

/// An incremental SHA-256. Throws std::runtime_error if OpenSSL cannot give one.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void add(const void* data, size_t n);
  void add(std::string_view s) { add(s.data(), s.size()); }
  /// The digest of everything added: 64 lowercase hex digits. Call once.
  std::string hex_digest();

 private:
  evp_md_ctx_st* ctx_;
};

/// SHA-256 of `data`, 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// Frees what OpenSSL keeps for the calling thread (its error queue, 904
/// bytes once the thread has hashed anything). A thread that is about to end
/// calls it when someone may be waiting on that end: OpenSSL would otherwise
/// free the state in the thread's own exit, after any signal the thread can
/// give, so a process that exits right then leaks it (LeakSanitizer says so).
/// See OPENSSL_thread_stop(3).
void release_thread_state();

}  // namespace zkfarm::files
