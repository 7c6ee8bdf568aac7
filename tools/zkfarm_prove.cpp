// zkfarm-prove: one Groth16 proof from a snarkjs proving key and witness, with
// the argument order of `snarkjs groth16 prove`.
// Every proof is verified (groth16/verify.hpp) before anything is written.
// Exit codes: 0 proved; 2 bad input or usage (one line on stderr naming the
// file and the fault; no output file is written), including a proof that does
// not verify (a witness that does not satisfy the circuit); 1 an internal failure;
// 3 the CUDA backend was asked for and cannot be used (no device, not built,
// or a device error).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include "gpu_worker/select_backend.hpp"
#include "groth16/decimal.hpp"
#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/prover.hpp"
#include "groth16/verify.hpp"

namespace {

constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitDevice = 3;

struct Options {
  unsigned threads = 0;
  std::string backend = "auto";  // auto: cuda when built and a device is there, else cpu
  std::string g2 = "gpu";
  std::string blinding;          // "R,S" in decimal: tests only (a fixed r, s makes proofs comparable)
};

// The fixed blinding of --test-blinding, or fresh random scalars.
std::pair<zkfarm::U256, zkfarm::U256> blinding(const std::string& spec) {
  using namespace zkfarm;
  if (spec.empty()) return {random_scalar(), random_scalar()};
  const auto comma = spec.find(',');
  auto r = comma == std::string::npos ? std::nullopt : parse_decimal(spec.substr(0, comma));
  auto s = comma == std::string::npos ? std::nullopt : parse_decimal(spec.substr(comma + 1));
  if (!r || !s || !is_canonical<FrParams>(*r) || !is_canonical<FrParams>(*s))
    throw InputError("--test-blinding: want R,S as two decimal integers below the group order, got '" + spec + "'");
  return {*r, *s};
}

int run(const std::string& key_path, const std::string& wtns_path, const std::string& proof_path,
        const std::string& public_path, const Options& opt) {
  using namespace zkfarm;
  const auto [r, s] = blinding(opt.blinding);
  gpu::CudaOptions cuda;
  cuda.threads = opt.threads;
  cuda.g2_on_cpu = opt.g2 == "cpu";
  std::unique_ptr<gpu::ProveBackend> backend;
  try {
    backend = gpu::make_backend(opt.backend, cuda, "zkfarm-prove");
  } catch (const gpu::DeviceError& e) {
    throw gpu::DeviceError(std::string("--backend cuda: ") + e.what());
  }
  const Zkey& key = backend->load(key_path);
  Wtns wtns = Wtns::open(wtns_path);
  check_witness_matches(key, wtns);
  const VerifyingKey vk = VerifyingKey::from_zkey(key);  // a bad key fails here, before the work

  // The witness is all the backend takes (as a farm slot holds it): synthesis
  // runs inside it, on the CPU's threads or on the device.
  std::vector<U256> witness(key.n_vars);
  gpu::HostPin pin(*backend, witness.data(), witness.size() * sizeof(U256), "zkfarm-prove");
  std::memcpy(witness.data(), wtns.values.data(), witness.size() * sizeof(U256));
  std::string public_json = public_to_json(witness.data(), key.n_public);
  Proof proof = backend->prove(key, witness.data(), r, s, nullptr);

  // Synthesis does not check the constraints, so an unsatisfying witness gives
  // a proof; so would a backend fault. Neither may reach the output files.
  const VerifyResult check = verify_proof(vk, proof, {witness.data() + 1, key.n_public});
  if (!check) {
    std::fprintf(stderr,
                 "zkfarm-prove: %s: the proof does not verify (%s): the witness does not satisfy the circuit, "
                 "or the backend computed a wrong result\n",
                 wtns_path.c_str(), check.reason.c_str());
    return kExitBadInput;
  }

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
  Options opt;
  std::string key, wtns, proof, pub;
  app.add_option("--threads", opt.threads, "worker threads (default: all cores)")->check(CLI::Range(0u, 1024u));
  app.add_option("--backend", opt.backend, "auto (cuda when built and a GPU is present), cpu or cuda")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--g2", opt.g2, "cuda backend: the G2 MSM on the gpu or on the cpu threads")
      ->capture_default_str()
      ->check(CLI::IsMember({"gpu", "cpu"}));
  app.add_option("--test-blinding", opt.blinding,
                 "TESTS ONLY, breaks zero knowledge: fixed blinding scalars R,S (decimal) so that two backends' "
                 "proofs can be compared byte for byte");
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
    return run(key, wtns, proof, pub, opt);
  } catch (const zkfarm::InputError& e) {
    std::fprintf(stderr, "zkfarm-prove: %s\n", e.what());
    return kExitBadInput;
  } catch (const zkfarm::gpu::DeviceError& e) {
    std::fprintf(stderr, "zkfarm-prove: %s\n", e.what());
    return kExitDevice;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "zkfarm-prove: out of memory\n");
    return kExitInternal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-prove: internal error: %s\n", e.what());
    return kExitInternal;
  }
}
