#pragma once
// What the loop publishes for other threads (the HTTP server's /status,
// /metrics, /healthz, /readyz): the latest rendered status and metrics texts,
// when the loop last ran, and whether the farm is ready. The loop writes;
// any thread reads. Times are monotonic milliseconds (clock.hpp steady_ms).
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace zkfarm::supervisor {

class PublishedView {
 public:
  /// The loop ran at `now_ms`; `ready`: intake open and every worker READY.
  void mark_loop(int64_t now_ms, bool ready) {
    loop_ms_ = now_ms;
    ready_ = ready;
  }
  /// The loop's latest renderings (status JSON, Prometheus text 0.0.4).
  void publish(std::string status, std::string metrics) {
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = std::move(status);
    metrics_ = std::move(metrics);
  }
  std::string status() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_;
  }
  std::string metrics() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return metrics_;
  }
  /// The loop ran within the last `stall_ms` of `now_ms`.
  bool healthy(int64_t now_ms, int64_t stall_ms = 5000) const { return now_ms - loop_ms_.load() < stall_ms; }
  bool ready() const { return ready_.load(); }

 private:
  mutable std::mutex mutex_;
  std::string status_, metrics_;
  std::atomic<int64_t> loop_ms_{0};
  std::atomic<bool> ready_{false};
};

}  // namespace zkfarm::supervisor
