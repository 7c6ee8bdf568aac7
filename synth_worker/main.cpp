// zkfarm-synth: the witness worker. Started by zkfarmd; connects to its
// workers socket, says READY, and answers each SYNTH (those of one job that
// wait together as one batch: synth_batch) by reading the
// partition's .wtns -- or, for a job of circom inputs, by evaluating the
// circuit's witness graph on the input (witgen/witness_engine.hpp) or, for
// a circuit without one, running its witness generator in a process of its
// own (witgen/generator_run.hpp: a failed assertion, a crash or an endless
// loop fails this partition only) -- checking the witness against its key (prime,
// count, every value canonical) and writing its values into the named arena
// slot (SYNTH_DONE).
// Synthesis proper (a = A·w, b = B·w, c = a∘b) runs in the GPU worker, next to
// the prove step: docs/decisions.md, "What runs where".
// Protocol: docs/protocol.md. Exit codes: protocol/worker_channel.hpp
//   0 SHUTDOWN or SIGTERM; 1 internal error; 2 bad usage or ZKFARM_FAULT;
//   3 cannot attach the arena or connect (do not respawn);
//   4 supervisor lost (heartbeat timeout, parent died).
#include <fcntl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <variant>

#include "version/build_info.hpp"
#include "groth16/curves.hpp"
#include "groth16/errors.hpp"
#include "groth16/key_cache.hpp"
#include "groth16/prover.hpp"
#include "protocol/worker_channel.hpp"
#include "shm/arena.hpp"
#include "witgen/generator_run.hpp"
#include "witgen/graph_file.hpp"
#include "witgen/statement_check.hpp"
#include "witgen/witness_engine.hpp"
#include "worker_kit/work_request.hpp"
#include "worker_kit/worker_main.hpp"

