// zkfarm-synth: the synthesis worker. Started by zkfarmd; connects to its
// workers socket, says READY, and answers each SYNTH by computing a = A·w,
// b = B·w, c = a∘b and the witness into the named arena slot (SYNTH_DONE).
// Protocol: docs/protocol.md. Exit codes: protocol/worker_channel.hpp
//   0 SHUTDOWN or SIGTERM; 1 internal error; 2 bad usage or ZKFARM_FAULT;
//   3 cannot attach the arena or connect (do not respawn);
//   4 supervisor lost (heartbeat timeout, parent died).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <variant>

#include "groth16/errors.hpp"
#include "groth16/key_cache.hpp"
#include "groth16/prover.hpp"
#include "protocol/work_request.hpp"
#include "protocol/worker_main.hpp"
#include "protocol/worker_channel.hpp"
#include "shm/arena.hpp"

namespace {

using namespace zkfarm;
namespace proto = zkfarm::protocol;

constexpr const char* kVersion = "0.1.0";

// One SYNTH: fields offset, size, zkey, wtns (ProtocolError when missing).
proto::WorkResult synth(const proto::Message& req, const shm::Arena& arena, KeyCache<std::monostate>& keys, ThreadPool& pool) {
  const std::string zkey = proto::get_str(req, "zkey");
  const std::string wtns_path = proto::get_str(req, "wtns");
  return proto::run_step([&] {
    const Zkey& key = *keys.get(zkey).key;
    Wtns wtns = Wtns::open(wtns_path);
    check_witness_matches(key, wtns);
    synthesize(key, wtns, proto::request_buffers(req, arena, key), pool, &proto::abort_flag());
    return proto::WorkResult{};
  });
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything can start a thread: the signal mask must be inherited.
  if (!proto::guard_process()) {
    std::fprintf(stderr, "zkfarm-synth: parent already gone, exiting\n");
    return proto::kExitSupervisorLost;
  }
  CLI::App app{"zkfarm-synth: zkfarm's synthesis worker (started by zkfarmd, not by hand)."};
  proto::WorkerFlags flags;
  flags.id = "synth-0";
  flags.threads = 1;
  proto::add_worker_flags(app, flags, "synthesis threads (0: all cores)");
  app.set_version_flag("--version", std::string("zkfarm-synth ") + kVersion);
  if (auto code = proto::parse_worker_flags(app, argc, argv, flags, "zkfarm-synth")) return *code;

  return proto::run_worker("zkfarm-synth", [&] {
    proto::WorkerOptions opt = proto::worker_options(flags, "synth", kVersion, "cpu");
    shm::Arena arena = shm::Arena::attach(flags.arena);
    ThreadPool pool(flags.threads);
    KeyCache<std::monostate> keys(4);
    proto::WorkerChannel channel(opt, [&](const proto::Message& req) { return synth(req, arena, keys, pool); });
    return channel.run();
  });
}
