#pragma once
// Building a witness generator from what circom made (docs/witness.md):
//   wasm    CIRCUIT.wasm (`circom --wasm`) -> wasm2c (wabt) -> C -> gcc, linked
//           with wasm_host.cpp and wabt's wasm-rt runtime;
//   native  the `circom --c` folder (CIRCUIT.cpp, CIRCUIT.dat, main.cpp,
//           calcwit.*, circom.hpp, fr.*) -> g++ and nasm, linked with
//           native_main.cpp and GMP.
// Either way the result is one executable, GENERATOR (plus GENERATOR.dat for
// native), with generator_host.hpp's command line. Builds are named by the
// content hash of their sources (source_hash), so the same circuit is built
// once. Tools come from PATH: g++, gcc, nasm, wasm2c (Debian: build-essential,
// nasm, wabt, libgmp-dev, nlohmann-json3-dev).
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "witgen/sandbox.hpp"

namespace zkfarm::witgen {

enum class GeneratorKind { kWasm, kNative };
const char* generator_kind_name(GeneratorKind k);  ///< "wasm", "native"

/// A build that failed: what() names the step, the command's end and its
/// last output lines.
struct BuildError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A generator's sources as zkfarm keeps them: for wasm one file named
/// circuit.wasm; for native the files of the circom --c folder.
struct GeneratorSources {
  GeneratorKind kind = GeneratorKind::kWasm;
  std::string dir;                 ///< folder holding them
  std::vector<std::string> files;  ///< their names in `dir`, sorted
};

/// The files of a `circom --c` folder zkfarm takes (regular files only):
/// *.cpp, *.hpp, *.dat and fr.asm; checks that main.cpp, calcwit.cpp,
/// calcwit.hpp, circom.hpp, fr.cpp, fr.hpp, fr.asm, one CIRCUIT.dat and its
/// CIRCUIT.cpp are there. Throws BuildError naming what is missing or wrong.
std::vector<std::string> native_source_files(const std::vector<std::string>& names_in_dir);

/// The version of the generator hosts: part of every source hash, so a
/// zkfarm whose hosts changed builds its generators anew.
inline constexpr const char* kHostVersion = "zkfarm-witgen-6";

/// SHA-256 (hex) over kHostVersion, the kind, and each file's name, size and
/// SHA-256 in name order: the generator's identity.
std::string source_hash(const GeneratorSources& src);

/// Where the hosts' sources are: a folder holding witgen/ (the repository,
/// or PREFIX/share/zkfarm once installed).
struct BuildOptions {
  std::string witgen_root;
  unsigned jobs = 2;                            ///< compilers at once
  std::chrono::milliseconds timeout{30 * 60 * 1000};  ///< the whole build
  const std::atomic<bool>* cancel = nullptr;
  /// Every compiler runs confined (sandbox.hpp). With sandbox.drop_uid a
  /// wasm build runs in a folder of the sandbox user's own under the
  /// temporary folder, and only its product is taken (generator_cache.cpp).
  Sandbox sandbox;
  uint64_t memory_bytes = 0;  ///< RLIMIT_DATA of each compiler; 0: unchanged
  // The witness graph of a native circuit (graph_build.hpp), built with it.
  bool graph = true;                             ///< build one at all
  uint64_t graph_max_nodes = uint64_t(1) << 26;  ///< witness_graph_max_nodes
  uint32_t graph_random_inputs = 6;              ///< random inputs it is checked on
  std::vector<std::string> graph_test_inputs;    ///< and these input.json texts first
};

/// One step of a build: a command that must succeed; `what` names it in errors.
struct BuildStep {
  std::string what;
  std::vector<std::string> argv;
};

/// Runs `at_once` (opt.jobs at a time) and then `then` in order, each in
/// `cwd`, confined by opt.sandbox and opt.memory_bytes, all within
/// opt.timeout. Throws BuildError naming the first step that failed.
void run_build_steps(const std::string& cwd, const BuildOptions& opt, const std::vector<BuildStep>& at_once,
                     const std::vector<BuildStep>& then = {});

/// Builds `src` into folder `out` (made if missing): out/generator, and for
/// native out/generator.dat. Intermediate files stay in out/build (removed at
/// the end). Throws BuildError.
void build_generator(const GeneratorSources& src, const std::string& out, const BuildOptions& opt);

/// The folder holding witgen/ for a program at `exe_dir`: EXE_DIR/../share/zkfarm
/// when it has witgen/generator_host.hpp (an install), else the source tree
/// this program was built from. "" when neither has it.
std::string find_witgen_root(const std::string& exe_dir);

}  // namespace zkfarm::witgen
