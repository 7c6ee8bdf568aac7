#include "groth16/thread_pool.hpp"

#include <cpuid.h>

#include <algorithm>
#include <stdexcept>

namespace zkfarm {

namespace {

// The field arithmetic uses MULX/ADCX/ADOX (groth16/mont_mul_x86.hpp). CPUID
// leaf 7 directly: clang 14's __builtin_cpu_supports does not know "adx".
bool has_bmi2_adx() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_BMI2) && (b & bit_ADX);
}

void check_cpu() {
  static const bool ok = has_bmi2_adx();
  if (!ok) throw std::runtime_error("zkfarm needs an x86-64 CPU with BMI2 and ADX (Intel Broadwell, AMD Zen or later)");
}

}  // namespace

ThreadPool::ThreadPool(unsigned threads) {
  check_cpu();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads_ = threads;
  for (unsigned i = 1; i < threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain(const std::function<void(size_t)>& task, size_t n) {
  for (size_t i; (i = next_.fetch_add(1)) < n;) {
    try {
      task(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      next_ = n;  // stop handing out work
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(size_t)>* task;
    size_t n;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || epoch_ != seen; });
      if (stop_) return;
      seen = epoch_;
      if (task_ == nullptr) continue;  // woke after the loop was closed: nothing to join
      task = task_;
      n = n_;
      ++busy_;
    }
    drain(*task, n);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
    }
    done_.notify_all();
  }
}

void ThreadPool::run(size_t n, const std::function<void(size_t)>& task) {
  if (n == 0) return;
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  if (workers_.empty() || n == 1) {
    for (size_t i = 0; i < n; ++i) task(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    n_ = n;
    next_ = 0;
    error_ = nullptr;
    ++epoch_;
  }
  wake_.notify_all();
  drain(task, n);
  std::exception_ptr error;
  {
    // Close the loop to late wakers (they see task_ == nullptr), then wait for
    // the workers that joined: only then may next_ and task_ be reused.
    std::unique_lock<std::mutex> lock(mutex_);
    task_ = nullptr;
    done_.wait(lock, [&] { return busy_ == 0; });
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& body) {
  if (n == 0) return;
  size_t chunks = std::min<size_t>(n, size_t(threads_) * 4);
  size_t step = (n + chunks - 1) / chunks;
  chunks = (n + step - 1) / step;
  run(chunks, [&](size_t c) { body(c * step, std::min(n, (c + 1) * step)); });
}

}  // namespace zkfarm
