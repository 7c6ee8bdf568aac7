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
#include "protocol/worker_main.hpp"
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
  proto::WorkerFlags flags;
  flags.id = "gpu-0";
  std::string backend_name = "auto";
  proto::add_worker_flags(app, flags, "CPU proving threads (0: all cores)");
  app.add_option("--backend", backend_name, "cpu, cuda, or auto (cuda when built and a device is present, else cpu)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.set_version_flag("--version", std::string("zkfarm-gpu ") + kVersion);
  if (auto code = proto::parse_worker_flags(app, argc, argv, flags, "zkfarm-gpu")) return *code;
  if (backend_name == "cuda") {
    std::fprintf(stderr, "zkfarm-gpu: CUDA backend not built (this zkfarm-gpu has the cpu backend only)\n");
    return proto::kExitEnvironment;
  }

  return proto::run_worker("zkfarm-gpu", [&] {
    shm::Arena arena = shm::Arena::attach(flags.arena);
    // auto → cpu: the only backend built so far.
    std::unique_ptr<gpu::ProveBackend> backend = std::make_unique<gpu::CpuBackend>(flags.threads);
    proto::WorkerOptions opt = proto::worker_options(flags, "gpu", kVersion, backend->name());
    proto::WorkerChannel channel(opt, [&](const proto::Message& req) { return prove(req, arena, *backend); });
    return channel.run();
  });
}
