// Fuzzes witgen::graph::parse_plan and the evaluator behind it: a prepared
// graph (graph_plan.hpp) is zkfarm's own file, but read as hostile input,
// so damage or a crafted file is refused or evaluated within bounds. The
// input is a plan's body; the fuzzer appends its checksum (a plan with a
// wrong one is refused before it is parsed, and the checksum would stop
// every mutation there) and takes the graph digest the body names.
// Oracles besides the sanitizers:
//  - parse_plan throws GraphError or returns; nothing else escapes;
//  - a plan it returns is evaluated on batches of 1 and 9 inputs (9: the
//    8-lane products where the CPU has them, and a scalar lane) without a
//    read or write out of bounds, and every witness value is below the prime.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "fuzz/witness_check.hpp"
#include "witgen/graph_eval.hpp"
#include "witgen/graph_file.hpp"
#include "witgen/graph_plan.hpp"
#include "witgen/graph_reader.hpp"

using namespace zkfarm;
using namespace zkfarm::witgen::graph;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 12 + 64) return 0;
  const std::string digest(reinterpret_cast<const char*>(data) + 12, 64);  // after the magic and the version
  const std::string checksum = plan_checksum(data, size);
  FileBytes bytes{std::shared_ptr<uint8_t[]>(new uint8_t[size + checksum.size()]), size + checksum.size()};
  std::memcpy(bytes.data.get(), data, size);
  std::memcpy(bytes.data.get() + size, checksum.data(), checksum.size());
  std::unique_ptr<Evaluator> ev;
  try {
    ev = parse_plan(bytes, digest);
  } catch (const GraphError&) {
    return 0;
  }
  const Graph& g = ev->graph();
  if (g.input_values > 4096 || g.witness_size > 65536 || ev->slots() > 65536 || ev->small_slots() > 65536) return 0;
  for (size_t batch : {size_t(1), size_t(9)}) {
    std::vector<std::vector<U256>> values(batch, std::vector<U256>(g.input_values, U256{3, 0, 0, 0}));
    std::vector<std::vector<uint8_t>> out(batch, std::vector<uint8_t>(size_t(g.witness_size) * 32));
    std::vector<const std::vector<U256>*> in;
    std::vector<uint8_t*> outp;
    for (size_t b = 0; b < batch; ++b) {
      in.push_back(&values[b]);
      outp.push_back(out[b].data());
    }
    std::vector<InputOutcome> outcome;
    ev->evaluate(in, outp, outcome);
    for (const auto& o : out) fuzz::abort_unless_below_prime(o, g.curve);
  }
  return 0;
}
