// zkfarm-bench-synth: the farm's witness path measured without a GPU (issue
// 46, item 7). N real zkfarm-synth processes on an arena of their own, fed
// by this program in zkfarmd's place (a ROUTER on workers.sock, the SYNTHs
// zkfarmd sends: one job, a batch of B partitions an idle worker, each in a
// slot of its own) for --seconds each batch size; a finished witness is
// consumed at once (its slot reused), as if a GPU took it. Prints inputs/s
// and the time a witness by batch size, and the ratio to the circuit's
// witness graph held in this process on one core (batch 64: what the
// workers could reach at most, times their number).
//
//   zkfarm-bench-synth --generator STATE/circuits/HASH/generator --zkey KEY.zkey
//                      --input a.json [--input b.json …] [--workers N] [--batch 1,4,16,64] [--seconds 5]
//
// The generator folder must hold its graph (zkfarm-prove --witness-engine
// graph, or circuit add of a --c folder, built it); the key must be the
// circuit's (its nVars sizes the slots). Every SYNTH_DONE must be ok.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "groth16/prover.hpp"
#include "groth16/zkey.hpp"
#include "protocol/messages.hpp"
#include "protocol/worker_messages.hpp"
#include "shm/arena.hpp"
#include "witgen/graph_eval.hpp"
#include "witgen/input_json.hpp"
#include "witgen/witness_engine.hpp"

extern char** environ;

namespace {

using namespace zkfarm;
namespace proto = zkfarm::protocol;
using Clock = std::chrono::steady_clock;

struct Worker {
  pid_t pid = -1;
  std::string route;  // its routing id, once READY came
  size_t in_flight = 0;
};

std::string self_dir() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().string();
}

// The held graph on this thread: witnesses/s of batch `b` over `inputs`.
double held_rate(const witgen::graph::Evaluator& ev, const std::vector<std::vector<U256>>& inputs, size_t b,
                 double seconds) {
  std::vector<std::vector<uint8_t>> out(b, std::vector<uint8_t>(size_t(ev.graph().witness_size) * 32));
  std::vector<const std::vector<U256>*> in;
  std::vector<uint8_t*> outp;
  for (size_t i = 0; i < b; ++i) {
    in.push_back(&inputs[i % inputs.size()]);
    outp.push_back(out[i].data());
  }
  std::vector<witgen::graph::InputOutcome> outcome;
  size_t done = 0;
  const auto t0 = Clock::now();
  do {
    ev.evaluate(in, outp, outcome);
    done += b;
  } while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds);
  return double(done) / std::chrono::duration<double>(Clock::now() - t0).count();
}

