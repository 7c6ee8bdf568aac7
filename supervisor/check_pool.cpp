#include "supervisor/check_pool.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "files/sha256.hpp"

namespace zkfarm::supervisor {

void CheckPool::thread_loop(const std::shared_ptr<State>& st, size_t index) {
  std::unique_lock<std::mutex> lock(st->m);
  for (;;) {
    st->cv.wait(lock, [&] { return st->stop || !st->q.empty(); });
    if (st->stop) break;
    std::function<void()> task = std::move(st->q.front());
    st->q.pop_front();
    st->busy[index] = 1;
    lock.unlock();
    task();          // tasks catch their own exceptions (they set a promise)
    task = nullptr;  // what the task captured goes now, on this thread
    lock.lock();
    st->busy[index] = 0;
    st->cv.notify_all();  // the end may be waiting for this task
  }
  lock.unlock();
  // A detached thread (its task outlived the pool) may end while the process
  // exits: free OpenSSL's state for this thread now rather than in the
  // thread's own teardown.
  files::release_thread_state();
}

CheckPool::CheckPool(unsigned threads, size_t queue_max) : st_(std::make_shared<State>()), queue_max_(queue_max) {
  const unsigned n = std::max(1u, threads);
  st_->busy.assign(n, 0);
  threads_.reserve(n);
  try {
    for (unsigned i = 0; i < n; ++i) threads_.emplace_back([st = st_, i] { thread_loop(st, i); });
  } catch (...) {  // the ones started end before the error leaves
    {
      std::lock_guard<std::mutex> lock(st_->m);
      st_->stop = true;
      st_->cv.notify_all();
    }
    for (auto& t : threads_) t.join();
    throw;
  }
}

CheckPool::~CheckPool() {
  std::vector<uint8_t> busy;
  {
    std::unique_lock<std::mutex> lock(st_->m);
    st_->stop = true;
    st_->q.clear();
    st_->cv.notify_all();
    // A task whose owner already has its result may still be returning (its
    // promise is set before the task ends): give running tasks a moment, so
    // that only one truly stuck is left behind.
    st_->cv.wait_for(lock, std::chrono::milliseconds(kBusyGraceMs), [&] {
      return std::none_of(st_->busy.begin(), st_->busy.end(), [](uint8_t b) { return b != 0; });
    });
    busy = st_->busy;  // a thread idle now sees stop before it can take a task: it is about to end
  }
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (busy[i]) threads_[i].detach();
    else threads_[i].join();
  }
}

bool CheckPool::post(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(st_->m);
  if (st_->q.size() >= queue_max_) return false;
  st_->q.push_back(std::move(task));
  st_->cv.notify_one();
  return true;
}

size_t CheckPool::queued() const {
  std::lock_guard<std::mutex> lock(st_->m);
  return st_->q.size();
}

}  // namespace zkfarm::supervisor
