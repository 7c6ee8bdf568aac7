// Fuzzes witgen::graph::parse_graph and the evaluator behind it: a witness
// graph is written by circuit code (the recorder runs the circuit's own
// C++) and read back by zkfarm. Oracles besides the sanitizers:
//  - parse_graph throws GraphError or returns; nothing else escapes;
//  - a graph it returns is planned and evaluated on one input without a
//    read or write out of bounds, and every witness value is below the prime.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "fuzz/witness_check.hpp"
#include "witgen/graph_eval.hpp"
#include "witgen/graph_file.hpp"
#include "witgen/graph_format.hpp"

using namespace zkfarm;
using namespace zkfarm::witgen::graph;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Graph g;
  try {
    g = parse_graph(data, size, 4096);
  } catch (const GraphError&) {
    return 0;
  }
  if (g.input_values > 4096 || g.witness_size > 65536) return 0;  // arrange() bounds real inputs
  Evaluator ev(std::move(g));
  std::vector<U256> values(ev.graph().input_values, U256{3, 0, 0, 0});
  std::vector<uint8_t> out(size_t(ev.graph().witness_size) * 32);
  std::vector<InputOutcome> outcome;
  ev.evaluate({&values}, {out.data()}, outcome);
  fuzz::abort_unless_below_prime(out, ev.graph().curve);
  return 0;
}
