#pragma once
// workers.sock: the ZeroMQ ROUTER zkfarmd's workers connect to
// (docs/protocol.md). It owns the socket, its file (STATE/workers.sock, mode
// 0600: only zkfarmd's own user may connect) and its connection cap
// (listener_cap.hpp). Frames come in with the route their sender gave
// (`ID#PID`, protocol::worker_route) and the kernel's credentials of the
// connection; what they say is the worker messages' business, not this one's.
#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "supervisor/listener_cap.hpp"
#include "supervisor/model/peer.hpp"

namespace zkfarm::supervisor {

/// `state_dir`/`name` as an absolute path for an ipc:// socket. Throws
/// std::runtime_error when it passes the 107 bytes sun_path holds.
std::string ipc_path(const std::string& state_dir, const char* name);

class WorkerSocket {
 public:
  /// One frame from a worker: the route it gave, the body (a MessagePack map,
  /// not yet decoded), the credentials of its connection (none: refused).
  struct Frame {
    std::string route, body;
    std::optional<Peer> peer;
  };

  /// Binds STATE/workers.sock (a stale file of a dead instance is removed:
  /// the caller holds the state lock) with frames up to
  /// protocol::kMaxFrameBytes and a cap of `max_connections`. Throws
  /// std::runtime_error or zmq::error_t naming the fault.
  WorkerSocket(const std::string& state_dir, unsigned max_connections, std::shared_ptr<spdlog::logger> log);
  /// Closes the socket and removes its file.
  ~WorkerSocket();
  WorkerSocket(const WorkerSocket&) = delete;
  WorkerSocket& operator=(const WorkerSocket&) = delete;

  /// ipc://STATE/workers.sock, for the workers' command line.
  const std::string& endpoint() const { return endpoint_; }
  zmq::pollitem_t pollitem() { return {sock_.handle(), 0, ZMQ_POLLIN, 0}; }
  /// The cap's bookkeeping (once a loop pass; monotonic ms).
  void poll_cap(int64_t now_ms) { cap_->poll(now_ms); }
  /// Up to `max` frames readable now; a message of another shape is dropped
  /// with a line through `warn`.
  std::vector<Frame> receive(size_t max, const std::function<void(const std::string&)>& warn);
  /// Sends `body` to the connection routed as `route`, without blocking.
  /// Returns "" or why the send failed (the caller logs it; the worker's
  /// heartbeat deadline covers a worker that is gone).
  std::string send(const std::string& route, const std::string& body);

 private:
  std::shared_ptr<spdlog::logger> log_;
  zmq::context_t ctx_{1};
  zmq::socket_t sock_{ctx_, zmq::socket_type::router};
  std::string path_, endpoint_;
  std::unique_ptr<ListenerCap> cap_;
};

}  // namespace zkfarm::supervisor