namespace {

using namespace zkfarm;
namespace proto = zkfarm::protocol;
namespace kit = zkfarm::worker_kit;

// The witness of a partition of circom inputs by the circuit's generator
// (with its limits and sandbox user), in a process of its own, into a memfd:
// for a circuit without a witness graph, or an input that failed in it
// (graph_into_slot); InputError naming the client's input file for anything
// the input or the circuit did wrong.
Wtns generate(const proto::CircuitInput& req, const Zkey& key) {
  const std::string& name = req.input_name;
  files::UniqueFd in(::open(req.input.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in) throw InputError(name + ": the farm's copy of it cannot be opened: " + std::strerror(errno));
  witgen::GeneratorInfo info;
  info.n8 = 32;
  info.witness_size = key.n_vars;
  witgen::GenerateOptions opt;
  opt.timeout = std::chrono::milliseconds(req.witness_timeout_ms);
  opt.memory_bytes = req.witness_memory_mib << 20;
  try {  // circuit code never runs as root (docs/witness.md, "Circuit code is confined")
    opt.sandbox = witgen::make_sandbox(req.sandbox_user, req.witness_cpu_s, witgen::sandbox_pool(req.sandbox_uid_base, req.sandbox_uid_count));
  } catch (const witgen::SandboxError& e) {
    throw InputError(name + ": " + e.what());
  }
  opt.cancel = &proto::abort_flag();
  files::UniqueFd out;
  try {
    // synth() tried the circuit's graph first: this is the generator's turn.
    out = witgen::generate_witness(req.generator, in.get(), info, opt);
  } catch (const witgen::GenerateError& e) {
    if (proto::abort_flag().load()) throw Cancelled();
    throw InputError(name + ": " + e.what());
  }
  const std::string path = "/proc/self/fd/" + std::to_string(out.get());
  try {
    Wtns w = Wtns::open(path);  // maps it: the memfd may close now
    w.path = name + " (its witness)";
    return w;
  } catch (const InputError& e) {
    std::string m = e.what();
    if (auto at = m.find(path); at != std::string::npos) m.replace(at, path.size(), name + " (its witness)");
    throw InputError(m);
  }
}

// The partition's witness from the circuit's witness graph, evaluated into
// `slot` (witgen/witness_engine.hpp); false when the circuit has none, the
// configuration says generator, or the input fails an assert there (the
// generator then runs and says why). InputError for an input of the wrong shape.
// The witness graph's number for the key's curve: the graph curve whose prime
// is the key's r (no table of ours to keep in step with witgen's numbering).
uint32_t graph_curve(const Zkey& key) {
  const uint64_t* r = curve_primes(key.curve).r;
  for (uint32_t c = 1; const uint64_t* m = witgen::graph::curve_modulus(c); ++c)
    if (std::equal(m, m + 4, r)) return c;
  throw InputError(key.path + ": no witness graph is made over " + curve_name(key.curve));
}

bool graph_into_slot(const proto::CircuitInput& req, const Zkey& key, U256* slot) {
  witgen::WitnessEngine engine = witgen::WitnessEngine::kAuto;
  witgen::parse_witness_engine(req.witness_engine, engine);
  const std::string& name = req.input_name;
  files::UniqueFd in(::open(req.input.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in) throw InputError(name + ": the farm's copy of it cannot be opened: " + std::strerror(errno));
  try {
    std::string refused;
    const bool used = witgen::graph_witness_into(req.generator, in.get(), engine, graph_curve(key), key.n_vars,
                                                 reinterpret_cast<uint8_t*>(slot), req.graph_sha256, &refused);
    // zkfarmd logs a worker's stderr: a graph refused for its digest is said
    // (once a graph: every partition of the circuit would say it again), and
    // the generator runs.
    static std::set<std::string> said;
    if (!refused.empty() && said.insert(refused).second)
      std::fprintf(stderr, "zkfarm-synth: %s: not using the circuit's witness graph (%s); its generator makes the "
                   "witness\n", name.c_str(), refused.c_str());
    return used;
  } catch (const witgen::GenerateError& e) {
    throw InputError(name + ": " + e.what());
  }
}

// A partition of inputs: the witness in its slot must state the input's
// public values, whatever made it (witgen/statement_check.hpp).
void check_statement(const proto::CircuitInput& req, const Zkey& key, const U256* slot) {
  files::UniqueFd in(::open(req.input.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in) throw InputError(req.input_name + ": the farm's copy of it cannot be opened: " + std::strerror(errno));
  try {
    witgen::check_statement_fd(in.get(), req.statement, witgen::graph::curve_prime_le(graph_curve(key)), key.n_public,
                               reinterpret_cast<const uint8_t*>(slot), key.n_vars);
  } catch (const std::exception& e) {
    throw InputError(req.input_name + ": " + e.what());
  }
}

// One SYNTH: its witness from a .wtns, or made from a circom input.
proto::WorkResult synth(const proto::Synth& req, const shm::Arena& arena, KeyCache<std::monostate>& keys) {
  return kit::run_step([&] {
    const Zkey& key = *keys.get(req.zkey).key;
    const auto* input = std::get_if<proto::CircuitInput>(&req.witness);
    // A circuit's witness graph writes the witness straight into the slot:
    // canonical values of the key's count by construction, nothing to copy or check.
    U256* slot = kit::request_witness(req.span, arena, key);
    if (input && graph_into_slot(*input, key, slot)) {
      check_statement(*input, key, slot);
      return proto::WorkResult{};
    }
    Wtns wtns = input ? generate(*input, key) : Wtns::open(std::get<proto::WitnessFile>(req.witness).path);
    check_witness_matches(key, wtns);
    if (proto::abort_flag().load()) throw Cancelled();
    std::memcpy(slot, wtns.values.data(), witness_bytes(key));
    if (input) check_statement(*input, key, slot);
    return proto::WorkResult{};
  });
}

// Reads and arranges the input of a partition for the graph `ev`; throws
// InputError naming the client's file (a shape the graph refuses is the
// input's fault: the generator would say the same).
std::vector<U256> graph_values(const proto::CircuitInput& in, const witgen::graph::Evaluator& ev) {
  files::UniqueFd fd(::open(in.input.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throw InputError(in.input_name + ": the farm's copy of it cannot be opened: " + std::strerror(errno));
  try {
    return witgen::graph_input_values(ev, fd.get());
  } catch (const witgen::GenerateError& e) {
    throw InputError(in.input_name + ": " + e.what());
  }
}

// A batch of SYNTHs of one job (the channel gathers them): the partitions
// of circom inputs whose circuit has a usable witness graph are evaluated
// in one pass of its program (the program streams through memory once for
// all of them, and their inversions share one: graph_eval.hpp), each
// witness written into its own slot and its statement checked. What is
// left (a .wtns, a circuit without a graph, an input that fails an assert in
// the graph: the generator says why) goes one at a time through synth().
// An aborted partition's answer is ok:false (the supervisor has dropped it).
std::vector<proto::WorkResult> synth_batch(const std::vector<proto::Synth>& reqs,
                                           const std::vector<const std::atomic<bool>*>& aborted,
                                           const shm::Arena& arena, KeyCache<std::monostate>& keys) {
  std::vector<proto::WorkResult> results(reqs.size());
  std::vector<bool> done(reqs.size(), false);
  const auto* first = std::get_if<proto::CircuitInput>(&reqs.front().witness);
  witgen::WitnessEngine engine = witgen::WitnessEngine::kAuto;
  if (first) witgen::parse_witness_engine(first->witness_engine, engine);
  const witgen::GraphState st = first ? witgen::graph_state(first->generator) : witgen::GraphState{};
  if (reqs.size() > 1 && st.present && engine != witgen::WitnessEngine::kGenerator &&
      !(engine == witgen::WitnessEngine::kAuto && st.slower && !st.batches_faster)) {
    try {
      const Zkey& key = *keys.get(reqs.front().zkey).key;
      // A refused graph (digest, damage) is left to synth(), which says so once.
      const auto ev = witgen::load_graph(st.path, first->graph_sha256);
      if (ev->graph().curve == graph_curve(key) && ev->graph().witness_size == key.n_vars) {
        std::vector<size_t> members;
        std::vector<std::vector<U256>> values;
        std::vector<uint8_t*> slots;
        for (size_t i = 0; i < reqs.size(); ++i) {
          const auto* in = std::get_if<proto::CircuitInput>(&reqs[i].witness);
          if (!in || in->generator != first->generator || in->graph_sha256 != first->graph_sha256 ||
              reqs[i].zkey != reqs.front().zkey)
            continue;
          results[i] = kit::run_step([&] {
            values.push_back(graph_values(*in, *ev));
            slots.push_back(reinterpret_cast<uint8_t*>(kit::request_witness(reqs[i].span, arena, key)));
            members.push_back(i);
            return proto::WorkResult{};
          });
          if (!results[i].ok) {  // its input or slot: its own failure, the others go on
            done[i] = true;
            if (values.size() > members.size()) values.pop_back();
          }
        }
        std::vector<const std::vector<U256>*> ptrs;
        for (const auto& v : values) ptrs.push_back(&v);
        std::vector<witgen::graph::InputOutcome> outcomes;
        if (!members.empty()) ev->evaluate(ptrs, slots, outcomes);
        if (members.size() > 1)  // zkfarmd logs it: one line a batch, not a partition
          std::fprintf(stderr, "zkfarm-synth: %zu partitions of job %llu in one pass of the witness graph\n",
                       members.size(), static_cast<unsigned long long>(reqs.front().ref.job));
        for (size_t k = 0; k < members.size(); ++k) {
          const size_t i = members[k];
          if (!outcomes[k].ok) continue;  // an assert failed: the generator says why (synth below)
          const auto& in = std::get<proto::CircuitInput>(reqs[i].witness);
          results[i] = kit::run_step([&] {
            check_statement(in, key, reinterpret_cast<const U256*>(slots[k]));
            return proto::WorkResult{};
          });
          done[i] = true;
        }
      }
    } catch (const witgen::graph::GraphError&) {
    } catch (const InputError&) {  // the key: synth() fails each partition with the same words
    }
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (aborted[i]->load()) {
      results[i] = proto::WorkResult::failure("aborted");
      continue;
    }
    if (!done[i]) results[i] = synth(reqs[i], arena, keys);
  }
  return results;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything can start a thread: the signal mask must be inherited.
  if (!proto::guard_process()) {
    std::fprintf(stderr, "zkfarm-synth: parent already gone, exiting\n");
    return proto::kExitSupervisorLost;
  }
  CLI::App app{"zkfarm-synth: zkfarm's synthesis worker (started by zkfarmd, not by hand)."};
  kit::WorkerFlags flags;
  flags.id = "synth-0";
  flags.threads = 1;
  kit::add_worker_flags(app, flags, "threads (unused: a witness is read and checked on one)");
  app.set_version_flag("--version", zkfarm::build_info::version_line("zkfarm-synth"));
  if (auto code = kit::parse_worker_flags(app, argc, argv, flags, "zkfarm-synth")) return *code;

  return kit::run_worker("zkfarm-synth", [&] {
    proto::WorkerOptions opt = kit::worker_options(flags, "synth", zkfarm::build_info::version(), "cpu");
    // Batches: the SYNTHs of one job waiting when the worker frees
    // (zkfarmd's synth_batch decides how many it sends at once).
    opt.batch = proto::kMaxSynthBatch;
    opt.max_queued = proto::kMaxSynthBatch;
    shm::Arena arena = shm::Arena::attach(flags.arena);
    KeyCache<std::monostate> keys(4);
    proto::SynthBatchHandler handler = [&](const std::vector<proto::Synth>& reqs,
                                           const std::vector<const std::atomic<bool>*>& aborted) {
      return synth_batch(reqs, aborted, arena, keys);
    };
    proto::WorkerChannel channel(opt, handler);
    return channel.run();
  });
}
