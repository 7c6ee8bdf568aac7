#include "supervisor/workers/worker_socket.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <zmq_addon.hpp>

#include "protocol/messages.hpp"

namespace zkfarm::supervisor {

namespace {
// sun_path holds 108 bytes; ZeroMQ needs the terminating NUL.
constexpr size_t kMaxIpcPath = 107;
}  // namespace

std::string ipc_path(const std::string& state_dir, const char* name) {
  std::string p = std::filesystem::absolute(state_dir).lexically_normal().string() + "/" + name;
  if (p.size() > kMaxIpcPath) {
    throw std::runtime_error("state dir path too long for a socket (" + p + " is " + std::to_string(p.size()) +
                             " bytes, at most " + std::to_string(kMaxIpcPath) + ")");
  }
  return p;
}

WorkerSocket::WorkerSocket(const std::string& state_dir, unsigned max_connections,
                           std::shared_ptr<spdlog::logger> log)
    : log_(std::move(log)), path_(ipc_path(state_dir, "workers.sock")), endpoint_("ipc://" + path_) {
  ::unlink(path_.c_str());  // stale, under our lock
  sock_.set(zmq::sockopt::linger, 0);
  sock_.set(zmq::sockopt::maxmsgsize, int64_t(protocol::kMaxFrameBytes));
  // A connection that never finishes ZeroMQ's greeting is closed soon.
  sock_.set(zmq::sockopt::handshake_ivl, 5000);
  // Only zkfarmd's own user (its workers) may connect (docs/security.md); the
  // process umask (077) keeps the file private from its bind until the chmod.
  cap_ = std::make_unique<ListenerCap>(ctx_, sock_, path_, max_connections, "workers.sock", log_,
                                       [](const std::string& path) { ::chmod(path.c_str(), 0600); });
}

WorkerSocket::~WorkerSocket() {
  cap_.reset();
  sock_.close();
  ::unlink(path_.c_str());
}

std::vector<WorkerSocket::Frame> WorkerSocket::receive(size_t max,
                                                       const std::function<void(const std::string&)>& warn) {
  std::vector<Frame> out;
  // What is readable now; each frame is bounded, so a pass stays short.
  for (size_t i = 0; i < max; ++i) {
    std::vector<zmq::message_t> parts;
    auto got = zmq::recv_multipart(sock_, std::back_inserter(parts), zmq::recv_flags::dontwait);
    if (!got) break;
    if (parts.size() != 2) {
      warn("dropped a worker message of " + std::to_string(parts.size()) + " frames");
      continue;
    }
    out.push_back({parts[0].to_string(), parts[1].to_string(), peer_of(parts[1])});
  }
  return out;
}

std::string WorkerSocket::send(const std::string& route, const std::string& body) {
  std::array<zmq::const_buffer, 2> frames = {zmq::buffer(route), zmq::buffer(body)};
  try {
    zmq::send_multipart(sock_, frames, zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    return e.what();
  }
  return "";
}

}  // namespace zkfarm::supervisor
