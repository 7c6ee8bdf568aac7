#pragma once
// LISTEN zkfarm on a connection of its own, on a thread of its own: the
// queue's NOTIFYs (new work, a job's end) wake the supervisor's loop at once
// instead of at its next poll (claim_poll_ms). Losing the connection loses
// only the wake-ups: the thread reconnects with backoff (250 ms doubling to
// 8 s) and the loop polls meanwhile.
#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace zkfarm::supervisor {

class PgListener {
 public:
  /// Starts listening on `url`; `on_notify` runs on the listener's thread
  /// for each notification (payload: "work" or "job") and once after each
  /// (re)connect (payload "connected": what was missed meanwhile is unknown).
  PgListener(std::string url, std::function<void(const std::string& payload)> on_notify);
  /// Stops the thread (within about 200 ms) and closes the connection.
  ~PgListener();
  PgListener(const PgListener&) = delete;
  PgListener& operator=(const PgListener&) = delete;

 private:
  void run();
  std::string url_;
  std::function<void(const std::string&)> on_notify_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace zkfarm::supervisor
