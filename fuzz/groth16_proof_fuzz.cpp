// Fuzzes decode_proof (groth16/proof_codec.hpp) (the proof of PROVE_DONE: 256 bytes for
// BN254, 384 for BLS12-381) and proof_json_of: any input gives a proof or a
// MalformedProof, and a proof that decodes encodes back to the same bytes
// (load and store are inverse on canonical coordinates).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "groth16/curve_list.hpp"
#include "groth16/proof_codec.hpp"

using namespace zkfarm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    if (const auto curve = proof_curve(size)) {
      with_curve(*curve, [&]<class C>(std::type_identity<C>) {
        const auto p = decode_proof<C>(bytes);
        if (encode_proof(p) != bytes) std::abort();
      });
    } else {
      (void)decode_proof(bytes);  // of no curve's size: must throw
      std::abort();
    }
  } catch (const MalformedProof&) {
  }
  try {
    (void)proof_json_of(bytes);
  } catch (const MalformedProof&) {
  }
  return 0;
}
