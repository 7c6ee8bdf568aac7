#include "supervisor/background.hpp"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace zkfarm::supervisor {

LoopInbox::LoopInbox() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

LoopInbox::~LoopInbox() {
  if (fd_ >= 0) ::close(fd_);
}

void LoopInbox::post(std::function<void()> fn) {
  {
    std::lock_guard lock(m_);
    q_.push_back(std::move(fn));
  }
  const uint64_t one = 1;
  // EAGAIN only when the counter is near 2^64: it is readable then anyway.
  (void)!::write(fd_, &one, sizeof one);
}

size_t LoopInbox::run() {
  uint64_t n;
  (void)!::read(fd_, &n, sizeof n);  // clears the count; closures posted after this set it again
  size_t ran = 0;
  for (;;) {
    std::function<void()> fn;
    {
      std::lock_guard lock(m_);
      if (q_.empty()) return ran;
      fn = std::move(q_.front());
      q_.pop_front();
    }
    ++ran;
    if (fn) fn();
  }
}

SerialWorker::SerialWorker(const std::string& name) : thread_([this] { run(); }) {
  ::pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
}

SerialWorker::~SerialWorker() {
  finish();
  if (thread_.joinable()) thread_.join();
}

void SerialWorker::post(std::function<void()> task) {
  {
    std::lock_guard lock(m_);
    if (closing_) return;
    q_.push_back(std::move(task));
  }
  cv_.notify_one();
}

size_t SerialWorker::pending() const {
  std::lock_guard lock(m_);
  return q_.size() + running_;
}

void SerialWorker::finish() {
  std::unique_lock lock(m_);
  idle_.wait(lock, [&] { return q_.empty() && running_ == 0; });
  closing_ = true;
  cv_.notify_all();
}

void SerialWorker::run() {
  std::unique_lock lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return closing_ || !q_.empty(); });
    if (q_.empty()) return;  // closing, and nothing left
    auto task = std::move(q_.front());
    q_.pop_front();
    running_ = 1;
    lock.unlock();
    try {
      task();
    } catch (...) {
      // A task reports its own failures through the inbox; one that throws
      // anyway must not end the thread that every later write waits for.
    }
    lock.lock();
    running_ = 0;
    if (q_.empty()) idle_.notify_all();
  }
}

}  // namespace zkfarm::supervisor
