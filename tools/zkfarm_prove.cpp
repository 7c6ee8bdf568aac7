// zkfarm-prove: one Groth16 proof from a snarkjs proving key and witness, with
// the argument order of `snarkjs groth16 prove`; `zkfarm-prove fullprove` from
// a circom input instead, with the order of `snarkjs groth16 fullprove`: the
// witness is made first by the circuit's generator (its wasm or its circom
// --c folder, built once and cached; witgen/), in a process of its own.
// Every proof is verified (groth16/verify.hpp) before anything is written.
// Exit codes: 0 proved; 2 bad input or usage (one line on stderr naming the
// file and the fault; no output file is written), including a proof that does
// not verify (a witness that does not satisfy the circuit); 1 an internal failure;
// 3 the CUDA backend was asked for and cannot be used (no device, not built,
// or a device error).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <thread>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include "version/build_info.hpp"
#include "gpu_worker/select_backend.hpp"
#include "groth16/decimal.hpp"
#include "files/unique_fd.hpp"
#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/curve_list.hpp"
#include "groth16/prover.hpp"
#include "groth16/verify.hpp"
#include "tools/generator_arg.hpp"

namespace {

constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitDevice = 3;

struct Options {
  unsigned threads = 0;
  std::string backend = "auto";  // auto: cuda when built and a device is there, else cpu
  std::string g2 = "gpu";
  unsigned msm_copies = 1;  // cuda backend: precomputed copies of the key's MSM bases (CudaOptions::msm_copies)
  std::string blinding;          // "R,S" in decimal: tests only (a fixed r, s makes proofs comparable)
};

// The fixed blinding of --test-blinding, or fresh random scalars of curve C.
template <class C>
std::pair<zkfarm::U256, zkfarm::U256> blinding(const std::string& spec) {
  using namespace zkfarm;
  using FrP = typename C::Fr::Params;
  if (spec.empty()) return {random_scalar_of<C>(), random_scalar_of<C>()};
  const auto comma = spec.find(',');
  auto r = comma == std::string::npos ? std::nullopt : parse_decimal(spec.substr(0, comma));
  auto s = comma == std::string::npos ? std::nullopt : parse_decimal(spec.substr(comma + 1));
  if (!r || !s || !is_canonical<FrP>(*r) || !is_canonical<FrP>(*s))
    throw InputError("--test-blinding: want R,S as two decimal integers below the group order, got '" + spec + "'");
  return {*r, *s};
}

// Writes public.json and proof.json, both or neither.
template <class Proof>
void write_outputs(const std::string& proof_path, const std::string& public_path, const std::string& public_json,
                   const Proof& proof) {
  using namespace zkfarm;
  write_file_atomic(public_path, public_json);
  try {
    write_file_atomic(proof_path, proof_to_json(proof));
  } catch (...) {
    ::unlink(public_path.c_str());  // never leave half of the output
    throw;
  }
}

int refuse_unverified(const std::string& wtns_name, const std::string& reason) {
  std::fprintf(stderr,
               "zkfarm-prove: %s: the proof does not verify (%s): the witness does not satisfy the circuit, "
               "the key is damaged, or the backend computed a wrong result\n",
               wtns_name.c_str(), reason.c_str());
  return kExitBadInput;
}


// Proves `wtns` (already opened; `wtns_name` names it in messages) with the
// key at `key_path` over curve C on the chosen backend, verifies, writes both
// outputs or neither.
template <class C>
int prove_on(const std::string& key_path, const zkfarm::Wtns& wtns, const std::string& wtns_name,
             const std::string& proof_path, const std::string& public_path, const Options& opt) {
  using namespace zkfarm;
  const auto [r, s] = blinding<C>(opt.blinding);
  gpu::CudaOptions cuda;
  cuda.threads = opt.threads;
  cuda.g2_on_cpu = opt.g2 == "cpu";
  cuda.msm_copies = opt.msm_copies;
  std::unique_ptr<gpu::ProveBackend> backend;
  try {
    backend = gpu::make_backend(opt.backend, cuda, "zkfarm-prove");
  } catch (const gpu::DeviceError& e) {
    throw gpu::DeviceError(std::string("--backend cuda: ") + e.what());
  }
  const Zkey& key = backend->load(key_path);
  check_witness_matches(key, wtns);
  const auto vk = VerifyingKeyOf<C>::from_zkey(key);  // a bad key fails here, before the work

  // The witness is all the backend takes (as a farm slot holds it): synthesis
  // runs inside it, on the CPU's threads or on the device.
  std::vector<U256> witness(key.n_vars);
  gpu::HostPin pin(*backend, witness.data(), witness.size() * sizeof(U256), "zkfarm-prove");
  std::memcpy(witness.data(), wtns.values.data(), witness.size() * sizeof(U256));
  std::string public_json = public_to_json(witness.data(), key.n_public);
  const ProofOf<C> proof = gpu::prove_of<C>(*backend, key, witness.data(), r, s);

  // Synthesis does not check the constraints, so an unsatisfying witness gives
  // a proof; so would a backend fault. Neither may reach the output files.
  const VerifyResult check = verify_proof(vk, proof, {witness.data() + 1, key.n_public});
  if (!check) return refuse_unverified(wtns_name, check.reason);
  write_outputs(proof_path, public_path, public_json, proof);
  return 0;
}

// The key's header says its curve (bn128 or bls12381); both backends prove both.
int prove(const std::string& key_path, const zkfarm::Wtns& wtns, const std::string& wtns_name,
          const std::string& proof_path, const std::string& public_path, const Options& opt) {
  using namespace zkfarm;
  return with_curve(Zkey::open(key_path, ZkeyContents::unchecked).curve, [&]<class C>(std::type_identity<C>) {
    return prove_on<C>(key_path, wtns, wtns_name, proof_path, public_path, opt);
  });
}

int run(const std::string& key_path, const std::string& wtns_path, const std::string& proof_path,
        const std::string& public_path, const Options& opt) {
  return prove(key_path, zkfarm::Wtns::open(wtns_path), wtns_path, proof_path, public_path, opt);
}

int fullprove(const std::string& input, const std::string& generator_path, const std::string& key_path,
              const std::string& proof_path, const std::string& public_path, const Options& opt,
              const zkfarm::tools::WitnessOptions& wo) {
  using namespace zkfarm;
  const std::string exe = tools::generator_for(generator_path, wo, input);
  files::UniqueFd wtns_fd = tools::witness_from_input(exe, generator_path, input, wo);
  const std::string name = input + " (its witness)";
  Wtns wtns = tools::open_generated(wtns_fd, name);
  return prove(key_path, wtns, name, proof_path, public_path, opt);
}

// `zkfarm-prove witness GENERATOR INPUT.json WITNESS.wtns`: snarkjs's `wtns
// calculate`, with any generator kind.
int witness(const std::string& generator_path, const std::string& input, const std::string& out,
            const zkfarm::tools::WitnessOptions& wo) {
  using namespace zkfarm;
  const std::string exe = tools::generator_for(generator_path, wo, input);
  files::UniqueFd wtns_fd = tools::witness_from_input(exe, generator_path, input, wo);
  // Copied from the memfd (tens of MB for a large circuit: not read into
  // memory first); a witness that changed while it was copied is refused.
  copy_file_atomic(out, wtns_fd.get(), input + " (its witness)");
  return 0;
}

}  // namespace

