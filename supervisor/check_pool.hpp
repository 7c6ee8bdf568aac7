#pragma once
// A fixed set of threads for work a client can make slow (a submit's copy and
// check of a key of tens of GB), with a bounded queue, so that no number of
// submits can make zkfarmd create threads without end or fail to create one.
// The threads are detached and hold only the pool's shared state: a task stuck
// in the kernel (a hung network filesystem) never keeps zkfarmd from exiting.
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>

namespace zkfarm::supervisor {

class CheckPool {
 public:
  /// Starts `threads` (≥ 1) threads. Throws std::system_error when one cannot
  /// be created (at start-up, where it ends zkfarmd with a message).
  CheckPool(unsigned threads, size_t queue_max);
  /// Tells the threads to exit; queued tasks are dropped (their owners see a
  /// broken promise), running ones finish on their own.
  ~CheckPool();
  CheckPool(const CheckPool&) = delete;
  CheckPool& operator=(const CheckPool&) = delete;

  /// Queues `task`; false when queue_max tasks are already waiting.
  bool post(std::function<void()> task);
  /// Tasks waiting (not yet running).
  size_t queued() const;
  /// Queues `fn` and returns the future of its result (or of what it
  /// throws); nullopt when queue_max tasks are already waiting. A task the
  /// pool drops at its end leaves the future with a broken promise.
  template <class F>
  std::optional<std::future<std::invoke_result_t<F&>>> run(F fn) {
    using R = std::invoke_result_t<F&>;
    auto promise = std::make_shared<std::promise<R>>();
    std::future<R> result = promise->get_future();
    const bool queued = post([promise, fn = std::move(fn)]() mutable {
      try {
        promise->set_value(fn());
      } catch (...) {
        try {
          promise->set_exception(std::current_exception());
        } catch (...) {  // already satisfied: nothing left to tell
        }
      }
    });
    if (!queued) return std::nullopt;
    return result;
  }

 private:
  struct State {
    mutable std::mutex m;
    std::condition_variable cv;
    std::deque<std::function<void()>> q;
    bool stop = false;
  };
  std::shared_ptr<State> st_;
  size_t queue_max_;
};

}  // namespace zkfarm::supervisor
