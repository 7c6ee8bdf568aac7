#include "supervisor/workers/worker_kinds.hpp"

namespace zkfarm::supervisor {

namespace {

std::vector<std::string> synth_options(const Config& cfg, const std::string&) {
  return {"--threads", std::to_string(cfg.synth_threads)};
}

std::vector<std::string> gpu_options(const Config& cfg, const std::string& device) {
  std::vector<std::string> o = {"--threads", std::to_string(cfg.gpu_threads), "--backend",
                                device.empty() && cfg.backend == "auto" ? "cpu" : cfg.backend,
                                "--key-memory-percent", std::to_string(cfg.gpu_key_memory_percent)};
  // Unset: the worker's own default ("auto"); a worker binary from before
  // "auto" then keeps its own (none), never a refused flag.
  if (cfg.gpu_msm_copies) o.insert(o.end(), {"--msm-copies", std::to_string(*cfg.gpu_msm_copies)});
  // Only when asked for: a worker binary from before lanes still starts.
  if (cfg.gpu_lanes > 1) o.insert(o.end(), {"--lanes", std::to_string(cfg.gpu_lanes)});
  return o;
}

}  // namespace

const std::array<WorkerKindInfo, kWorkerKindCount> kWorkerKinds = {{
    {WorkerKind::kSynth, "synth", &Config::synth_binary, &protocol::Rolling::synth, false, &synth_options},
    {WorkerKind::kGpu, "gpu", &Config::gpu_binary, &protocol::Rolling::gpu, true, &gpu_options},
}};

const WorkerKindInfo& kind_info(WorkerKind k) { return kWorkerKinds.at(size_t(k)); }

const char* worker_kind_name(WorkerKind k) { return kind_info(k).name; }

}  // namespace zkfarm::supervisor
