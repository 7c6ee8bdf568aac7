#include "supervisor/check_pool.hpp"

#include <thread>

namespace zkfarm::supervisor {

CheckPool::CheckPool(unsigned threads, size_t queue_max) : st_(std::make_shared<State>()), queue_max_(queue_max) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i) {
    std::thread([st = st_] {
      for (;;) {
        std::function<void()> task;
        {
          std::unique_lock<std::mutex> lock(st->m);
          st->cv.wait(lock, [&] { return st->stop || !st->q.empty(); });
          if (st->stop) return;
          task = std::move(st->q.front());
          st->q.pop_front();
        }
        task();  // tasks catch their own exceptions (they set a promise)
      }
    }).detach();
  }
}

CheckPool::~CheckPool() {
  std::lock_guard<std::mutex> lock(st_->m);
  st_->stop = true;
  st_->q.clear();
  st_->cv.notify_all();
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
