#pragma once
// The GENERATOR argument of `zkfarm-prove fullprove` and `zkfarm-prove
// witness`: a circuit.wasm, a circom --c folder (either built once into the
// user's cache, witgen/generator_cache.hpp) or a generator built before; and
// running it on an input file (witgen/generator_run.hpp).
#include <CLI/CLI.hpp>
#include <string>

#include "files/unique_fd.hpp"
#include "groth16/wtns.hpp"

namespace zkfarm::tools {

/// How witnesses are made.
struct WitnessOptions {
  unsigned timeout_ms = 600000;  ///< one witness may take this long
  unsigned build_jobs = 0;       ///< compilers at once when a generator is built (0: the cores)
  /// --witness-engine (witgen/witness_engine.hpp): "auto" (default: a --c
  /// circuit's graph, built once with its generator and read back planned,
  /// unless it was measured slower; the generator otherwise), "graph",
  /// "generator" (one witness a process), "native"/"wasm".
  std::string engine = "auto";
};

/// --timeout-ms, --build-jobs and --witness-engine.
void add_witness_flags(CLI::App& app, WitnessOptions& wo);

/// The generator executable for `path`: built (once, cached) from a wasm or
/// a --c folder, or `path` itself when it is an executable that is not a
/// wasm. A --c folder's witness graph is built with it and checked first on
/// `first_input` (an input.json path; "" for none). Throws InputError naming
/// `path` and why it cannot be used.
std::string generator_for(const std::string& path, const WitnessOptions& wo, const std::string& first_input = "");

/// Makes the witness of the input file `input` (a regular file) with the
/// circuit's graph or generator `exe` (made from `generator_path`, for
/// messages), as wo.engine says. Returns the .wtns in a memfd. Throws
/// InputError naming the input and the fault (GenerateError's words).
files::UniqueFd witness_from_input(const std::string& exe, const std::string& generator_path, const std::string& input,
                                   const WitnessOptions& wo);

/// The witness in memfd `fd`, mapped and validated, its messages naming it
/// `name`. Throws InputError.
Wtns open_generated(const files::UniqueFd& fd, const std::string& name);

}  // namespace zkfarm::tools
