// zkfarm-gpu: the proving worker. Started by zkfarmd (one per CUDA device, or
// one on the CPU); connects to its workers socket, says READY, and answers
// each PROVE by proving the witness in the named arena slot: synthesis (a, b,
// c) and the prove step run in its backend, on the device or the CPU; the slot
// is only read, so a replacement can prove it again after a crash
// (PROVE_DONE with the encoded proof: 256 bytes BN254, 384 BLS12-381). PROVEs queue here up to the
// supervisor's gpu_queue_depth, highest priority first; with --lanes N, up to
// N small keys' prove steps run at once (lane_gate.hpp). Protocol: docs/protocol.md.
// Exit codes (protocol/worker_channel.hpp):
//   0 SHUTDOWN or SIGTERM; 1 internal error; 2 bad usage or ZKFARM_FAULT;
//   3 cannot attach the arena or connect, or the backend asked for is not
//     built (do not respawn); 4 supervisor lost (heartbeat timeout, parent died).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>

#include "version/build_info.hpp"
#include "groth16/errors.hpp"
#include "gpu_worker/device_fault.hpp"
#include "gpu_worker/lane_gate.hpp"
#include "gpu_worker/select_backend.hpp"
#include "groth16/proof_codec.hpp"
#include "protocol/worker_channel.hpp"
#include "shm/arena.hpp"
#include "worker_kit/work_request.hpp"
#include "worker_kit/worker_main.hpp"

namespace {

using namespace zkfarm;
namespace proto = zkfarm::protocol;
namespace kit = zkfarm::worker_kit;

// The proof of `req`'s witness with `key` (loaded), encoded.
proto::WorkResult prove_with(const proto::Prove& req, const shm::Arena& arena, gpu::ProveBackend& backend,
                             const Zkey& key) {
  const U256* witness = kit::request_witness(req.span, arena, key);
  // Blinding scalars uniform below the key's curve's r.
  std::string bytes = with_curve(key.curve, [&]<class C>(std::type_identity<C>) {
    return encode_proof(gpu::prove_of<C>(backend, key, witness, random_scalar_of<C>(), random_scalar_of<C>(),
                                         &proto::abort_flag()));
  });
  return proto::WorkResult{true, {}, std::move(bytes), std::nullopt};
}

// The answer to a step that faulted alone (the device still usable): said on
// stderr (the farm's log), and device_fault for the supervisor.
proto::WorkResult step_fault(const proto::Prove& req, const std::string& what) {
  std::fprintf(stderr, "zkfarm-gpu: job %llu partition %u: %s; the partition is proved again, the other steps go on\n",
               static_cast<unsigned long long>(req.ref.job), req.ref.partition, what.c_str());
  std::fflush(stderr);
  return proto::WorkResult::device_failure(what);
}

// One PROVE. A fault of this step alone (StepFault: device memory short, the
// device still usable; or host memory short) fails this partition with
// device_fault: the supervisor proves it again, and the other lanes' steps go
// on. A device fault that may have left the device unusable ends the process:
// the supervisor sees the exit, proves the partition again (here, once
// restarted, or on another worker) and never gets a proof from a device in an
// unknown state.
proto::WorkResult prove(const proto::Prove& req, const shm::Arena& arena, gpu::ProveBackend& backend,
                        gpu::LaneGate& gate) {
  try {
    const bool cached = backend.has_key(req.zkey);
    proto::WorkResult r = kit::run_step([&] {
      return gate.with_key(req.zkey, [&](const Zkey& key) { return prove_with(req, arena, backend, key); });
    });
    r.key_cached = cached;
    return r;
  } catch (const gpu::StepFault& e) {
    return step_fault(req, e.what());
  } catch (const std::bad_alloc&) {
    return step_fault(req, "host memory ran out in the prove step");
  } catch (const gpu::DeviceError& e) {
    std::fprintf(stderr, "zkfarm-gpu: %s; exiting so that the partition is proved again\n", e.what());
    std::fflush(stderr);
    std::_Exit(proto::kExitInternal);
  }
}
}  // namespace

