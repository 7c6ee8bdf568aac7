#include "ctl/client.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

namespace zkfarm::ctl {

namespace {
namespace fs = std::filesystem;

std::string absolute_dir(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) return dir;
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}
}  // namespace

std::string control_socket_path(const std::string& state_dir) {
  std::string dir = state_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/control.sock";
}

protocol::Message parse_reply(std::string_view frame) {
  if (frame.size() > protocol::kMaxFrameBytes) {
    throw MalformedReply("frame of " + std::to_string(frame.size()) + " bytes exceeds the limit of " +
                         std::to_string(protocol::kMaxFrameBytes));
  }
  protocol::Message m;
  try {
    m = protocol::Message::from_msgpack(frame.begin(), frame.end());
  } catch (const nlohmann::json::exception&) {
    throw MalformedReply("not a MessagePack message (" + std::to_string(frame.size()) + " bytes)");
  }
  if (!m.is_object()) throw MalformedReply("not a map");
  auto v = m.find("v");
  if (v != m.end()) {
    if (!v->is_number_integer()) throw MalformedReply("protocol version \"v\" is not an integer");
    if (v->get<int64_t>() != protocol::kProtocolVersion) {
      throw MalformedReply("zkfarmd speaks protocol version " + std::to_string(v->get<int64_t>()) +
                           ", this zkfarmctl speaks version " + std::to_string(protocol::kProtocolVersion));
    }
  }
  auto ok = m.find("ok");
  if (ok == m.end() || !ok->is_boolean()) throw MalformedReply("no boolean \"ok\"");
  if (!ok->get<bool>()) {
    auto err = m.find("error");
    if (err == m.end() || !err->is_string()) throw Refused("zkfarmd refused the request without an error message");
    int64_t retry = 0;
    if (auto r = m.find("retry_after_ms"); r != m.end() && r->is_number_unsigned())
      retry = int64_t(std::min<uint64_t>(r->get<uint64_t>(), 60000));  // a hint, never a reason to sleep long
    throw Refused(err->get<std::string>(), retry);
  }
  return m;
}

Client::Client(const std::string& state_dir, int timeout_ms)
    : state_dir_(absolute_dir(state_dir)),
      timeout_ms_(timeout_ms),
      ctx_(1),
      sock_(ctx_, zmq::socket_type::req),
      monitor_(ctx_, zmq::socket_type::pair) {
  sock_.set(zmq::sockopt::linger, 0);
  monitor_.set(zmq::sockopt::linger, 0);
  if (zmq_socket_monitor(sock_.handle(), "inproc://zkfarmctl-monitor", ZMQ_EVENT_DISCONNECTED) == 0)
    monitor_.connect("inproc://zkfarmctl-monitor");
}

Client::~Client() {
  if (monitor_.handle()) {
    zmq_socket_monitor(sock_.handle(), nullptr, 0);
    zmq::message_t event;
    while (monitor_.recv(event, zmq::recv_flags::dontwait)) {
    }
  }
  monitor_.close();
  sock_.close();
}

namespace {

// A socket file whose listener is gone (zkfarmd killed) refuses connect(2) at
// once; ZeroMQ would retry quietly until the call's timeout. Ask the kernel.
bool nobody_listens(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    ::close(fd);
    return false;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return refused;
}

}  // namespace

void Client::connect() {
  const std::string path = control_socket_path(state_dir_);
  struct stat st{};
  if (stat(state_dir_.c_str(), &st) != 0) {
    throw NoSupervisor(state_dir_, "state dir " + state_dir_ + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) throw NoSupervisor(state_dir_, state_dir_ + " is not a directory");
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) throw NoSupervisor(state_dir_, path + " does not exist");
    throw NoSupervisor(state_dir_, path + ": " + std::strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode)) throw NoSupervisor(state_dir_, path + " is not a socket");
  // Connecting to a Unix socket needs write permission on it; ZeroMQ would
  // retry silently, so say so now.
  if (access(path.c_str(), W_OK) != 0 && errno == EACCES) {
    throw CtlError(kExitNoSupervisor, "cannot connect to zkfarmd at " + state_dir_ + " (" + path +
                                          ": permission denied; the socket is mode 0660, is this user in its group?)");
  }
  if (nobody_listens(path))
    throw NoSupervisor(state_dir_, path + " refuses connections: zkfarmd is not running (a stale socket of a dead instance)");
  try {
    sock_.connect("ipc://" + path);
  } catch (const zmq::error_t& e) {
    throw NoSupervisor(state_dir_, "cannot connect to ipc://" + path + ": " + e.what());
  }
  connected_ = true;
}

protocol::Message Client::call(const protocol::Message& request) {
  auto reply = call_waiting(request, timeout_ms_);
  if (!reply)
    throw NoSupervisor(state_dir_, "no reply on ipc://" + control_socket_path(state_dir_) + " within " +
                                       std::to_string(timeout_ms_) + " ms");
  return std::move(*reply);
}

std::optional<protocol::Message> Client::call_waiting(const protocol::Message& request, int64_t wait_ms,
                                                      const std::function<void()>& tick, int tick_ms) {
  using clock = std::chrono::steady_clock;
  if (!connected_) connect();
  const std::string path = control_socket_path(state_dir_);
  const std::string frame = protocol::encode(request);
  for (;;) {  // disconnects from before this call are old news
    zmq::message_t old;
    if (!monitor_.handle() || !monitor_.recv(old, zmq::recv_flags::dontwait)) break;
  }
  try {
    // REQ queues the request even before the connection is up; a full queue
    // (nobody ever connected) reads as no supervisor.
    if (!sock_.send(zmq::buffer(frame), zmq::send_flags::dontwait)) {
      throw NoSupervisor(state_dir_, "cannot send on ipc://" + path);
    }
    const auto deadline = clock::now() + std::chrono::milliseconds(wait_ms < 0 ? 0 : wait_ms);
    for (;;) {
      int64_t slice = tick ? tick_ms : (wait_ms < 0 ? 1000 : wait_ms);
      if (wait_ms >= 0) {
        const int64_t left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
        if (left <= 0) return std::nullopt;
        slice = std::min(slice, left);
      }
      zmq::pollitem_t items[] = {{static_cast<void*>(sock_), 0, ZMQ_POLLIN, 0},
                                 {static_cast<void*>(monitor_), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, std::chrono::milliseconds(slice));
      if (items[0].revents & ZMQ_POLLIN) break;
      if (items[1].revents & ZMQ_POLLIN)  // zkfarmd went away, or shed its connections at its cap
        throw NoSupervisor(state_dir_, "zkfarmd closed the connection on ipc://" + path +
                                           " before it answered (it stopped, or is at its connection cap); retry");
      if (tick) tick();
    }
    std::vector<zmq::message_t> parts;
    for (;;) {
      zmq::message_t part;
      if (!sock_.recv(part, zmq::recv_flags::dontwait)) break;
      parts.push_back(std::move(part));
      if (!parts.back().more()) break;
    }
    if (parts.size() != 1) {
      throw MalformedReply("expected one frame, got " + std::to_string(parts.size()));
    }
    return parse_reply(std::string_view(static_cast<const char*>(parts[0].data()), parts[0].size()));
  } catch (const zmq::error_t& e) {
    throw NoSupervisor(state_dir_, std::string("ZeroMQ error on ipc://") + path + ": " + e.what());
  }
}

}  // namespace zkfarm::ctl
