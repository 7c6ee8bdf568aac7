#pragma once
// Which prove steps of a GPU worker run at once (its --lanes, issue 36): a
// 2^15 prove step leaves most of an H200 idle (launches and latencies, not
// arithmetic), so the steps of small keys already loaded run side by side,
// one per lane, each with its own streams and buffers (the backend's
// workspaces). A step whose key is not loaded yet (its load may upload one
// key and evict another) and a step of a large key run alone: large
// partitions keep the one-at-a-time path and the whole device. A step that
// must run alone goes before steps that ask to share after it (no starvation
// of large keys by a stream of small ones).
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "gpu_worker/backend.hpp"

namespace zkfarm::gpu {

class LaneGate {
 public:
  /// Keys of domain 2^max_shared_log or less share the device when `lanes` > 1.
  static constexpr uint32_t kMaxSharedLog = kMaxSharedLogDomain;

  LaneGate(ProveBackend& backend, size_t lanes, uint32_t max_shared_log = kMaxSharedLog)
      : backend_(backend), lanes_(lanes), max_shared_log_(max_shared_log) {}

  /// fn(key) for the key at `path`: beside other lanes when the key is
  /// loaded and small, otherwise alone after load(path). Returns what fn
  /// returns; throws what load() or fn throws (the gate is released).
  template <class F>
  auto with_key(const std::string& path, F&& fn) -> decltype(fn(std::declval<const Zkey&>())) {
    if (lanes_ > 1) {
      Shared shared(*this);
      if (const Zkey* key = backend_.loaded(path); key && key->log_domain <= max_shared_log_) return fn(*key);
    }
    Alone alone(*this);
    return fn(backend_.load(path));
  }

 private:
  struct Shared {
    explicit Shared(LaneGate& g) : g(g) {
      std::unique_lock lock(g.m_);
      g.cv_.wait(lock, [&] { return !g.alone_ && g.waiting_alone_ == 0; });
      ++g.sharing_;
    }
    ~Shared() {
      std::lock_guard lock(g.m_);
      if (--g.sharing_ == 0) g.cv_.notify_all();
    }
    LaneGate& g;
  };
  struct Alone {
    explicit Alone(LaneGate& g) : g(g) {
      std::unique_lock lock(g.m_);
      ++g.waiting_alone_;
      g.cv_.wait(lock, [&] { return !g.alone_ && g.sharing_ == 0; });
      --g.waiting_alone_;
      g.alone_ = true;
    }
    ~Alone() {
      std::lock_guard lock(g.m_);
      g.alone_ = false;
      g.cv_.notify_all();
    }
    LaneGate& g;
  };

  ProveBackend& backend_;
  const size_t lanes_;
  const uint32_t max_shared_log_;
  std::mutex m_;
  std::condition_variable cv_;
  size_t sharing_ = 0, waiting_alone_ = 0;
  bool alone_ = false;
};

}  // namespace zkfarm::gpu
