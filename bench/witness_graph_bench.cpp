// zkfarm-bench-witness: a circuit's witness graph (docs/witness.md, "The
// witness graph") evaluated in this process, as a synthesis worker holds
// it: loaded once, then batches of B inputs on T threads for a while.
// Prints the load time, the graph's size, and witnesses per second for each
// (batch, threads) asked for; bench/witness_bench.py puts these beside
// snarkjs and the generators in the same run.
//   zkfarm-bench-witness GRAPH INPUT.json [INPUT.json …] [--batch 1,16,64] [--threads 1,2] [--seconds 3]
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "witgen/graph_eval.hpp"
#include "witgen/graph_format.hpp"
#include "witgen/input_json.hpp"
#include "witgen/witness_engine.hpp"

using namespace zkfarm;
using namespace zkfarm::witgen;

int main(int argc, char** argv) {
  CLI::App app{"zkfarm-bench-witness: witness graph evaluation, witnesses per second"};
  std::string graph_path;
  std::vector<std::string> input_paths;
  std::vector<unsigned> batches{1, 16, 64}, threads{1};
  double seconds = 3;
  app.add_option("GRAPH", graph_path, "a graph file (the cache's HASH/graph)")->required();
  app.add_option("INPUT", input_paths, "input.json files, used in turn")->required();
  app.add_option("--batch", batches, "inputs evaluated together")->delimiter(',');
  app.add_option("--threads", threads, "threads, each evaluating batches")->delimiter(',');
  app.add_option("--seconds", seconds, "time per (batch, threads)");
  CLI11_PARSE(app, argc, argv);

  // Read (checked, parsed), then planned: what a worker pays once per circuit.
  const auto t0 = std::chrono::steady_clock::now();
  graph::Graph read = graph::read_graph_file(graph_path, graph::kIndexMask);
  const auto t1 = std::chrono::steady_clock::now();
  auto ev = std::make_shared<const graph::Evaluator>(std::move(read));
  const double read_s = std::chrono::duration<double>(t1 - t0).count();
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const graph::Graph& g = ev->graph();
  const std::vector<uint8_t> prime = graph::curve_prime_le(g.curve);
  std::vector<std::vector<U256>> inputs;
  for (const auto& p : input_paths) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    inputs.push_back(ev->arrange(parse_input(s.str(), prime)));
  }
  std::printf(
      "graph: %zu nodes recorded, %zu evaluated (%zu on integers), %u field and %u integer slots; witness %u values; "
      "loaded in %.3f s (read %.3f s)\n",
      g.nodes.size(), ev->instructions(), ev->small_instructions(), ev->slots(), ev->small_slots(), g.witness_size,
      load_s, read_s);
  for (unsigned t : threads)
    for (unsigned b : batches) {
      std::atomic<uint64_t> done{0};
      std::atomic<bool> stop{false};
      std::atomic<bool> failed{false};
      // Each thread's batch and output buffers, made (and touched) before the clock starts.
      std::vector<std::vector<const std::vector<U256>*>> batch(t);
      std::vector<std::vector<std::vector<uint8_t>>> out(t);
      for (unsigned k = 0; k < t; ++k) {
        for (unsigned i = 0; i < b; ++i) batch[k].push_back(&inputs[(k + i) % inputs.size()]);
        out[k].assign(b, std::vector<uint8_t>(size_t(g.witness_size) * 32, 1));
      }
      std::vector<std::thread> pool;
      const auto start = std::chrono::steady_clock::now();
      for (unsigned k = 0; k < t; ++k)
        pool.emplace_back([&, k] {
          std::vector<uint8_t*> ptrs;
          for (auto& o : out[k]) ptrs.push_back(o.data());
          std::vector<graph::InputOutcome> outcome;
          do {  // at least one batch, however long it takes
            ev->evaluate(batch[k], ptrs, outcome);
            for (const auto& o : outcome) failed = failed || !o.ok;
            done += b;
          } while (!stop.load());
        });
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      stop = true;
      for (auto& th : pool) th.join();
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("batch %3u threads %2u: %10.2f witnesses/s (%.3f ms each)%s\n", b, t, double(done) / el,
                  1000.0 * el / double(done) * t, failed ? "  SOME INPUTS FAILED" : "");
      std::fflush(stdout);
    }
  return 0;
}
