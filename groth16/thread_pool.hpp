#pragma once
// A fixed set of worker threads that run parallel loops. The caller's thread
// takes part, so a pool of N threads runs N−1 workers plus the caller.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zkfarm {

class ThreadPool {
 public:
  /// threads: total threads that run a loop (≥ 1; 0 means all hardware threads).
  explicit ThreadPool(unsigned threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return threads_; }

  /// Calls task(i) for every i in [0, n) on the pool's threads, each i once, and
  /// returns when all are done. Loops from several caller threads are
  /// serialized. An exception thrown by a task is rethrown here (the first one).
  void run(size_t n, const std::function<void(size_t)>& task);

  /// Splits [0, n) into about size()·4 contiguous chunks and calls
  /// body(begin, end) on each, in parallel.
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& body);

 private:
  void worker_loop();
  void drain(const std::function<void(size_t)>& task, size_t n);

  unsigned threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one loop at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t n_ = 0;
  std::atomic<size_t> next_{0};
  unsigned busy_ = 0;
  uint64_t epoch_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace zkfarm
