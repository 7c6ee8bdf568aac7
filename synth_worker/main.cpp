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
  std::string endpoint, arena_name, id = "synth-0";
  unsigned threads = 1;
  unsigned heartbeat_ms = 1000, heartbeat_timeout_ms = 10000;
  app.add_option("--endpoint", endpoint, "the supervisor's workers socket, e.g. ipc:///var/lib/zkfarm/workers.sock")
      ->required();
  app.add_option("--arena", arena_name, "shared-memory arena name (/dev/shm/NAME)")->required();
  app.add_option("--id", id, "worker id (routing id, READY's worker)")->capture_default_str();
  app.add_option("--threads", threads, "synthesis threads (0: all cores)")->capture_default_str()->check(CLI::Range(0u, 1024u));
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat period (ms)")->capture_default_str()->check(CLI::Range(10u, 600000u));
  app.add_option("--heartbeat-timeout-ms", heartbeat_timeout_ms, "exit after this long without a message from the supervisor (ms)")
      ->capture_default_str()
      ->check(CLI::Range(20u, 3600000u));
  app.set_version_flag("--version", std::string("zkfarm-synth ") + kVersion);
  app.footer(proto::kFaultHelp);
  try {
    app.parse(argc, argv);
    if (heartbeat_timeout_ms <= heartbeat_ms) throw CLI::ValidationError("--heartbeat-timeout-ms must exceed --heartbeat-ms");
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "zkfarm-synth: %s (see --help)\n", e.what());
    return proto::kExitUsage;
  }

  try {
    proto::WorkerOptions opt;
    opt.fault = proto::TestFault::from_env();
    opt.endpoint = endpoint;
    opt.worker_id = id;
    opt.kind = "synth";
    opt.version = kVersion;
    opt.backend = "cpu";
    opt.heartbeat = std::chrono::milliseconds(heartbeat_ms);
    opt.heartbeat_timeout = std::chrono::milliseconds(heartbeat_timeout_ms);

    shm::Arena arena = shm::Arena::attach(arena_name);
    ThreadPool pool(threads);
    KeyCache<std::monostate> keys(4);
    proto::WorkerChannel channel(opt, [&](const proto::Message& req) { return synth(req, arena, keys, pool); });
    return channel.run();
  } catch (const std::invalid_argument& e) {  // ZKFARM_FAULT
    std::fprintf(stderr, "zkfarm-synth: %s\n", e.what());
    return proto::kExitUsage;
  } catch (const shm::ArenaError& e) {
    std::fprintf(stderr, "zkfarm-synth: %s\n", e.what());
    return proto::kExitEnvironment;
  } catch (const proto::ChannelError& e) {
    std::fprintf(stderr, "zkfarm-synth: %s\n", e.what());
    return proto::kExitEnvironment;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-synth: internal error: %s\n", e.what());
    return proto::kExitInternal;
  }
}
