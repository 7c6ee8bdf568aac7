#pragma once
// Disk work off the event loop. The loop orchestrates workers whose messages
// arrive every few milliseconds (a GPU worker proves a 2^22 partition in about
// 72 ms and holds gpu_queue_depth of them); one fsync on a disk busy with
// witness copies took 100–200 ms on the H200 machine, and the loop did five
// per proved partition (journal commit, two output files and their folder), so
// the GPU went idle while the loop waited (issue 12). Now every journal write
// and every output write runs on a background thread of its own (a
// SerialWorker: one thread, tasks in the order posted), and what the loop must
// do afterwards comes back through a LoopInbox, an eventfd the loop polls with
// its sockets.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace zkfarm::supervisor {

/// Closures that background threads hand back to the event loop's thread.
/// fd() is readable while any wait (an eventfd, level-triggered by its count).
class LoopInbox {
 public:
  /// Throws std::system_error when no eventfd can be made.
  LoopInbox();
  ~LoopInbox();
  LoopInbox(const LoopInbox&) = delete;
  LoopInbox& operator=(const LoopInbox&) = delete;

  /// From any thread: `fn` will run on the loop's thread, after everything
  /// posted before it. Never throws for want of the eventfd (the closure is
  /// queued anyway; the loop's poll timeout picks it up).
  void post(std::function<void()> fn);
  /// On the loop's thread: runs every waiting closure, in the order posted,
  /// including ones they post themselves; returns how many ran. An exception
  /// from a closure propagates after the ones before it ran (the rest stay).
  size_t run();
  /// For poll(2): readable while closures wait (and, after a run() during
  /// which closures posted more, once more with none: a spurious wake-up).
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::mutex m_;
  std::deque<std::function<void()>> q_;
};

/// One background thread that runs tasks one at a time, in the order posted.
/// Tasks must not touch the loop's state; they post to a LoopInbox for that.
class SerialWorker {
 public:
  /// Starts the thread, named `name` (at most 15 characters show in ps/top).
  /// Throws std::system_error when the thread cannot be created (at start-up).
  explicit SerialWorker(const std::string& name);
  /// finish(), then joins.
  ~SerialWorker();
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  /// Queues `task`. After finish() the task is dropped.
  void post(std::function<void()> task);
  /// Tasks posted and not yet finished (the running one included).
  size_t pending() const;
  /// Waits until every task posted so far has finished, then lets the thread
  /// end. Idempotent.
  void finish();

 private:
  void run();
  mutable std::mutex m_;
  std::condition_variable cv_, idle_;
  std::deque<std::function<void()>> q_;
  size_t running_ = 0;
  bool closing_ = false;
  std::thread thread_;
};

}  // namespace zkfarm::supervisor
