#include "protocol/proof_codec.hpp"

#include <cstring>

#include "protocol/messages.hpp"

namespace zkfarm::protocol {

namespace {

// Checks that the 32-byte Montgomery coordinate at p is < q. A value in
// Montgomery form is canonical exactly when its stored integer is.
void check_coordinate(const uint8_t* p, const char* what) {
  U256 x;
  std::memcpy(x.data(), p, 32);
  if (!is_canonical<FqParams>(x)) throw ProtocolError(std::string("proof: ") + what + ": coordinate not canonical (>= q)");
}

}  // namespace

std::string encode_proof(const Proof& proof) {
  std::string out(kProofBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  proof.a.store(p);
  proof.b.store(p + kG1Bytes);
  proof.c.store(p + kG1Bytes + kG2Bytes);
  return out;
}

Proof decode_proof(std::string_view bytes) {
  if (bytes.size() != kProofBytes) {
    throw ProtocolError("proof of " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(kProofBytes));
  }
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  for (size_t i = 0; i < kProofBytes / 32; ++i) check_coordinate(p + 32 * i, i < 2 ? "pi_a" : i < 6 ? "pi_b" : "pi_c");
  Proof proof{G1Affine::load(p), G2Affine::load(p + kG1Bytes), G1Affine::load(p + kG1Bytes + kG2Bytes)};
  if (!proof.a.on_curve()) throw ProtocolError("proof: pi_a is not on G1");
  if (!proof.b.on_curve()) throw ProtocolError("proof: pi_b is not on G2");
  if (!proof.c.on_curve()) throw ProtocolError("proof: pi_c is not on G1");
  return proof;
}

}  // namespace zkfarm::protocol