int main(int argc, char** argv) {
  // Before anything can start a thread: the signal mask must be inherited.
  if (!proto::guard_process()) {
    std::fprintf(stderr, "zkfarm-gpu: parent already gone, exiting\n");
    return proto::kExitSupervisorLost;
  }
  CLI::App app{"zkfarm-gpu: zkfarm's proving worker (started by zkfarmd, not by hand)."};
  kit::WorkerFlags flags;
  flags.id = "gpu-0";
  std::string backend_name = "auto", g2 = "gpu";
  unsigned key_memory_percent = 60, lanes = 1;
  std::string msm_copies = "auto";
  kit::add_worker_flags(app, flags, "CPU proving threads (0: all cores)");
  app.add_option("--backend", backend_name, "cpu, cuda, or auto (cuda when built and a device is present, else cpu)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.add_option("--g2", g2, "CUDA backend: where the G2 MSM (B2) runs, gpu or cpu (the worker's CPU threads)")
      ->capture_default_str()
      ->check(CLI::IsMember({"gpu", "cpu"}));
  app.add_option("--key-memory-percent", key_memory_percent,
                 "CUDA backend: % of the device's memory resident proving keys may take (least recently used leave)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 95u));
  app.add_option("--msm-copies", msm_copies,
                 "CUDA backend: most precomputed copies of each resident key's MSM bases (1: none; 0: up to 16; "
                 "auto: up to 16 for keys of domain 2^18 or less, none for larger), within half of the key memory")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14",
                             "15", "16"}));  // exact spellings: Range would also take " 3" or "0x10"
  app.add_option("--lanes", lanes,
                 "prove steps run at once for keys of domain 2^18 or less already loaded (1-32); others run alone")
      ->capture_default_str()
      ->check(CLI::Range(1u, 32u));
  app.set_version_flag("--version", zkfarm::build_info::version_line("zkfarm-gpu"));
  if (auto code = kit::parse_worker_flags(app, argc, argv, flags, "zkfarm-gpu")) return *code;
  // Load every kernel with the context, before READY: lazy loading (CUDA's
  // default) would add its cost to the first proof of every new worker.
  ::setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  // With several lanes, each with its streams, CUDA's default of 8 hardware
  // work queues likely made independent lanes wait on each other's launches;
  // 32 gave 5.5–8 % more small proofs a second at 16 lanes on an H100 in one
  // pair of runs (docs/performance.md, 2026-12-07). An operator's value stays.
  if (lanes > 1) ::setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  gpu::CudaOptions cuda;
  cuda.threads = flags.threads;
  cuda.g2_on_cpu = g2 == "cpu";
  cuda.key_memory_share = key_memory_percent / 100.0;
  if (msm_copies != "auto") cuda.msm_copies = unsigned(std::stoul(msm_copies));  // "0" to "16": checked above
  // How the lanes' threads wait for the device: with one lane CUDA's spin
  // (a blocking wait cost 15 % of small proofs' rate on an H100), with
  // several a spin that yields the core (the fastest at 8 lanes, tied at 16;
  // a spinning lane held a core a lane: docs/performance.md, 2026-12-07).
  // ZKFARM_CUDA_SYNC (auto|spin|yield|block) overrides it for measurement.
  cuda.sync = lanes > 1 ? gpu::CudaSync::yield : gpu::CudaSync::automatic;
  if (const char* v = std::getenv("ZKFARM_CUDA_SYNC"); v && *v && backend_name != "cpu") {
    const auto mode = gpu::cuda_sync_of_name(v);
    if (!mode) {
      std::fprintf(stderr, "zkfarm-gpu: ZKFARM_CUDA_SYNC=%s: not one of auto, spin, yield, block\n", v);
      return proto::kExitUsage;
    }
    cuda.sync = *mode;
  }
  std::unique_ptr<gpu::ProveBackend> backend;
  try {
    backend = gpu::make_backend(backend_name, cuda, "zkfarm-gpu");
  } catch (const gpu::DeviceError& e) {
    std::fprintf(stderr, "zkfarm-gpu: cannot use the CUDA backend: %s\n", e.what());
    return proto::kExitEnvironment;
  }
  backend = gpu::DeviceFaultBackend::wrap_from_env(std::move(backend));

  return kit::run_worker("zkfarm-gpu", [&] {
    shm::Arena arena = shm::Arena::attach(flags.arena);
    // Pinned once for the worker's life (each slot's copy then runs at the
    // bus's rate), and unpinned before the arena is unmapped.
    gpu::HostPin pin(*backend, arena.mapping(), arena.mapping_bytes(), "zkfarm-gpu");
    proto::WorkerOptions opt = kit::worker_options(flags, "gpu", zkfarm::build_info::version(), backend->name());
    opt.max_queued = proto::kMaxQueuedWork;  // gpu_queue_depth: the supervisor sends the next while one computes
    opt.lanes = lanes;
    gpu::LaneGate gate(*backend, lanes);
    proto::ProveHandler handler = [&](const proto::Prove& req) { return prove(req, arena, *backend, gate); };
    proto::WorkerChannel channel(opt, handler);
    return channel.run();
  });
}
