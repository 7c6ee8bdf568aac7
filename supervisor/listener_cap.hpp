#pragma once
// A cap on the connections a ZeroMQ ipc:// listener holds. libzmq has no such
// option, and it asserts (aborts the process) when accept(2) fails with EMFILE,
// so any local process that can connect could otherwise exhaust zkfarmd's
// descriptors and kill it. The cap counts connections through a socket monitor
// (ZMQ_EVENT_ACCEPTED / ZMQ_EVENT_DISCONNECTED); at the cap the endpoint is
// unbound — which closes the listener and every connection accepted on it —
// and bound again at once, with a log line. Clients in the middle of a request
// then see their connection closed and retry or time out; nothing aborts.
#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <zmq.hpp>

namespace zkfarm::supervisor {

class ListenerCap {
 public:
  /// Binds `sock` to ipc://`path` and watches its connections. `after_bind`
  /// runs after every bind (the socket file is new each time: set its mode
  /// and group there; the process umask should make it private until then).
  /// `max` ≥ 1 connections are allowed. Throws zmq::error_t when the bind fails.
  ListenerCap(zmq::context_t& ctx, zmq::socket_t& sock, std::string path, unsigned max, std::string name,
              std::shared_ptr<spdlog::logger> log, std::function<void(const std::string&)> after_bind);
  ~ListenerCap();
  ListenerCap(const ListenerCap&) = delete;
  ListenerCap& operator=(const ListenerCap&) = delete;

  /// Reads the monitor's events without blocking and sheds the connections
  /// when they reach the cap. Call once per loop pass; `now_ms` is monotonic.
  void poll(int64_t now_ms);
  /// Connections open now, as far as the monitor has told.
  size_t open() const { return fds_.size(); }
  /// Times the cap was reached since start.
  uint64_t sheds() const { return sheds_; }

 private:
  void bind();
  /// Whether `fd` is (still) a connection accepted on path_ (getsockname).
  bool accepted_here(int fd) const;
  zmq::socket_t& sock_;
  zmq::socket_t monitor_;
  std::string path_, endpoint_, name_, monitor_endpoint_;
  unsigned max_;
  std::shared_ptr<spdlog::logger> log_;
  std::function<void(const std::string&)> after_bind_;
  std::set<int> fds_;
  uint64_t sheds_ = 0;
  bool bound_ = false;
  int64_t last_log_ms_ = -1000000;
  uint64_t unlogged_ = 0;
};

}  // namespace zkfarm::supervisor
