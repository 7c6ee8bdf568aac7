// zkfarm-testkey: large, valid Groth16 test keys without a powers-of-tau ceremony.
//   zkfarm-testkey --constraints N --public P --out PREFIX [--seed S] [--witnesses K] [--threads T]
//   zkfarm-testkey --r1cs CIRCUIT.r1cs --out PREFIX [--seed S] [--threads T]
//     (a key for a real circuit, e.g. circomlib's SHA-256: PREFIX.zkey and
//     PREFIX.vkey.json only; the circuit's own generator makes witnesses)
// Writes PREFIX.r1cs, PREFIX.zkey, PREFIX.vkey.json, PREFIX.wtns and, with
// --witnesses K, PREFIX.1.wtns … PREFIX.K.wtns for the same key.
// INSECURE: the toxic waste is drawn here and could be kept; for tests and
// benchmarks only, never for real proofs.
// Exit codes: 0 written; 2 usage; 1 an I/O error.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <optional>

#include "groth16/prover.hpp"
#include "testkey/setup.hpp"

int main(int argc, char** argv) {
  using namespace zkfarm;
  using namespace zkfarm::testkey;
  CLI::App app{"zkfarm-testkey: a synthetic circuit, satisfying witnesses and a Groth16 proving key in snarkjs's\n"
               "formats (.r1cs, .wtns, .zkey, vkey JSON), from a setup with random toxic waste.\n"
               "INSECURE: for tests and benchmarks only. Whoever runs the setup can forge proofs for the key."};
  uint32_t constraints = 0, pub = 1, witnesses = 0;
  unsigned threads = 0;
  std::string prefix;
  std::optional<uint64_t> seed;
  std::string r1cs;
  auto* n_opt = app.add_option("--constraints", constraints, "number of constraints N")->check(CLI::Range(1u, (1u << 27) - 1024));
  auto* r1cs_opt = app.add_option("--r1cs", r1cs, "a key for this circom circuit instead (writes .zkey and .vkey.json)");
  n_opt->excludes(r1cs_opt);
  app.add_option("--public", pub, "public inputs P (default 1)")->check(CLI::Range(0u, 1u << 20));
  app.add_option("--out", prefix, "output prefix: PREFIX.r1cs, .zkey, .vkey.json, .wtns")->required();
  app.add_option("--seed", seed, "seed for the circuit, the witnesses and the toxic waste (default: random)");
  app.add_option("--witnesses", witnesses, "K more witnesses PREFIX.1.wtns … PREFIX.K.wtns")->check(CLI::Range(0u, 10000u));
  app.add_option("--threads", threads, "threads (default: all cores)");
  app.footer("Exit codes: 0 written, 1 I/O error, 2 usage.");
  try {
    app.parse(argc, argv);
    if (constraints == 0 && r1cs.empty()) throw CLI::ValidationError("--constraints N or --r1cs FILE is required");
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const uint64_t s = seed ? *seed : random_scalar()[0];
  auto t0 = std::chrono::steady_clock::now();
  auto lap = [&](const char* what) {
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "zkfarm-testkey: %-22s %7.1f s\n", what, sec);
  };
  try {
    ThreadPool pool(threads);
    if (!r1cs.empty()) {
      const Circuit c = circuit_from_r1cs(r1cs);
      lap("circuit read");
      std::mt19937_64 trng(seed ? s ^ 0x70c1cULL : random_scalar()[1]);
      write_zkey(c, ToxicWaste::draw(trng), prefix + ".zkey", prefix + ".vkey.json", pool);
      lap("proving key");
      std::printf("%s.zkey: %zu constraints, %u public, nVars %u (INSECURE test key for %s)\n", prefix.c_str(),
                  c.constraints.size(), c.n_public, c.n_vars(), r1cs.c_str());
      return 0;
    }
    Circuit c = make_circuit(constraints, pub, s);
    std::mt19937_64 wrng(s ^ 0x5eedULL);
    write_r1cs(c, prefix + ".r1cs");
    write_wtns(c.witness(wrng), prefix + ".wtns");
    for (uint32_t k = 1; k <= witnesses; ++k) write_wtns(c.witness(wrng), prefix + "." + std::to_string(k) + ".wtns");
    lap("circuit and witnesses");
    std::mt19937_64 trng(seed ? s ^ 0x70c1cULL : random_scalar()[1]);
    write_zkey(c, ToxicWaste::draw(trng), prefix + ".zkey", prefix + ".vkey.json", pool);
    lap("proving key");
    std::printf("%s.zkey: %u constraints, %u public, nVars %u (INSECURE test key)\n", prefix.c_str(), constraints, pub,
                c.n_vars());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-testkey: %s\n", e.what());
    return 1;
  }
  return 0;
}
