// zkfarm-synth: the witness worker. Started by zkfarmd; connects to its
// workers socket, says READY, and answers each SYNTH by reading the
// partition's .wtns, checking it against its key (prime, count, every value
// canonical) and writing its values into the named arena slot (SYNTH_DONE).
// Synthesis proper (a = A·w, b = B·w, c = a∘b) runs in the GPU worker, next to
// the prove step: docs/decisions.md, "What runs where".
// Protocol: docs/protocol.md. Exit codes: protocol/worker_channel.hpp
//   0 SHUTDOWN or SIGTERM; 1 internal error; 2 bad usage or ZKFARM_FAULT;
//   3 cannot attach the arena or connect (do not respawn);
//   4 supervisor lost (heartbeat timeout, parent died).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
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
proto::WorkResult synth(const proto::Message& req, const shm::Arena& arena, KeyCache<std::monostate>& keys) {
  const std::string zkey = proto::get_str(req, "zkey");
  const std::string wtns_path = proto::get_str(req, "wtns");
  return proto::run_step([&] {
    const Zkey& key = *keys.get(zkey).key;
    Wtns wtns = Wtns::open(wtns_path);
    check_witness_matches(key, wtns);
    if (proto::abort_flag().load()) throw Cancelled();
    std::memcpy(proto::request_witness(req, arena, key), wtns.values.data(), witness_bytes(key));
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
  proto::add_worker_flags(app, flags, "threads (unused: a witness is read and checked on one)");
  app.set_version_flag("--version", std::string("zkfarm-synth ") + kVersion);
  if (auto code = proto::parse_worker_flags(app, argc, argv, flags, "zkfarm-synth")) return *code;

  return proto::run_worker("zkfarm-synth", [&] {
    proto::WorkerOptions opt = proto::worker_options(flags, "synth", kVersion, "cpu");
    shm::Arena arena = shm::Arena::attach(flags.arena);
    KeyCache<std::monostate> keys(4);
    proto::WorkerChannel channel(opt, [&](const proto::Message& req) { return synth(req, arena, keys); });
    return channel.run();
  });
}
