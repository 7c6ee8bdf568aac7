// Fuzzes Zkey::open (the container checks of BinFile, then every section
// check of the zkey format) and what the farm runs on a key that opened: the
// spans it hands out, the header-point check, and synthesis, which indexes the
// a/b vectors and the witness with section 4's constraint and signal numbers
// on the strength of open()'s checks alone. Any exception other than
// InputError, any sanitizer report, is a bug.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_file.hpp"
#include "groth16/curve_list.hpp"
#include "groth16/curves.hpp"
#include "groth16/errors.hpp"
#include "groth16/prover.hpp"
#include "groth16/thread_pool.hpp"
#include "groth16/wtns.hpp"
#include "groth16/zkey.hpp"

using namespace zkfarm;

namespace {

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A valid .wtns of N values over the key's curve's r (value 0 = 1, value
// i = i), in the layout wtns.hpp describes, so that a fuzzed key that opened
// can be synthesized.
std::vector<uint8_t> witness_file(uint32_t n, CurveId curve) {
  std::vector<uint8_t> b = {'w', 't', 'n', 's'};
  put_u32(b, 2);  // version
  put_u32(b, 2);  // sections
  put_u32(b, 1);
  put_u64(b, 4 + 32 + 4);
  put_u32(b, 32);
  for (int i = 0; i < 4; ++i) put_u64(b, curve_primes(curve).r[i]);
  put_u32(b, n);
  put_u32(b, 2);
  put_u64(b, uint64_t{n} * 32);
  for (uint32_t i = 0; i < n; ++i) {
    put_u64(b, i == 0 ? 1 : i);
    put_u64(b, 0), put_u64(b, 0), put_u64(b, 0);
  }
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemFile key_file("fuzz.zkey");
  static fuzz::MemFile wtns_file("fuzz.wtns");
  static ThreadPool pool(1);
  key_file.write(data, size);
  try {
    const Zkey k = Zkey::open(key_file.path());
    fuzz::touch(k.ic), fuzz::touch(k.coeffs), fuzz::touch(k.a), fuzz::touch(k.b1);
    fuzz::touch(k.b2), fuzz::touch(k.c), fuzz::touch(k.h);
    for (const uint8_t* p : {k.alpha1, k.beta1, k.delta1}) fuzz::touch(std::span<const uint8_t>(p, k.g1_bytes));
    for (const uint8_t* p : {k.beta2, k.gamma2, k.delta2}) fuzz::touch(std::span<const uint8_t>(p, k.g2_bytes));
    try {
      with_curve(k.curve, [&]<class C>(std::type_identity<C>) { check_key_points_of<C>(k); });
    } catch (const InputError&) {
    }
    // Bounded by the input anyway (section 5 holds n_vars points); the bound
    // keeps one slow input from stalling the run.
    if (k.n_vars <= (1u << 14)) {
      const std::vector<uint8_t> w_bytes = witness_file(k.n_vars, k.curve);
      wtns_file.write(w_bytes.data(), w_bytes.size());
      const Wtns w = Wtns::open(wtns_file.path());
      check_witness_matches(k, w);
      std::vector<uint64_t> mem(PartitionBuffers::bytes_for(k) / 8 + 1);
      with_curve(k.curve, [&]<class C>(std::type_identity<C>) {
        synthesize<C>(k, w, PartitionBuffersOf<C>::view(mem.data(), k), pool);
      });
    }
  } catch (const InputError&) {
  }
  return 0;
}
