#include "supervisor/control_channel.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "protocol/messages.hpp"

namespace zkfarm::supervisor {

ControlChannel::ControlChannel(zmq::context_t& ctx, std::string path, std::optional<gid_t> group,
                               unsigned max_connections, std::shared_ptr<spdlog::logger> log)
    : path_(std::move(path)), log_(std::move(log)), sock_(ctx, zmq::socket_type::router) {
  ::unlink(path_.c_str());  // stale, under the state lock
  sock_.set(zmq::sockopt::linger, 0);
  sock_.set(zmq::sockopt::maxmsgsize, int64_t(protocol::kMaxFrameBytes));
  // A connection that never finishes ZeroMQ's greeting is closed soon.
  sock_.set(zmq::sockopt::handshake_ivl, 5000);
  // zkfarmd's user and control_group may connect (docs/security.md); the
  // process umask (077) keeps the socket file private from its bind until then.
  cap_ = std::make_unique<ListenerCap>(ctx, sock_, path_, max_connections, "control.sock", log_,
                                       [group](const std::string& p) {
                                         if (group && ::chown(p.c_str(), uid_t(-1), *group) != 0) return;  // stays 0600
                                         ::chmod(p.c_str(), 0660);
                                       });
}

ControlChannel::~ControlChannel() {
  cap_.reset();
  sock_.set(zmq::sockopt::linger, 1000);
  sock_.close();
  ::unlink(path_.c_str());
}

zmq::pollitem_t ControlChannel::pollitem() { return {sock_.handle(), 0, ZMQ_POLLIN, 0}; }

void ControlChannel::poll_cap(int64_t now_ms) { cap_->poll(now_ms); }

std::vector<ControlChannel::Request> ControlChannel::receive(size_t max,
                                                             const std::function<void(const std::string&)>& warn) {
  std::vector<Request> out;
  for (size_t i = 0; i < max; ++i) {
    std::vector<zmq::message_t> parts;
    auto got = zmq::recv_multipart(sock_, std::back_inserter(parts), zmq::recv_flags::dontwait);
    if (!got) break;
    if (parts.size() != 3 || parts[1].size() != 0) {
      warn("dropped a control message of " + std::to_string(parts.size()) + " frames");
      continue;
    }
    out.push_back({parts[0].to_string(), parts[2].to_string(), peer_of(parts[2])});
  }
  return out;
}

void ControlChannel::reply(const std::string& identity, nlohmann::json reply,
                           const std::function<void(const std::string&)>& warn) {
  reply["v"] = protocol::kProtocolVersion;
  reply["t"] = "REPLY";
  std::string body = protocol::encode(reply);
  if (body.size() > protocol::kMaxFrameBytes) {  // the views are bounded; this is the last guard
    log_->error("control: a reply of {} bytes would pass the frame limit; answered with an error", body.size());
    body = protocol::encode({{"v", protocol::kProtocolVersion},
                             {"t", "REPLY"},
                             {"ok", false},
                             {"error", "the reply would be too large; use `zkfarmctl jobs` with --limit"}});
  }
  std::array<zmq::const_buffer, 3> frames = {zmq::buffer(identity), zmq::const_buffer(), zmq::buffer(body)};
  try {
    zmq::send_multipart(sock_, frames, zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    warn(std::string("control: reply not sent: ") + e.what());
  }
}

size_t ControlChannel::open_connections() const { return cap_ ? cap_->open() : 0; }
size_t ControlChannel::sheds() const { return cap_ ? cap_->sheds() : 0; }

}  // namespace zkfarm::supervisor
