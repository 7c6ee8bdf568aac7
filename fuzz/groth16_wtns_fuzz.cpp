// Fuzzes Wtns::open (container checks, header, values) and the fit against a
// real key (check_witness_matches with tests/fixtures/allpub.zkey, 4 signals),
// then reads every value through Wtns::value as the prover does. Any exception
// other than InputError, any sanitizer report, is a bug.
#include <cstdint>
#include <optional>

#include "fuzz/fuzz_file.hpp"
#include "groth16/errors.hpp"
#include "groth16/wtns.hpp"
#include "groth16/zkey.hpp"

using namespace zkfarm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemFile file("fuzz.wtns");
  static const std::optional<Zkey> key = []() -> std::optional<Zkey> {
    try {
      return Zkey::open(ZKFARM_SOURCE_DIR "/tests/fixtures/allpub.zkey");
    } catch (const InputError&) {
      return std::nullopt;  // the check is skipped; the rest still runs
    }
  }();
  file.write(data, size);
  try {
    const Wtns w = Wtns::open(file.path());
    fuzz::touch(w.prime_le);
    for (uint32_t i = 0; i < w.n_witness; ++i) fuzz::touch(w.value(i));
    if (key) check_witness_matches(*key, w);
  } catch (const InputError&) {
  }
  return 0;
}