int run(const std::string& generator, const std::string& zkey_path, const std::vector<std::string>& inputs,
        unsigned workers, const std::vector<size_t>& batches, double seconds) {
  const Zkey key = Zkey::open(zkey_path);
  const witgen::GraphState st = witgen::graph_state(generator);
  if (!st.present) throw std::runtime_error(generator + ": no witness graph beside it (" + st.reason + ")");
  const auto ev = witgen::load_graph(st.path);
  std::vector<std::vector<U256>> values;
  for (const std::string& p : inputs) {
    std::ifstream f(p);
    std::string text((std::istreambuf_iterator<char>(f)), {});
    values.push_back(ev->arrange(witgen::parse_input(text, witgen::graph::curve_prime_le(ev->graph().curve))));
  }
  const size_t max_batch = *std::max_element(batches.begin(), batches.end());
  const uint64_t slot_bytes = (witness_bytes(key) + 4095) & ~uint64_t(4095);
  const std::string arena_name = "zkfarm-bench-synth-" + std::to_string(::getpid());
  shm::Arena::remove(arena_name);
  shm::Arena arena = shm::Arena::create(arena_name, slot_bytes * max_batch * workers);
  const std::string dir = std::filesystem::temp_directory_path() / ("zkfarm-bench-synth-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string endpoint = "ipc://" + dir + "/workers.sock";
  zmq::context_t ctx;
  zmq::socket_t sock(ctx, zmq::socket_type::router);
  sock.set(zmq::sockopt::linger, 0);
  sock.bind(endpoint);

  std::vector<Worker> ws(workers);
  const std::string synth_bin = self_dir() + "/zkfarm-synth";
  for (unsigned i = 0; i < workers; ++i) {
    std::vector<std::string> args{synth_bin, "--endpoint", endpoint, "--arena", arena_name, "--id",
                                  "synth-" + std::to_string(i), "--heartbeat-ms", "200"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (int rc = posix_spawn(&ws[i].pid, argv[0], nullptr, nullptr, argv.data(), environ))
      throw std::runtime_error("posix_spawn " + synth_bin + ": " + std::strerror(rc));
  }
  std::map<std::string, size_t> by_route;
  auto heartbeat_due = Clock::now();
  uint64_t failures = 0;
  auto pump = [&](int wait_ms, size_t& finished) {
    zmq_pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(wait_ms));
    for (;;) {
      zmq::message_t id, body;
      if (!sock.recv(id, zmq::recv_flags::dontwait)) break;
      (void)sock.recv(body);
      const proto::FromWorker m = proto::decode_from_worker(body.to_string_view());
      if (const auto* r = std::get_if<proto::Ready>(&m)) {
        const size_t w = size_t(std::stoul(r->worker.substr(6)));
        ws[w].route = id.to_string();
        by_route[ws[w].route] = w;
      } else if (const auto* d = std::get_if<proto::SynthDone>(&m)) {
        Worker& w = ws[by_route.at(id.to_string())];
        --w.in_flight;
        ++finished;
        if (!d->result.ok && failures++ < 3) std::fprintf(stderr, "zkfarm-bench-synth: %s\n", d->result.error.c_str());
      }
    }
    if (Clock::now() >= heartbeat_due) {
      for (const Worker& w : ws)
        if (!w.route.empty()) {
          sock.send(zmq::buffer(w.route), zmq::send_flags::sndmore);
          sock.send(zmq::buffer(proto::encode(proto::Heartbeat{})));
        }
      heartbeat_due = Clock::now() + std::chrono::milliseconds(200);
    }
  };
  size_t finished = 0;
  while (std::any_of(ws.begin(), ws.end(), [](const Worker& w) { return w.route.empty(); })) pump(50, finished);

  const double held64 = held_rate(*ev, values, 64, std::min(seconds, 3.0));
  std::printf("zkfarm-bench-synth: %u synthesis workers, %zu inputs, witness %u values; the graph held on one core "
              "(batch 64): %.1f witnesses/s (%.3f ms each)\n",
              workers, inputs.size(), key.n_vars, held64, 1e3 / held64);
  uint64_t partition = 0, job = 1;
  for (size_t b : batches) {
    finished = 0;
    ++job;
    const auto t0 = Clock::now();
    while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds) {
      for (size_t w = 0; w < ws.size(); ++w) {
        if (ws[w].in_flight) continue;
        for (size_t k = 0; k < b; ++k, ++partition) {  // a batch: B SYNTHs sent together, slots of their own
          const uint32_t slot = uint32_t(w * max_batch + k);
          proto::CircuitInput in{.generator = generator, .input = inputs[partition % inputs.size()],
                                 .input_name = inputs[partition % inputs.size()], .witness_engine = "graph"};
          proto::Synth s{.ref = {job, uint32_t(partition), slot, 1}, .span = {slot * slot_bytes, slot_bytes},
                         .zkey = zkey_path, .witness = in, .batch_of = b};
          sock.send(zmq::buffer(ws[w].route), zmq::send_flags::sndmore);
          sock.send(zmq::buffer(proto::encode(s)));
          ++ws[w].in_flight;
        }
      }
      pump(1, finished);
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    while (std::any_of(ws.begin(), ws.end(), [](const Worker& w) { return w.in_flight > 0; })) pump(20, finished);
    const double rate = double(finished) / elapsed;
    std::printf("  batch %-3zu %8.1f inputs/s  %7.3f ms a witness and worker  %5.2fx the held graph × %u workers\n", b,
                rate, 1e3 * workers / rate, rate / (held64 * workers), workers);
  }
  for (Worker& w : ws) {
    ::kill(w.pid, SIGTERM);
    int status;
    ::waitpid(w.pid, &status, 0);
  }
  shm::Arena::remove(arena_name);
  std::filesystem::remove_all(dir);
  if (failures) {
    std::fprintf(stderr, "zkfarm-bench-synth: %llu partitions failed\n", static_cast<unsigned long long>(failures));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zkfarm-bench-synth: the farm's witness path (real synthesis workers), without a GPU"};
  std::string generator, zkey;
  std::vector<std::string> inputs;
  unsigned workers = 1;
  std::vector<size_t> batches{1, 4, 16, 64};
  double seconds = 5;
  app.add_option("--generator", generator, "a built generator whose folder holds its witness graph")->required();
  app.add_option("--zkey", zkey, "the circuit's proving key")->required();
  app.add_option("--input", inputs, "input.json files, used in turn")->required();
  app.add_option("--workers", workers, "zkfarm-synth processes")->check(CLI::Range(1u, 256u));
  app.add_option("--batch", batches, "batch sizes, comma separated")->delimiter(',')->check(CLI::Range(1, 64));
  app.add_option("--seconds", seconds, "each batch size")->check(CLI::Range(0.5, 600.0));
  CLI11_PARSE(app, argc, argv);
  try {
    for (auto& p : inputs) p = std::filesystem::absolute(p).string();  // the workers open them
    return run(std::filesystem::absolute(generator).string(), std::filesystem::absolute(zkey).string(), inputs,
               workers, batches, seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-bench-synth: %s\n", e.what());
    return 1;
  }
}
