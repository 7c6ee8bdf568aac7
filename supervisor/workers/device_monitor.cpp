#include "supervisor/workers/device_monitor.hpp"

namespace zkfarm::supervisor {

DeviceMonitor::DeviceMonitor() : check_(FakeReleaseCheck::from_env()) {
  if (!check_) check_ = ReleaseCheck::make_default();
}

void DeviceMonitor::sample(int64_t now, const WorkerTable& workers) {
  if (now < next_sample_ms_) return;
  next_sample_ms_ = now + 5000;
  for (const auto& [id, w] : workers.all()) {
    if (!kind_info(w.kind).holds_device || w.device.empty()) continue;
    if (auto u = check_->usage(w.device)) usage_[w.device] = *u;
    else usage_.erase(w.device);
  }
}

}  // namespace zkfarm::supervisor
