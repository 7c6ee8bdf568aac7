// Fuzzes R1cs::open (container checks, header, the walk of section 2, the
// label map), then walks the constraints with for_each_constraint and label(),
// which do no checks of their own and rely on open()'s: every wire id must be
// below nWires and every label below nLabels, every coefficient inside the
// file. Any exception other than InputError, any sanitizer report, is a bug.
#include <cstdint>
#include <cstdlib>

#include "fuzz/fuzz_file.hpp"
#include "groth16/errors.hpp"
#include "groth16/r1cs.hpp"

using namespace zkfarm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemFile file("fuzz.r1cs");
  file.write(data, size);
  try {
    const R1cs r = R1cs::open(file.path());
    fuzz::touch(r.prime_le);
    r.for_each_constraint([&](uint32_t, const R1csConstraint& c) {
      for (const LinearCombination* lc : {&c.a, &c.b, &c.c}) {
        for (uint32_t t = 0; t < lc->size(); ++t) {
          const R1csTerm term = lc->term(t);
          if (term.wire >= r.n_wires) std::abort();  // open() promised otherwise
          fuzz::touch(term.coeff);
        }
      }
    });
    for (uint32_t w = 0; w < r.n_wires; ++w) {
      if (r.label(w) >= r.n_labels) std::abort();
    }
  } catch (const InputError&) {
  }
  return 0;
}
