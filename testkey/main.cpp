// zkfarm-testkey: large, valid Groth16 test keys without a powers-of-tau ceremony.
//   zkfarm-testkey --constraints N --public P --out PREFIX [--curve C] [--seed S] [--witnesses K] [--threads T]
//   zkfarm-testkey --r1cs CIRCUIT.r1cs --out PREFIX [--curve C] [--seed S] [--threads T]
//     (a key for a real circuit, e.g. circomlib's SHA-256: PREFIX.zkey and
//     PREFIX.vkey.json only; the circuit's own generator makes witnesses)
// Writes PREFIX.r1cs, PREFIX.zkey, PREFIX.vkey.json, PREFIX.wtns and, with
// --witnesses K, PREFIX.1.wtns … PREFIX.K.wtns for the same key.
// --curve bn128|bls12381 (snarkjs's and circom's names) picks the curve; the
// default is bn128 for a synthetic circuit, and for --r1cs the curve whose
// scalar field is the r1cs's prime (circom -p bn128 or -p bls12381), so an
// r1cs needs no flag; an explicit --curve that does not match the r1cs is an
// error naming the r1cs's curve. The same seed gives the same bn128 files as
// before --curve existed.
// INSECURE: the toxic waste is drawn here and could be kept; for tests and
// benchmarks only, never for real proofs.
// Exit codes: 0 written; 2 usage; 1 an I/O error (or an r1cs of another field).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "groth16/curve_list.hpp"
#include "groth16/prover.hpp"
#include "testkey/setup.hpp"

namespace {

using namespace zkfarm;
using namespace zkfarm::testkey;

struct Options {
  uint32_t constraints = 0, pub = 1, witnesses = 0;
  unsigned threads = 0;
  std::string prefix;
  std::optional<uint64_t> seed;
  std::string r1cs;
};

/// Everything after parsing, over the curve C. Throws on I/O or a bad r1cs.
template <class C>
int make_key(const Options& o, const R1cs* r1cs) {
  // The seed is a 64-bit number whatever the curve (random_scalar draws BN254's Fr: any bits do).
  const uint64_t s = o.seed ? *o.seed : random_scalar()[0];
  // The default curve's keys say nothing of their curve (the output before --curve existed).
  const std::string curve_note = std::is_same_v<C, DefaultCurve> ? "" : std::string(" over ") + C::kName;
  auto t0 = std::chrono::steady_clock::now();
  auto lap = [&](const char* what) {
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "zkfarm-testkey: %-22s %7.1f s\n", what, sec);
  };
  ThreadPool pool(o.threads);
  if (r1cs) {
    const Circuit<C> c = circuit_from_r1cs<C>(*r1cs);
    lap("circuit read");
    std::mt19937_64 trng(o.seed ? s ^ 0x70c1cULL : random_scalar()[1]);
    write_zkey(c, ToxicWaste<C>::draw(trng), o.prefix + ".zkey", o.prefix + ".vkey.json", pool);
    lap("proving key");
    std::printf("%s.zkey: %zu constraints, %u public, nVars %u (INSECURE test key%s for %s)\n", o.prefix.c_str(),
                c.constraints.size(), c.n_public, c.n_vars(), curve_note.c_str(), o.r1cs.c_str());
    return 0;
  }
  Circuit<C> c = make_circuit<C>(o.constraints, o.pub, s);
  std::mt19937_64 wrng(s ^ 0x5eedULL);
  write_r1cs(c, o.prefix + ".r1cs");
  write_wtns<C>(c.witness(wrng), o.prefix + ".wtns");
  for (uint32_t k = 1; k <= o.witnesses; ++k)
    write_wtns<C>(c.witness(wrng), o.prefix + "." + std::to_string(k) + ".wtns");
  lap("circuit and witnesses");
  std::mt19937_64 trng(o.seed ? s ^ 0x70c1cULL : random_scalar()[1]);
  write_zkey(c, ToxicWaste<C>::draw(trng), o.prefix + ".zkey", o.prefix + ".vkey.json", pool);
  lap("proving key");
  std::printf("%s.zkey: %u constraints, %u public, nVars %u (INSECURE test key%s)\n", o.prefix.c_str(), o.constraints,
              o.pub, c.n_vars(), curve_note.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zkfarm-testkey: a synthetic circuit, satisfying witnesses and a Groth16 proving key in snarkjs's\n"
               "formats (.r1cs, .wtns, .zkey, vkey JSON), from a setup with random toxic waste, over bn128 (BN254)\n"
               "or bls12381 (BLS12-381).\n"
               "INSECURE: for tests and benchmarks only. Whoever runs the setup can forge proofs for the key."};
  Options o;
  std::optional<std::string> curve;
  auto* n_opt =
      app.add_option("--constraints", o.constraints, "number of constraints N")->check(CLI::Range(1u, (1u << 27) - 1024));
  auto* r1cs_opt = app.add_option("--r1cs", o.r1cs, "a key for this circom circuit instead (writes .zkey and .vkey.json)");
  n_opt->excludes(r1cs_opt);
  std::vector<std::string> known_names;
  for_each_curve([&]<class C>(std::type_identity<C>) { known_names.emplace_back(C::kName); });
  app.add_option("--curve", curve,
                 "bn128 or bls12381 (default: bn128; with --r1cs, the curve of the r1cs's prime, as circom -p wrote it)")
      ->check(CLI::IsMember(known_names));
  app.add_option("--public", o.pub, "public inputs P (default 1)")->check(CLI::Range(0u, 1u << 20));
  app.add_option("--out", o.prefix, "output prefix: PREFIX.r1cs, .zkey, .vkey.json, .wtns")->required();
  app.add_option("--seed", o.seed, "seed for the circuit, the witnesses and the toxic waste (default: random)");
  app.add_option("--witnesses", o.witnesses, "K more witnesses PREFIX.1.wtns … PREFIX.K.wtns")
      ->check(CLI::Range(0u, 10000u));
  app.add_option("--threads", o.threads, "threads (default: all cores)");
  app.footer("Exit codes: 0 written, 1 I/O error or an r1cs over another field than --curve's, 2 usage.");
  try {
    app.parse(argc, argv);
    if (o.constraints == 0 && o.r1cs.empty()) throw CLI::ValidationError("--constraints N or --r1cs FILE is required");
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    std::optional<R1cs> r1cs;
    CurveId id = DefaultCurve::kId;
    if (curve) {
      if (const auto named = curve_id_of_name(*curve)) id = *named;  // CLI11 took only known names
    }
    if (!o.r1cs.empty()) {
      r1cs.emplace(R1cs::open(o.r1cs));
      // No --curve: the r1cs's own (an unknown prime falls to bn128, whose check names it).
      if (!curve)
        if (const CurvePrimes* k = r1cs_curve(*r1cs)) id = k->id;
    }
    const R1cs* r = r1cs ? &*r1cs : nullptr;
    return with_curve(id, [&]<class C>(std::type_identity<C>) { return make_key<C>(o, r); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-testkey: %s\n", e.what());
    return 1;
  }
}
