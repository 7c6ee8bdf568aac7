#pragma once
// Per-call state of a prove step (a GPU backend's streams and device buffers,
// the CPU backend's a, b, c), one set for each call in flight, so that a
// worker with several lanes (--lanes) can run prove steps at once. Sets are
// made on demand, kept for reuse (grown buffers stay grown), and never more
// than the calls that ever ran at the same time.
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace zkfarm::gpu {

template <class T>
class WorkspacePool {
 public:
  /// `make` builds a new set (may throw; take() then throws it).
  explicit WorkspacePool(std::function<std::unique_ptr<T>()> make) : make_(std::move(make)) {}

  /// One set, the caller's alone until the Lease goes out of scope.
  class Lease {
   public:
    Lease(WorkspacePool& pool, std::unique_ptr<T> w) : pool_(pool), w_(std::move(w)) {}
    ~Lease() {
      if (!w_) return;  // discarded
      std::lock_guard lock(pool_.mutex_);
      pool_.free_.push_back(std::move(w_));
    }
    /// Destroys the set now instead of keeping it for reuse (a step that
    /// faulted hands its memory back); a later take() makes a new one.
    void discard() { w_.reset(); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    T& operator*() const { return *w_; }
    T* operator->() const { return w_.get(); }

   private:
    WorkspacePool& pool_;
    std::unique_ptr<T> w_;
  };

  /// Destroys every set not leased now (their memory handed back: after a
  /// step that found too little). Thread-safe.
  void drop_idle() {
    std::vector<std::unique_ptr<T>> idle;
    {
      std::lock_guard lock(mutex_);
      idle.swap(free_);
    }
  }

  /// A free set, or a new one. Thread-safe.
  Lease take() {
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        std::unique_ptr<T> w = std::move(free_.back());
        free_.pop_back();
        return Lease(*this, std::move(w));
      }
    }
    return Lease(*this, make_());
  }

 private:
  std::function<std::unique_ptr<T>()> make_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<T>> free_;
};

}  // namespace zkfarm::gpu
