#include "files/sha256.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <stdexcept>

namespace zkfarm::files {

std::string hex_lower(const unsigned char* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[data[i] >> 4];
    s[2 * i + 1] = digits[data[i] & 15];
  }
  return s;
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_);
    throw std::runtime_error("OpenSSL's SHA-256 is unavailable");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::add(const void* data, size_t n) {
  if (EVP_DigestUpdate(ctx_, data, n) != 1) throw std::runtime_error("SHA-256 update failed");
}

std::string Sha256::hex_digest() {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_, d, &n) != 1) throw std::runtime_error("SHA-256 final failed");
  return hex_lower(d, n);
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.add(data);
  return h.hex_digest();
}

void release_thread_state() { OPENSSL_thread_stop(); }

}  // namespace zkfarm::files