namespace {

void add_prover_flags(CLI::App& app, Options& opt) {
  app.add_option("--threads", opt.threads, "worker threads (default: all cores)")->check(CLI::Range(0u, 1024u));
  app.add_option("--backend", opt.backend, "auto (cuda when built and a GPU is present), cpu or cuda")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--g2", opt.g2, "cuda backend: the G2 MSM on the gpu or on the cpu threads")
      ->capture_default_str()
      ->check(CLI::IsMember({"gpu", "cpu"}));
  app.add_option("--msm-copies", opt.msm_copies,
                 "cuda backend: precomputed copies of the key's MSM bases (1: none; 0: up to 16; not yet run on a GPU)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 16u));
  app.add_option("--test-blinding", opt.blinding,
                 "TESTS ONLY, breaks zero knowledge: fixed blinding scalars R,S (decimal) so that two backends' "
                 "proofs can be compared byte for byte");
  app.set_version_flag("--version", zkfarm::build_info::version_line("zkfarm-prove"));
}

template <class F>
int guarded(F&& f) {
  try {
    return f();
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

int parse(CLI::App& app, int argc, char** argv) {
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
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (argc > 1 && std::strcmp(argv[1], "fullprove") == 0) {
    CLI::App app{
        "zkfarm-prove fullprove: make the witness from a circom input with the circuit's generator, then prove it.\n"
        "GENERATOR is the circuit's .wasm (circom --wasm), its circom --c folder (built once with g++/nasm, or\n"
        "wasm2c and gcc, and kept in $XDG_CACHE_HOME/zkfarm/generators), or a generator built before.\n"
        "Writes PROOF.json and PUBLIC.json as `snarkjs groth16 fullprove` does.",
        "zkfarm-prove fullprove"};
    zkfarm::tools::WitnessOptions fo;
    std::string input, generator, key, proof, pub;
    add_prover_flags(app, opt);
    zkfarm::tools::add_witness_flags(app, fo);
    app.add_option("INPUT.json", input, "the circuit's input signals (circom/snarkjs input.json)")->required();
    app.add_option("GENERATOR", generator, "circuit.wasm, a circom --c folder, or a built generator")->required();
    app.add_option("KEY.zkey", key, "Groth16 proving key (snarkjs .zkey, bn128 or bls12381)")->required();
    app.add_option("PROOF.json", proof, "proof output")->required();
    app.add_option("PUBLIC.json", pub, "public signals output")->required();
    if (int code = parse(app, argc - 1, argv + 1); code >= 0) return code;
    return guarded([&] { return fullprove(input, generator, key, proof, pub, opt, fo); });
  }
  if (argc > 1 && std::strcmp(argv[1], "witness") == 0) {
    CLI::App app{
        "zkfarm-prove witness: compute a circuit's witness from a circom input, as `snarkjs wtns calculate` does\n"
        "(byte for byte the same .wtns). GENERATOR as for fullprove.",
        "zkfarm-prove witness"};
    zkfarm::tools::WitnessOptions wo;
    std::string generator, input, out;
    zkfarm::tools::add_witness_flags(app, wo);
    app.set_version_flag("--version", zkfarm::build_info::version_line("zkfarm-prove"));
    app.add_option("GENERATOR", generator, "circuit.wasm, a circom --c folder, or a built generator")->required();
    app.add_option("INPUT.json", input, "the circuit's input signals")->required();
    app.add_option("WITNESS.wtns", out, "the witness to write")->required();
    if (int code = parse(app, argc - 1, argv + 1); code >= 0) return code;
    return guarded([&] { return witness(generator, input, out, wo); });
  }
  CLI::App app{
      "zkfarm-prove: make one Groth16 proof (bn128 or bls12381) from a snarkjs .zkey and a .wtns witness.\n"
      "Writes PROOF.json and PUBLIC.json as `snarkjs groth16 prove` does.\n"
      "`zkfarm-prove fullprove --help`: from a circom input.json instead of a witness;\n"
      "`zkfarm-prove witness --help`: only the witness (snarkjs wtns calculate)."};
  std::string key, wtns, proof, pub;
  add_prover_flags(app, opt);
  app.add_option("KEY.zkey", key, "Groth16 proving key (snarkjs .zkey, bn128 or bls12381)")->required();
  app.add_option("WITNESS.wtns", wtns, "witness (snarkjs/circom .wtns)")->required();
  app.add_option("PROOF.json", proof, "proof output")->required();
  app.add_option("PUBLIC.json", pub, "public signals output")->required();
  if (int code = parse(app, argc, argv); code >= 0) return code;
  return guarded([&] { return run(key, wtns, proof, pub, opt); });
}
