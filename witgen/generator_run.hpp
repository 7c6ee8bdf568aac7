#pragma once
// Running a built witness generator (generator_build.hpp) on one input: in a
// process of its own (witgen/subprocess.hpp), so that a circuit's failed
// assertion, a crash or an endless loop fails that one input and nothing
// else, within a timeout and a memory bound. The witness comes back in an
// anonymous memory file (memfd), never on disk.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "files/unique_fd.hpp"
#include "witgen/input_json.hpp"
#include "witgen/sandbox.hpp"

namespace zkfarm::witgen {

/// What `GENERATOR --info` says of its circuit.
struct GeneratorInfo {
  std::string kind;           ///< "wasm" or "native"
  std::string prime;          ///< decimal
  uint32_t n8 = 0;            ///< bytes of a field element
  uint32_t witness_size = 0;  ///< values in the witness (a key's nVars)
  uint32_t input_count = 0;   ///< values of the main component's inputs
  /// The main component's input signals (hash of the name, values), their
  /// sizes adding up to input_count; nullopt when the generator did not list
  /// them (built before it could, or a wasm whose map it could not find).
  std::optional<std::vector<SignalShape>> inputs;
};

/// A generator that could not make the witness; what() is one line for
/// people: "signal b has 3 values, the circuit's has 2", "the circuit
/// failed: Assert Failed. Error in template Bad_0 line: 7", "witness
/// generation timed out after 60000 ms", "the generator crashed (…)".
/// input_fault() is true when the input file itself is wrong (exit 2).
class GenerateError : public std::runtime_error {
 public:
  GenerateError(const std::string& what, bool input_fault) : std::runtime_error(what), input_fault_(input_fault) {}
  bool input_fault() const { return input_fault_; }

 private:
  bool input_fault_;
};

/// Limits of one run.
struct GenerateOptions {
  std::chrono::milliseconds timeout{60000};
  uint64_t memory_bytes = 0;            ///< RLIMIT_DATA of the generator; 0: unchanged
  const std::atomic<bool>* cancel = nullptr;  ///< killed when it turns true (GenerateError "cancelled")
  /// Confinement (sandbox.hpp). With drop_uid, a wasm generator is opened
  /// here and executed from its descriptor as the sandbox user (who cannot
  /// reach the state dir); a native one (EXE.dat beside it: admins' code,
  /// which reads its .dat by path) keeps zkfarmd's uid and the other limits.
  Sandbox sandbox;
  /// The input's keys are "#HASH" (generator_host.hpp's --hashed-keys).
  bool hashed_keys = false;
};

/// Whether generator_info asks for the circuit's input signals (GeneratorInfo::inputs).
enum class InfoInputs { kSkip, kList };

/// `exe --info` (with `--inputs` for InfoInputs::kList), within opt.timeout,
/// under opt's memory and sandbox (the input is not read). Throws
/// GenerateError when it fails or says something that is not its info line.
GeneratorInfo generator_info(const std::string& exe, const GenerateOptions& opt,
                             InfoInputs inputs = InfoInputs::kSkip);

/// Runs `exe` with the input JSON read from `input_fd` (from its start) and
/// returns a memfd holding the .wtns it wrote (at most 44 + n8·(witness_size
/// + 1) bytes: `info` bounds it). Throws GenerateError.
files::UniqueFd generate_witness(const std::string& exe, int input_fd, const GeneratorInfo& info,
                                 const GenerateOptions& opt);

}  // namespace zkfarm::witgen
