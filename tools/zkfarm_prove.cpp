// zkfarm-prove: one Groth16 proof from a snarkjs proving key and witness, with
// the argument order of `snarkjs groth16 prove`.
// Exit codes: 0 proved; 2 bad input or usage (one line on stderr naming the
// file and the fault; no output file is written); 1 an internal failure.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <vector>

#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/prover.hpp"

namespace {

constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

int run(const std::string& key_path, const std::string& wtns_path, const std::string& proof_path,
        const std::string& public_path, unsigned threads) {
  using namespace zkfarm;
  Zkey key = Zkey::open(key_path);
  Wtns wtns = Wtns::open(wtns_path);
  check_witness_matches(key, wtns);
  ThreadPool pool(threads);
  Prover prover(key, pool);

  std::vector<uint64_t> memory((PartitionBuffers::bytes_for(key) + 7) / 8);
  PartitionBuffers buffers = PartitionBuffers::view(memory.data(), key);
  synthesize(key, wtns, buffers, pool);
  std::string public_json = public_to_json(buffers.witness, key.n_public);
  Proof proof = prover.prove(buffers, random_scalar(), random_scalar(), pool);

  write_file_atomic(public_path, public_json);
  try {
    write_file_atomic(proof_path, proof_to_json(proof));
  } catch (...) {
    ::unlink(public_path.c_str());  // never leave half of the output
    throw;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "zkfarm-prove: make one Groth16 proof (BN254) from a snarkjs .zkey and a .wtns witness.\n"
      "Writes PROOF.json and PUBLIC.json as `snarkjs groth16 prove` does."};
  unsigned threads = 0;
  std::string key, wtns, proof, pub;
  app.add_option("--threads", threads, "worker threads (default: all cores)")->check(CLI::Range(0u, 1024u));
  app.add_option("KEY.zkey", key, "Groth16 proving key (snarkjs .zkey, bn128)")->required();
  app.add_option("WITNESS.wtns", wtns, "witness (snarkjs/circom .wtns)")->required();
  app.add_option("PROOF.json", proof, "proof output")->required();
  app.add_option("PUBLIC.json", pub, "public signals output")->required();
  app.set_version_flag("--version", "zkfarm-prove 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "zkfarm-prove: %s (see --help)\n", e.what());
    return kExitBadInput;
  }
  try {
    return run(key, wtns, proof, pub, threads);
  } catch (const zkfarm::InputError& e) {
    std::fprintf(stderr, "zkfarm-prove: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "zkfarm-prove: out of memory\n");
    return kExitInternal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-prove: internal error: %s\n", e.what());
    return kExitInternal;
  }
}
