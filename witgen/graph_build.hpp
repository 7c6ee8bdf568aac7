#pragma once
// Building a circuit's witness graph (docs/witness.md, "The witness graph")
// beside its native generator, once per circuit: the circuit's C++ is
// rewritten (graph_rewrite.hpp), compiled with the recorder
// (graph_recorder.cpp) and run once, confined like any circuit code; the
// graph it writes is read as hostile input (graph_file.hpp) and then held to
// the generator, byte for byte, on test inputs, before it is kept.
#include <cstdint>
#include <string>
#include <vector>

#include "witgen/generator_build.hpp"
#include "witgen/generator_run.hpp"

namespace zkfarm::witgen {

/// What became of a circuit's graph.
struct GraphBuildResult {
  bool built = false;   ///< DIR/graph was written
  std::string reason;   ///< when not: why, one line ("input-dependent loop condition at template Foo line 12")
  uint64_t nodes = 0;   ///< the recorder's nodes (before dead ones are dropped)
  uint32_t checked = 0; ///< test inputs on which graph and generator agreed
  double seconds = 0;   ///< the whole graph build
};

/// Builds the graph of the native sources `src` into `dir` (which holds the
/// built `generator` and `generator.dat`): DIR/graph on success, else
/// DIR/graph.refused holding the reason; the circuit then stays on its
/// generator. Never throws for a circuit that cannot be a graph or whose
/// graph fails its check (a BuildError only for the folder itself).
/// Limits and test inputs: opt.graph_*.
GraphBuildResult build_graph(const GeneratorSources& src, const std::string& dir, const BuildOptions& opt);

/// Holds the built generator `exe` (and its graph, where DIR/graph is
/// present and its digest is `graph_sha256`, or any when that is empty) to
/// one of the circuit's own test inputs (`circuit add --test-input`), on
/// every add, whether the build was made now or found in the cache. Returns
/// "" when `text` is an input file of the circuit's shape that the
/// generator turns into a witness and the graph, if any, gives the same
/// witness byte for byte; else the fault in one line ("not JSON at byte 3",
/// "not of the circuit's shape: signal b has 3 values, the circuit's has 2",
/// "the circuit fails on it: …", "the witness graph's witness differs from
/// the generator's"). `run`: the limits and sandbox of a generator run.
/// Throws nothing but std::bad_alloc.
std::string check_test_input(const std::string& exe, const GeneratorInfo& info, const std::string& text,
                             const GenerateOptions& run, const std::string& graph_sha256 = {});

/// The curve (graph_format.hpp) of a prime in decimal; 0 when zkfarm has no graph for it.
uint32_t graph_curve_of(const std::string& prime_decimal);

}  // namespace zkfarm::witgen
