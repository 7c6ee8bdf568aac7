#pragma once
// control.sock, zkfarmctl's way in: a ZeroMQ ROUTER bound at
// STATE/control.sock (mode 0660 and group control_group, or 0600), with a
// cap on open connections (listener_cap.hpp), frames of at most
// protocol::kMaxFrameBytes, and the credentials of each connection's peer
// (SO_PEERCRED, peer.hpp). It moves frames only: what a request means is the
// control API's (control.cpp), who may make it is peer.hpp's roles.
#include <spdlog/logger.h>
#include <sys/types.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "supervisor/listener_cap.hpp"
#include "supervisor/peer.hpp"

namespace zkfarm::supervisor {

class ControlChannel {
 public:
  /// One request as it arrived: the connection's routing id, the body (a
  /// MessagePack frame, not yet decoded) and the peer's credentials.
  struct Request {
    std::string identity;
    std::string body;
    std::optional<Peer> peer;
  };

  /// Binds `path` (a stale socket file there is removed: the caller holds the
  /// state lock). Throws zmq::error_t or std::runtime_error naming the fault.
  ControlChannel(zmq::context_t& ctx, std::string path, std::optional<gid_t> group, unsigned max_connections,
                 std::shared_ptr<spdlog::logger> log);
  /// Replies sent just before (at exit: held `stop --wait`) get up to a
  /// second to leave; the socket file is removed.
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  /// For zmq::poll: readable when requests wait.
  zmq::pollitem_t pollitem();
  /// The connection cap's bookkeeping (once per loop pass; monotonic ms).
  void poll_cap(int64_t now_ms);
  /// Up to `max` requests waiting now, without blocking. A message that is
  /// not [identity, empty, body] is dropped with a line to `warn`.
  std::vector<Request> receive(size_t max, const std::function<void(const std::string&)>& warn);
  /// Sends `reply` (with v and t added) to `identity` without blocking. A
  /// reply past the frame limit is replaced by an error naming the fix; a
  /// send that fails (the client left) goes to `warn`.
  void reply(const std::string& identity, nlohmann::json reply, const std::function<void(const std::string&)>& warn);
  size_t open_connections() const;
  size_t sheds() const;

 private:
  std::string path_;
  std::shared_ptr<spdlog::logger> log_;
  zmq::socket_t sock_;
  std::unique_ptr<ListenerCap> cap_;
};

}  // namespace zkfarm::supervisor
