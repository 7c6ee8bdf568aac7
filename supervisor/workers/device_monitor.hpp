#pragma once
// The GPU devices as zkfarmd sees them: the release check that tells when a
// dead GPU worker's memory is back (release.hpp; NVML, or the test double
// ZKFARM_TEST_RELEASE_MS names) and, from the same source, each GPU worker's
// device memory and utilization for /metrics, sampled every few seconds.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "supervisor/workers/release.hpp"
#include "supervisor/workers/worker_table.hpp"

namespace zkfarm::supervisor {

class DeviceMonitor {
 public:
  /// FakeReleaseCheck::from_env() when ZKFARM_TEST_RELEASE_MS is set, else
  /// ReleaseCheck::make_default(). Throws std::invalid_argument for a bad
  /// ZKFARM_TEST_RELEASE_MS.
  DeviceMonitor();

  /// The check the worker table's release waits use.
  ReleaseCheck& release_check() { return *check_; }
  /// Samples each GPU worker's device, at most every 5 s (an NVML query
  /// takes well under a millisecond, but /metrics needs no more); `now` is
  /// monotonic ms.
  void sample(int64_t now, const WorkerTable& workers);
  /// The last samples by device entry; empty without NVML.
  const std::map<std::string, DeviceUsage>& usage() const { return usage_; }

 private:
  std::unique_ptr<ReleaseCheck> check_;
  std::map<std::string, DeviceUsage> usage_;
  int64_t next_sample_ms_ = 0;
};

}  // namespace zkfarm::supervisor
