#pragma once
// What this zkfarmd publishes about itself for other threads (the HTTP
// server's /status, /metrics, /healthz, /readyz): when it started, the latest
// rendered status and metrics texts and when they are due again, when the
// loop last ran, and whether the farm is ready. The loop writes; any thread
// reads. Times are monotonic milliseconds (clock.hpp) except started_wall_ms.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "supervisor/clock.hpp"

namespace zkfarm::supervisor {

class PublishedView {
 public:
  /// Unix ms when this instance started (status, process_start_time_seconds).
  int64_t started_wall_ms() const { return started_wall_ms_; }
  /// Seconds since this instance started, on the monotonic clock.
  double uptime_s(int64_t now_ms) const { return double(now_ms - started_steady_ms_) / 1000.0; }
  /// Whether the texts are due to be rendered again (at most every
  /// `every_ms`: the status lists every journaled job); true marks them rendered.
  bool render_due(int64_t now_ms, int64_t every_ms = 200) {
    if (now_ms - last_render_ms_ < every_ms) return false;
    last_render_ms_ = now_ms;
    return true;
  }
  /// The loop ran at `now_ms`; `not_ready_reason`: "" when ready (intake
  /// open and every worker READY), else why not, in words (GET /readyz's body).
  void mark_loop(int64_t now_ms, const std::string& not_ready_reason) {
    loop_ms_ = now_ms;
    if (not_ready_reason != last_reason_) {  // the loop's copy: the lock only on a change
      last_reason_ = not_ready_reason;
      std::lock_guard<std::mutex> lock(mutex_);
      reason_ = not_ready_reason;
    }
    ready_ = not_ready_reason.empty();
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
  /// Why the farm is not ready ("" when it is).
  std::string not_ready_reason() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reason_;
  }

 private:
  const int64_t started_wall_ms_ = wall_ms(), started_steady_ms_ = steady_ms();
  int64_t last_render_ms_ = 0;  ///< loop only
  mutable std::mutex mutex_;
  std::string status_, metrics_, reason_;
  std::string last_reason_;  ///< loop only
  std::atomic<int64_t> loop_ms_{0};
  std::atomic<bool> ready_{false};
};

}  // namespace zkfarm::supervisor
