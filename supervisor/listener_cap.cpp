#include "supervisor/listener_cap.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <zmq_addon.hpp>

namespace zkfarm::supervisor {

namespace {
std::atomic<unsigned> monitor_counter{0};
}

ListenerCap::ListenerCap(zmq::context_t& ctx, zmq::socket_t& sock, std::string path, unsigned max, std::string name,
                         std::shared_ptr<spdlog::logger> log, std::function<void(const std::string&)> after_bind)
    : sock_(sock),
      monitor_(ctx, zmq::socket_type::pair),
      path_(std::move(path)),
      endpoint_("ipc://" + path_),
      name_(std::move(name)),
      monitor_endpoint_("inproc://zkfarm-cap-" + std::to_string(monitor_counter++)),
      max_(max ? max : 1),
      log_(std::move(log)),
      after_bind_(std::move(after_bind)) {
  if (zmq_socket_monitor(sock_.handle(), monitor_endpoint_.c_str(), ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0)
    throw zmq::error_t();
  monitor_.set(zmq::sockopt::linger, 0);
  // libzmq (4.3) sends monitor events with a blocking send while it holds the
  // socket's monitor mutex. With a bounded pipe a flood of connections fills
  // it, the I/O thread blocks holding the mutex, and our own unbind/bind (which
  // emit events too) then wait on that mutex forever: zkfarmd wedged. A
  // receive HWM of 0 makes the inproc pipe unbounded (its HWM is the sum of
  // both ends' and 0 means no limit), so the I/O thread never blocks; poll()
  // drains the events every loop pass.
  monitor_.set(zmq::sockopt::rcvhwm, 0);
  monitor_.connect(monitor_endpoint_);
  bind();
}

ListenerCap::~ListenerCap() {
  zmq_socket_monitor(sock_.handle(), nullptr, 0);
  monitor_.close();
}

bool ListenerCap::accepted_here(int fd) const {
  sockaddr_un addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sun_family != AF_UNIX) return false;
  const size_t n = len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
  return std::string(addr.sun_path, strnlen(addr.sun_path, n)) == path_;
}

void ListenerCap::bind() {
  sock_.bind(endpoint_);
  bound_ = true;
  if (after_bind_) after_bind_(path_);
}

void ListenerCap::poll(int64_t now_ms) {
  if (!bound_) {
    try {
      bind();
      log_->info("{}: listening again", name_);
    } catch (const zmq::error_t& e) {
      if (now_ms - last_log_ms_ >= 10000) log_->error("{}: cannot bind: {}; retrying", name_, e.what());
      last_log_ms_ = now_ms;
    }
  }
  // Monitor events: frame 1 = u16 event + u32 value (the fd), frame 2 = endpoint.
  for (int i = 0; i < 100000; ++i) {
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(monitor_, std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
    if (parts.empty() || parts[0].size() < 6) continue;
    uint16_t event;
    int32_t fd;
    std::memcpy(&event, parts[0].data(), 2);
    std::memcpy(&fd, static_cast<const char*>(parts[0].data()) + 2, 4);
    if (event == ZMQ_EVENT_ACCEPTED) fds_.insert(fd);
    if (event == ZMQ_EVENT_DISCONNECTED) fds_.erase(fd);
    // Events arrive late and an unbind closes connections without
    // DISCONNECTED events, so the count can hold connections that are gone:
    // before acting on it, keep only descriptors that are still connections
    // accepted on this socket's path.
    if (fds_.size() >= max_) std::erase_if(fds_, [&](int f) { return !accepted_here(f); });
    if (fds_.size() >= max_) {
      // Unbinding closes the listener and every connection it accepted; the
      // socket file is made anew by the bind.
      ++sheds_;
      ++unlogged_;
      if (now_ms - last_log_ms_ >= 10000) {
        log_->warn("{}: {} connections open, the cap ({}); closed them all and reopened the socket ({} times "
                   "since the last such line). Someone may be flooding the socket.",
                   name_, fds_.size(), max_, unlogged_);
        last_log_ms_ = now_ms;
        unlogged_ = 0;
      }
      try {
        sock_.unbind(endpoint_);
      } catch (const zmq::error_t& e) {
        log_->error("{}: unbind failed: {}", name_, e.what());
      }
      bound_ = false;
      fds_.clear();
      try {
        bind();
      } catch (const zmq::error_t& e) {
        log_->error("{}: cannot bind again: {}; retrying next pass", name_, e.what());
      }
    }
  }
}

}  // namespace zkfarm::supervisor
