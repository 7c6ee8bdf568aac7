#pragma once
// The loop's side of workers.sock (worker_socket.hpp): a frame from a worker
// is taken only from the process zkfarmd started under that id (the kernel's
// credentials of the connection, and the pid in the route), decoded once into
// its struct (protocol/worker_messages.hpp) and handed on: READY to the
// worker table, STARTED and SYNTH_DONE/PROVE_DONE to the pipeline, a
// HEARTBEAT is a sign of life. Messages to workers go out here, and so do the
// heartbeats whose deadlines the worker table keeps.
#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "protocol/worker_messages.hpp"
#include "supervisor/config.hpp"
#include "supervisor/model/event_bus.hpp"
#include "supervisor/model/peer.hpp"
#include "supervisor/workers/worker_socket.hpp"
#include "supervisor/workers/worker_table.hpp"

namespace zkfarm::supervisor {

/// A worker's STARTED, from its own process: the partition it computes now.
/// Handled by the pipeline.
struct WorkerStarted {
  Worker& worker;
  const protocol::Started& msg;
};

/// A worker's SYNTH_DONE (`synth`) or PROVE_DONE of the request under `ref`,
/// from its own process. Handled by the pipeline.
struct WorkerAnswered {
  Worker& worker;
  const protocol::WorkRef& ref;
  const protocol::WorkResult& result;
  bool synth;
};

/// Events (model/event_bus.hpp): emits WorkerStarted and WorkerAnswered.
class WorkerLink {
 public:
  /// `socket`: workers.sock, owned by the link from now on. `warn`: a line a
  /// client can cause at will (a bad frame), rate-limited by the loop.
  WorkerLink(const Config& cfg, std::shared_ptr<spdlog::logger> log, std::unique_ptr<WorkerSocket> socket,
             WorkerTable& workers, EventBus& bus, std::function<void(const std::string& line)> warn);

  /// workers.sock for the loop's poll.
  zmq::pollitem_t pollitem() { return socket_->pollitem(); }
  /// The socket's connection cap, once a loop pass (monotonic ms).
  void poll_cap(int64_t now) { socket_->poll_cap(now); }
  /// Up to `max` frames readable now, each taken by on_frame().
  void serve(size_t max);

  /// Sends `frame` (one protocol::encode overload's bytes) to worker `w`'s
  /// process; a failed send is logged (the heartbeat deadline covers a gone worker).
  void send(const Worker& w, const std::string& frame);
  /// One frame as WorkerSocket::receive gave it: checked against the worker
  /// it claims to be, decoded, routed. A worker of another protocol version is
  /// asked to exit; anything else malformed is dropped with a warning.
  void on_frame(const std::string& identity, const std::string& frame, const std::optional<Peer>& peer);
  /// Heartbeats every heartbeat_ms to workers past READY; then the worker
  /// table's deadlines and due restarts (`now`: steady ms).
  void check_deadlines(int64_t now, bool stopping);

 private:
  const Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<WorkerSocket> socket_;
  WorkerTable& workers_;
  EventBus& bus_;
  std::function<void(const std::string& line)> warn_;
  int64_t next_heartbeat_ms_ = 0;
};

}  // namespace zkfarm::supervisor
