#pragma once
// A fixed set of threads for work a client can make slow (a submit's copy and
// check of a key of tens of GB), with a bounded queue, so that no number of
// submits can make zkfarmd create threads without end or fail to create one.
// The threads hold only the pool's shared state, and the end joins only the
// ones not inside a task: a task stuck in the kernel (a hung network
// filesystem) never keeps zkfarmd from exiting, and no idle thread is halfway
// through its own exit when the process exits (see ~CheckPool).
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

namespace zkfarm::supervisor {

class CheckPool {
 public:
  /// Starts `threads` (≥ 1) threads. Throws std::system_error when one cannot
  /// be created (at start-up, where it ends zkfarmd with a message).
  CheckPool(unsigned threads, size_t queue_max);
  /// Tells the threads to exit; queued tasks are dropped (their owners see a
  /// broken promise). Waits up to kBusyGraceMs for running tasks to end (a
  /// task's owner can have its result while the task is still returning),
  /// then joins every thread not running a task; one still running one (stuck
  /// in the kernel) gets detached and ends when its task does. A detached thread that
  /// ends while the process exits frees its thread-local memory (OpenSSL's
  /// error queue, glibc's TSD) after exit() has started: LeakSanitizer reports
  /// that memory as leaked (CI saw it once) and ASan can even deadlock there,
  /// so an idle pool must leave nothing running behind.
  ~CheckPool();
  CheckPool(const CheckPool&) = delete;
  CheckPool& operator=(const CheckPool&) = delete;

  /// Queues `task`; false when queue_max tasks are already waiting.
  bool post(std::function<void()> task);
  /// Tasks waiting (not yet running).
  size_t queued() const;
  /// How long the end waits for running tasks before it leaves them behind.
  static constexpr int kBusyGraceMs = 2000;
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
    std::vector<uint8_t> busy;  ///< by thread: inside a task
  };
  static void thread_loop(const std::shared_ptr<State>& st, size_t index);
  std::shared_ptr<State> st_;
  std::vector<std::thread> threads_;
  size_t queue_max_;
};

}  // namespace zkfarm::supervisor
