#pragma once
// The kinds of worker zkfarmd runs, as one table (issue 48: one table per
// closed set, iterated wherever the set is used): the name that ids, metrics
// and `restart TARGET` use, the configured binary, the upgrade request's
// field, whether it holds a device, and the arguments it starts with.
// A new kind is a row here, a WorkerKind value and its binary's options.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "protocol/control_requests.hpp"
#include "supervisor/config.hpp"

namespace zkfarm::supervisor {

/// The rows of kWorkerKinds, in their order.
enum class WorkerKind { kSynth, kGpu };
inline constexpr size_t kWorkerKindCount = 2;

/// One kind of worker.
struct WorkerKindInfo {
  WorkerKind kind;
  /// "synth", "gpu": a worker's id is NAME-N; the `kind` label of the worker
  /// metrics; a `restart` target.
  const char* name;
  /// The configured executable (synth_binary, gpu_binary).
  std::string Config::*binary;
  /// The upgrade request's new executable for this kind (`upgrade --synth`, `--gpu`).
  std::optional<std::string> protocol::Rolling::*upgrade_binary;
  /// A device's worker: started with CUDA_VISIBLE_DEVICES, its device memory
  /// released before a restart (release.hpp), watched by the device monitor.
  bool holds_device;
  /// The command-line options particular to the kind, after the common ones
  /// (endpoint, arena, id, heartbeats); `device` is the worker's ("" for none).
  std::vector<std::string> (*options)(const Config& cfg, const std::string& device);
};

/// Every kind, in WorkerKind's order.
extern const std::array<WorkerKindInfo, kWorkerKindCount> kWorkerKinds;

/// The row of `k`.
const WorkerKindInfo& kind_info(WorkerKind k);

/// kind_info(k).name.
const char* worker_kind_name(WorkerKind k);

/// One value per kind, indexed by WorkerKind (e.g. the new binaries of an upgrade).
template <class T>
using PerKind = std::array<T, kWorkerKindCount>;

}  // namespace zkfarm::supervisor
