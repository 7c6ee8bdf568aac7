// zkfarm-gpu: the proving worker. Started by zkfarmd (one per CUDA device, or
// one on the CPU); connects to its workers socket, says READY, and answers
// each PROVE by proving the synthesized partition in the named arena slot
// (PROVE_DONE with the 256-byte proof). Protocol: docs/protocol.md.
// Exit codes (protocol/worker_channel.hpp):
//   0 SHUTDOWN or SIGTERM; 1 internal error; 2 bad usage or ZKFARM_FAULT;
//   3 cannot attach the arena or connect, or the backend asked for is not
//     built (do not respawn); 4 supervisor lost (heartbeat timeout, parent died).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "groth16/errors.hpp"
#include "gpu_worker/cpu_backend.hpp"
#include "protocol/proof_codec.hpp"
#include "protocol/work_request.hpp"
#include "protocol/worker_channel.hpp"
#include "shm/arena.hpp"

namespace {

using namespace zkfarm;
namespace proto = zkfarm::protocol;

constexpr const char* kVersion = "0.1.0";

// One PROVE: fields offset, size, zkey (ProtocolError when missing).
proto::WorkResult prove(const proto::Message& req, const shm::Arena& arena, gpu::ProveBackend& backend) {
  const std::string zkey = proto::get_str(req, "zkey");
  return proto::run_step([&] {
    const Zkey& key = backend.load(zkey);
    Proof proof = backend.prove(key, proto::request_buffers(req, arena, key), random_scalar(), random_scalar(),
                                &proto::abort_flag());
    return proto::WorkResult{true, {}, proto::encode_proof(proof)};
  });
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything can start a thread: the signal mask must be inherited.
  if (!proto::guard_process()) {
    std::fprintf(stderr, "zkfarm-gpu: parent already gone, exiting\n");
    return proto::kExitSupervisorLost;
  }
  CLI::App app{"zkfarm-gpu: zkfarm's proving worker (started by zkfarmd, not by hand)."};
  std::string endpoint, arena_name, id = "gpu-0", backend_name = "auto";
  unsigned threads = 0;
  unsigned heartbeat_ms = 1000, heartbeat_timeout_ms = 10000;
  app.add_option("--endpoint", endpoint, "the supervisor's workers socket, e.g. ipc:///var/lib/zkfarm/workers.sock")
      ->required();
  app.add_option("--arena", arena_name, "shared-memory arena name (/dev/shm/NAME)")->required();
  app.add_option("--id", id, "worker id (routing id, READY's worker)")->capture_default_str();
  app.add_option("--threads", threads, "CPU proving threads (0: all cores)")->capture_default_str()->check(CLI::Range(0u, 1024u));
  app.add_option("--backend", backend_name, "cpu, cuda, or auto (cuda when built and a device is present, else cpu)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat period (ms)")->capture_default_str()->check(CLI::Range(10u, 600000u));
  app.add_option("--heartbeat-timeout-ms", heartbeat_timeout_ms, "exit after this long without a message from the supervisor (ms)")
      ->capture_default_str()
      ->check(CLI::Range(20u, 3600000u));
  app.set_version_flag("--version", std::string("zkfarm-gpu ") + kVersion);
  app.footer(proto::kFaultHelp);
  try {
    app.parse(argc, argv);
    if (heartbeat_timeout_ms <= heartbeat_ms) throw CLI::ValidationError("--heartbeat-timeout-ms must exceed --heartbeat-ms");
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "zkfarm-gpu: %s (see --help)\n", e.what());
    return proto::kExitUsage;
  }
  if (backend_name == "cuda") {
    std::fprintf(stderr, "zkfarm-gpu: CUDA backend not built (this zkfarm-gpu has the cpu backend only)\n");
    return proto::kExitEnvironment;
  }

  try {
    proto::WorkerOptions opt;
    opt.fault = proto::TestFault::from_env();
    shm::Arena arena = shm::Arena::attach(arena_name);
    // auto → cpu: the only backend built so far.
    std::unique_ptr<gpu::ProveBackend> backend = std::make_unique<gpu::CpuBackend>(threads);
    opt.endpoint = endpoint;
    opt.worker_id = id;
    opt.kind = "gpu";
    opt.version = kVersion;
    opt.backend = backend->name();
    opt.heartbeat = std::chrono::milliseconds(heartbeat_ms);
    opt.heartbeat_timeout = std::chrono::milliseconds(heartbeat_timeout_ms);
    proto::WorkerChannel channel(opt, [&](const proto::Message& req) { return prove(req, arena, *backend); });
    return channel.run();
  } catch (const std::invalid_argument& e) {  // ZKFARM_FAULT
    std::fprintf(stderr, "zkfarm-gpu: %s\n", e.what());
    return proto::kExitUsage;
  } catch (const shm::ArenaError& e) {
    std::fprintf(stderr, "zkfarm-gpu: %s\n", e.what());
    return proto::kExitEnvironment;
  } catch (const proto::ChannelError& e) {
    std::fprintf(stderr, "zkfarm-gpu: %s\n", e.what());
    return proto::kExitEnvironment;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-gpu: internal error: %s\n", e.what());
    return proto::kExitInternal;
  }
}
