#include "groth16/proof_codec.hpp"

#include <cstring>

#include "groth16/curve_list.hpp"
#include "groth16/proof_json.hpp"

namespace zkfarm {

namespace {

// Checks that the n8q-byte Montgomery coordinate at p is < q. A value in
// Montgomery form is canonical exactly when its stored integer is.
template <class Fq>
void check_coordinate(const uint8_t* p, const char* what) {
  typename Fq::Int x;
  std::memcpy(x.data(), p, Fq::kBytes);
  if (!is_canonical<typename Fq::Params>(x)) {
    throw MalformedProof(std::string("proof: ") + what + ": coordinate not canonical (>= q)");
  }
}

}  // namespace

template <class C>
std::string encode_proof(const ProofOf<C>& proof) {
  std::string out(kProofBytesOf<C>, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  proof.a.store(p);
  proof.b.store(p + C::kG1Bytes);
  proof.c.store(p + C::kG1Bytes + C::kG2Bytes);
  return out;
}

template <class C>
ProofOf<C> decode_proof(std::string_view bytes) {
  using Fq = typename C::Fq;
  constexpr size_t kBytes = kProofBytesOf<C>;
  if (bytes.size() != kBytes) {
    throw MalformedProof("proof of " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(kBytes) +
                        " (" + C::kName + ")");
  }
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  // Coordinates 0-1 are πA, 2-5 πB, 6-7 πC.
  for (size_t i = 0; i < 8; ++i) check_coordinate<Fq>(p + Fq::kBytes * i, i < 2 ? "pi_a" : i < 6 ? "pi_b" : "pi_c");
  using G1A = Affine<typename C::G1Params>;
  using G2A = Affine<typename C::G2Params>;
  ProofOf<C> proof{G1A::load(p), G2A::load(p + C::kG1Bytes), G1A::load(p + C::kG1Bytes + C::kG2Bytes)};
  if (!proof.a.on_curve()) throw MalformedProof("proof: pi_a is not on G1");
  if (!proof.b.on_curve()) throw MalformedProof("proof: pi_b is not on G2");
  if (!proof.c.on_curve()) throw MalformedProof("proof: pi_c is not on G1");
  return proof;
}

std::optional<CurveId> proof_curve(size_t bytes) {
  std::optional<CurveId> id;
  for_each_curve([&]<class C>(std::type_identity<C>) {
    if (!id && bytes == kProofBytesOf<C>) id = C::kId;
  });
  return id;
}

std::string proof_json_of(std::string_view bytes) {
  const std::optional<CurveId> curve = proof_curve(bytes.size());
  if (!curve) throw MalformedProof("proof of " + std::to_string(bytes.size()) + " bytes is of no known curve");
  return with_curve(*curve, [&]<class C>(std::type_identity<C>) { return proof_to_json(decode_proof<C>(bytes)); });
}

// Every curve of Curves gets the codec.
#define ZKFARM_PROOF_CODEC_INSTANTIATE(C)                              \
  template std::string encode_proof<C>(const ProofOf<C>&);             \
  template ProofOf<C> decode_proof<C>(std::string_view);
ZKFARM_FOR_EACH_CURVE(ZKFARM_PROOF_CODEC_INSTANTIATE)

}  // namespace zkfarm
