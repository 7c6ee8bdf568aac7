#include "client/control_client.hpp"

#include <poll.h>
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

#include "protocol/stream_frame.hpp"

namespace zkfarm::client {

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
    const auto busy = m.find("busy");
    throw Refused(err->get<std::string>(), retry, busy != m.end() && busy->is_boolean() && busy->get<bool>());
  }
  return m;
}

Client::Client(const std::string& state_dir, int timeout_ms)
    : state_dir_(absolute_dir(state_dir)), timeout_ms_(timeout_ms) {}

Client::~Client() { disconnect(); }

void Client::disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {
using clock = std::chrono::steady_clock;

int64_t ms_left(clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
}
}  // namespace

void Client::connect() {
  const std::string path = control_socket_path(state_dir_);
  // A folder this user may not search hides whether a zkfarmd runs: that is
  // said as it is (exit 5), never as "no zkfarmd is running".
  auto denied = [&](int err) { return err == EACCES || err == EPERM; };
  const std::string hint = " (zkfarmd's state dir is group-searchable: is this user in its group? docs/security.md)";
  struct stat st{};
  if (stat(state_dir_.c_str(), &st) != 0) {
    const int err = errno;
    if (denied(err)) throw AccessDenied(state_dir_, "state dir " + state_dir_ + ": " + std::strerror(err) + hint);
    throw NoSupervisor(state_dir_, "state dir " + state_dir_ + ": " + std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode)) throw NoSupervisor(state_dir_, state_dir_ + " is not a directory");
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) throw NoSupervisor(state_dir_, path + " does not exist");
    if (denied(err)) throw AccessDenied(state_dir_, path + ": " + std::strerror(err) + hint);
    throw NoSupervisor(state_dir_, path + ": " + std::strerror(err));
  }
  if (!S_ISSOCK(st.st_mode)) throw NoSupervisor(state_dir_, path + " is not a socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path)
    throw NoSupervisor(state_dir_, path + " is longer than a Unix socket path may be");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms_);
  for (;;) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) throw NoSupervisor(state_dir_, std::string("socket: ") + std::strerror(errno));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return;
    const int err = errno;
    disconnect();
    if (denied(err))
      throw AccessDenied(state_dir_, path + ": " + std::strerror(err) +
                                         " (the socket is mode 0660: is this user in control_group? docs/security.md)");
    if (err == ECONNREFUSED)
      throw NoSupervisor(state_dir_,
                         path + " refuses connections: zkfarmd is not running (a stale socket of a dead instance)");
    // EAGAIN: zkfarmd's backlog is full (it is at its connection cap, or busy); try again.
    if (err != EAGAIN && err != EINTR)
      throw NoSupervisor(state_dir_, "cannot connect to " + path + ": " + std::strerror(err));
    if (ms_left(deadline) <= 0)
      throw NoSupervisor(state_dir_, path + " accepted no connection within " + std::to_string(timeout_ms_) + " ms");
    ::poll(nullptr, 0, 10);
  }
}

void Client::send_all(const std::string& bytes) {
  const std::string path = control_socket_path(state_dir_);
  const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms_);
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += size_t(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      const int64_t left = ms_left(deadline);
      if (left <= 0)
        throw NoSupervisor(state_dir_, "could not send the request on " + path + " within " +
                                           std::to_string(timeout_ms_) + " ms");
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, int(std::min<int64_t>(left, 1000)));
      continue;
    }
    const std::string why = std::strerror(errno);
    disconnect();
    throw NoSupervisor(state_dir_, "zkfarmd closed the connection on " + path + " (" + why + "); retry");
  }
}

int Client::peer_pid() {
  if (fd_ >= 0) {
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) != 0) disconnect();  // closed while idle: ask the one there now
  }
  if (fd_ < 0) connect();
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return 0;
  return cred.pid;
}

protocol::Message Client::call(const protocol::Message& request) {
  auto reply = call_waiting(request, timeout_ms_);
  if (!reply)
    throw NoSupervisor(state_dir_, "no reply on " + control_socket_path(state_dir_) + " within " +
                                       std::to_string(timeout_ms_) + " ms");
  return std::move(*reply);
}

std::optional<protocol::Message> Client::call_waiting(const protocol::Message& request, int64_t wait_ms,
                                                      const std::function<void()>& tick, int tick_ms) {
  const std::string path = control_socket_path(state_dir_);
  if (fd_ >= 0) {
    // Between two requests nothing may arrive: readable means zkfarmd
    // closed this connection (its cap, a restart); make a new one.
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) != 0) disconnect();
  }
  if (fd_ < 0) connect();
  std::string frame;
  try {
    frame = protocol::frame_of(protocol::encode(request));
  } catch (const protocol::ProtocolError& e) {
    throw CtlError(kExitFailed, std::string("the request is too large: ") + e.what());
  }
  send_all(frame);
  protocol::FrameReader reader;
  const auto deadline = clock::now() + std::chrono::milliseconds(wait_ms < 0 ? 0 : wait_ms);
  std::vector<char> buf(64 * 1024);
  while (!reader.has_frame()) {
    int64_t slice = tick ? tick_ms : (wait_ms < 0 ? 1000 : wait_ms);
    if (wait_ms >= 0) {
      const int64_t left = ms_left(deadline);
      if (left <= 0) {
        disconnect();  // the reply may still come: never read it as the next call's
        return std::nullopt;
      }
      slice = std::min(slice, left);
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, int(slice)) == 0) {
      if (tick) tick();
      continue;
    }
    const ssize_t n = ::read(fd_, buf.data(), std::min(reader.room(), buf.size()));
    if (n > 0) {
      reader.feed(buf.data(), size_t(n));
      if (reader.too_large()) {
        disconnect();
        throw MalformedReply("frame of " + std::to_string(reader.announced()) + " bytes exceeds the limit of " +
                             std::to_string(protocol::kMaxFrameBytes));
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    disconnect();
    throw NoSupervisor(state_dir_, "zkfarmd closed the connection on " + path +
                                       " before it answered (it stopped, or is at its connection cap); retry");
  }
  return parse_reply(*reader.take());
}

}  // namespace zkfarm::client
