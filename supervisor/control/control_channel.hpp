#pragma once
// control.sock, zkfarmctl's (and zkfarm-api's) way in: a Unix stream socket
// bound at STATE/control.sock (mode 0660 and group control_group, or 0600)
// carrying length-prefixed frames (protocol/stream_frame.hpp), each one
// MessagePack request or reply. It moves frames only: what a request means is
// the control API's (control_api.cpp), who may make it is peer.hpp's roles, read
// from the kernel (SO_PEERCRED) when a connection is accepted.
//
// What a peer can make zkfarmd hold (docs/protocol.md): per connection one
// frame being read (≤ 4 + kMaxFrameBytes bytes; a larger announced length
// closes the connection from its header) and one reply being written; at most
// max_connections connections (the oldest one without a request in the
// supervisor is closed to make room for a new one); and, across all
// connections, kBufferBudgetBytes of frames in flight (past it, the connection
// holding the most is closed). A frame begun and not finished within
// kPartialFrameMs closes its connection. One request at a time per
// connection: nothing more is read from it until its reply has left.
#include <spdlog/logger.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "protocol/stream_frame.hpp"
#include "supervisor/model/peer.hpp"

namespace zkfarm::supervisor {

class ControlChannel {
 public:
  /// Bytes of frames in flight (being read or written) on all connections
  /// together before the largest holder is closed.
  static constexpr size_t kBufferBudgetBytes = size_t(64) << 20;
  /// A frame whose first byte arrived this long ago (ms) and that is still
  /// not whole closes its connection (slowloris).
  static constexpr int64_t kPartialFrameMs = 10000;

  /// One request as it arrived: the connection's id (for reply()), the body
  /// (a MessagePack map, not yet decoded) and the peer's credentials.
  struct Request {
    std::string identity;
    std::string body;
    std::optional<Peer> peer;
  };

  /// Binds and listens at `path` (a stale socket file there is removed: the
  /// caller holds the state lock), then gives the file to `group` with mode
  /// 0660 (mode 0600 without one; the process umask keeps it private until
  /// then). `max_connections` ≥ 1. Throws std::runtime_error naming the path
  /// and the fault.
  ControlChannel(std::string path, std::optional<gid_t> group, unsigned max_connections,
                 std::shared_ptr<spdlog::logger> log);
  /// Replies not yet written (at exit: a held `stop --wait`) get up to a
  /// second to leave; every connection is closed and the socket file removed.
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  /// For zmq::poll: an epoll descriptor, readable when a connection or the
  /// listener has something to do.
  zmq::pollitem_t pollitem();
  /// Closes connections whose frame stalled past kPartialFrameMs and writes
  /// the cap's summary line (once per loop pass; `now_ms` monotonic).
  void poll_cap(int64_t now_ms);
  /// Accepts, reads and writes what is ready now, without blocking; returns
  /// the requests that became whole (at most `max`; the rest stay for the
  /// next call). Faults of a connection (an oversized frame, the budget)
  /// close it with a line to `warn`.
  std::vector<Request> receive(size_t max, const std::function<void(const std::string&)>& warn);
  /// Queues `reply` (with v and t added) for connection `identity` and
  /// writes what the socket takes now. A reply past the frame limit is
  /// replaced by an error naming the fix; a connection that has gone is
  /// skipped quietly (the client left: `wait` interrupted, say).
  void reply(const std::string& identity, nlohmann::json reply, const std::function<void(const std::string&)>& warn);
  size_t open_connections() const { return conns_.size(); }
  /// Connections closed to keep the cap or the budget, since start.
  size_t sheds() const { return sheds_; }

 private:
  struct Conn {
    int fd = -1;
    Peer peer;
    bool have_peer = false;
    protocol::FrameReader reader;
    std::string out;           // reply bytes not yet written
    bool in_supervisor = false;  // a request handed out, its reply not yet queued
    int64_t partial_since_ms = -1;
    uint32_t events = 0;       // what epoll watches now
  };
  void accept_some(const std::function<void(const std::string&)>& warn);
  void read_some(uint64_t id, Conn& c, const std::function<void(const std::string&)>& warn);
  void write_some(uint64_t id, Conn& c);
  void watch(uint64_t id, Conn& c);
  void close_conn(uint64_t id);
  size_t held_bytes() const;
  void enforce_budget(const std::function<void(const std::string&)>& warn);
  std::string who(const Conn& c) const;

  static constexpr size_t kTrimAfterBytes = 256 * 1024;

  std::string path_;
  std::shared_ptr<spdlog::logger> log_;
  unsigned max_;
  bool trim_due_ = false;  // a connection holding ≥ kTrimAfterBytes was closed
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Conn> conns_;  // by id: the oldest first
  std::vector<uint64_t> ready_;     // connections with a whole frame not yet handed out
  size_t sheds_ = 0;
  uint64_t cap_unlogged_ = 0;
  int64_t now_ms_ = 0;
  int64_t last_cap_log_ms_ = -1000000;
};

}  // namespace zkfarm::supervisor
