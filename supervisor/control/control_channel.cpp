#include "supervisor/control/control_channel.hpp"

#include <malloc.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "protocol/messages.hpp"

namespace zkfarm::supervisor {

namespace {
constexpr uint64_t kListenerId = 0;
constexpr size_t kReadChunk = 64 * 1024;
constexpr int kAcceptsPerPass = 256;

std::runtime_error sys_error(const std::string& what, const std::string& path) {
  return std::runtime_error("control socket " + path + ": " + what + ": " + std::strerror(errno));
}
}  // namespace

ControlChannel::ControlChannel(std::string path, std::optional<gid_t> group, unsigned max_connections,
                               std::shared_ptr<spdlog::logger> log)
    : path_(std::move(path)), log_(std::move(log)), max_(max_connections ? max_connections : 1) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path)
    throw std::runtime_error("control socket " + path_ + ": the path is longer than a Unix socket's " +
                             std::to_string(sizeof addr.sun_path - 1) + " bytes; use a shorter state dir");
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  ::unlink(path_.c_str());  // stale, under the state lock
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw sys_error("socket", path_);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    auto e = sys_error("bind", path_);
    ::close(listen_fd_);
    throw e;
  }
  // zkfarmd's user and control_group may connect (docs/security.md); the
  // process umask (077) kept the file private from its bind until now.
  // Without control_group the file keeps zkfarmd's own group; a group that
  // cannot be given leaves it 0600.
  if (!group || ::chown(path_.c_str(), uid_t(-1), *group) == 0) ::chmod(path_.c_str(), 0660);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerId;
  if (::listen(listen_fd_, 128) != 0 || epoll_fd_ < 0 || ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) {
    auto e = sys_error("listen", path_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    ::close(listen_fd_);
    ::unlink(path_.c_str());
    throw e;
  }
}

ControlChannel::~ControlChannel() {
  // Let replies queued just before (a held `stop --wait`) leave: up to 1 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    std::vector<pollfd> pending;
    for (auto& [id, c] : conns_)
      if (!c.out.empty()) pending.push_back({c.fd, POLLOUT, 0});
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (pending.empty() || left <= 0) break;
    ::poll(pending.data(), pending.size(), int(left));
    std::vector<uint64_t> ids;
    for (auto& [id, c] : conns_)
      if (!c.out.empty()) ids.push_back(id);
    for (uint64_t id : ids)
      if (auto it = conns_.find(id); it != conns_.end()) write_some(id, it->second);
  }
  for (auto& [id, c] : conns_) ::close(c.fd);
  conns_.clear();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  ::unlink(path_.c_str());
}

zmq::pollitem_t ControlChannel::pollitem() { return {nullptr, epoll_fd_, ZMQ_POLLIN, 0}; }

std::string ControlChannel::who(const Conn& c) const {
  if (!c.have_peer) return "a peer without credentials";
  return "pid " + std::to_string(c.peer.pid) + " (uid " + std::to_string(c.peer.uid) + ")";
}

void ControlChannel::watch(uint64_t id, Conn& c) {
  // Read only while no request of this connection is in the supervisor or
  // being answered; write while a reply waits. RDHUP: a client gone while
  // its request is held is noticed and closed.
  uint32_t want = EPOLLRDHUP;
  if (!c.in_supervisor && c.out.empty() && !c.reader.has_frame()) want |= EPOLLIN;
  if (!c.out.empty()) want |= EPOLLOUT;
  if (want == c.events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = id;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev) == 0) c.events = want;
}

void ControlChannel::close_conn(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  ::close(it->second.fd);  // also leaves the epoll set
  if (it->second.reader.buffered() + it->second.out.capacity() >= kTrimAfterBytes) trim_due_ = true;
  conns_.erase(it);
  ready_.erase(std::remove(ready_.begin(), ready_.end(), id), ready_.end());
}

void ControlChannel::accept_some(const std::function<void(const std::string&)>& warn) {
  for (int i = 0; i < kAcceptsPerPass; ++i) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) return;
      // EMFILE/ENFILE/ENOBUFS: the connection waits in the backlog; say so
      // (rate-limited) and try again next pass.
      warn(std::string("control: cannot accept a connection: ") + std::strerror(errno));
      return;
    }
    if (conns_.size() >= max_) {
      // At the cap: make room by closing the oldest connection that has no
      // request in the supervisor (an idle or stalled one); when every one
      // is waiting for an answer, the newcomer is the one closed.
      auto victim = std::find_if(conns_.begin(), conns_.end(), [](const auto& kv) { return !kv.second.in_supervisor; });
      ++sheds_;
      ++cap_unlogged_;
      if (victim == conns_.end()) {
        ::close(fd);
        continue;
      }
      close_conn(victim->first);
    }
    Conn c;
    c.fd = fd;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0) {
      c.peer = Peer{cred.uid, cred.gid, cred.pid};
      c.have_peer = true;
    }
    const uint64_t id = next_id_++;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      continue;
    }
    c.events = ev.events;
    conns_.emplace(id, std::move(c));
  }
}

void ControlChannel::read_some(uint64_t id, Conn& c, const std::function<void(const std::string&)>& warn) {
  char buf[kReadChunk];
  // At most one frame: the reader's room() never passes its end.
  for (size_t room = c.reader.room(); room > 0; room = c.reader.room()) {
    const ssize_t n = ::read(c.fd, buf, std::min(room, sizeof buf));
    if (n > 0) {
      c.reader.feed(buf, size_t(n));
      if (c.partial_since_ms < 0) c.partial_since_ms = now_ms_;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
    if (c.reader.partial())
      warn("control: " + who(c) + " closed its connection in the middle of a frame (" +
           std::to_string(c.reader.buffered()) + " bytes)");
    close_conn(id);  // EOF or an error: the client left
    return;
  }
  if (c.reader.too_large()) {
    warn("control: closed the connection of " + who(c) + ": it announced a frame of " +
         std::to_string(c.reader.announced()) + " bytes, the limit is " + std::to_string(protocol::kMaxFrameBytes));
    close_conn(id);
    return;
  }
  if (c.reader.has_frame()) ready_.push_back(id);
  watch(id, c);
}

void ControlChannel::write_some(uint64_t id, Conn& c) {
  while (!c.out.empty()) {
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out.erase(0, size_t(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
    close_conn(id);  // EPIPE: the client left before its answer
    return;
  }
  if (c.out.empty()) c.out.shrink_to_fit();
  watch(id, c);
}

size_t ControlChannel::held_bytes() const {
  size_t n = 0;
  for (const auto& [id, c] : conns_) n += c.reader.buffered() + c.out.size();
  return n;
}

void ControlChannel::enforce_budget(const std::function<void(const std::string&)>& warn) {
  for (size_t held = held_bytes(); held > kBufferBudgetBytes; held = held_bytes()) {
    auto biggest = std::max_element(conns_.begin(), conns_.end(), [](const auto& a, const auto& b) {
      return a.second.reader.buffered() + a.second.out.size() < b.second.reader.buffered() + b.second.out.size();
    });
    if (biggest == conns_.end()) return;
    warn("control: " + std::to_string(held) + " bytes in flight on control.sock pass the budget of " +
         std::to_string(kBufferBudgetBytes) + "; closed the connection of " + who(biggest->second) + " (" +
         std::to_string(biggest->second.reader.buffered() + biggest->second.out.size()) + " bytes)");
    ++sheds_;
    close_conn(biggest->first);
  }
}

void ControlChannel::poll_cap(int64_t now_ms) {
  now_ms_ = now_ms;
  if (trim_due_) {
    // Large frames freed: hand the pages back, so that a flood leaves no
    // resident memory behind (glibc keeps freed heap otherwise).
    ::malloc_trim(0);
    trim_due_ = false;
  }
  std::vector<uint64_t> stalled;
  for (const auto& [id, c] : conns_)
    if (c.reader.partial() && c.partial_since_ms >= 0 && now_ms - c.partial_since_ms > kPartialFrameMs)
      stalled.push_back(id);
  for (uint64_t id : stalled) {
    log_->warn("control: closed the connection of {}: a frame begun {} ms ago is still not whole ({} of {} bytes)",
               who(conns_[id]), now_ms - conns_[id].partial_since_ms, conns_[id].reader.buffered(),
               protocol::kFrameHeaderBytes + conns_[id].reader.announced());
    close_conn(id);
  }
  if (cap_unlogged_ && now_ms - last_cap_log_ms_ >= 1000) {
    log_->warn("control.sock: {} connections open, the cap ({}) was met; {} connection(s) closed to make room "
               "(control_max_connections)",
               conns_.size(), max_, cap_unlogged_);
    cap_unlogged_ = 0;
    last_cap_log_ms_ = now_ms;
  }
}

std::vector<ControlChannel::Request> ControlChannel::receive(size_t max,
                                                             const std::function<void(const std::string&)>& warn) {
  epoll_event evs[64];
  const int n = ::epoll_wait(epoll_fd_, evs, 64, 0);
  for (int i = 0; i < n; ++i) {
    const uint64_t id = evs[i].data.u64;
    if (id == kListenerId) {
      accept_some(warn);
      continue;
    }
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;  // closed earlier in this pass
    Conn& c = it->second;
    if (evs[i].events & EPOLLOUT) {
      write_some(id, c);
      if (!conns_.count(id)) continue;
    }
    if (evs[i].events & EPOLLIN) {
      read_some(id, c, warn);
    } else if (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      close_conn(id);  // gone while its request was held or its reply queued
    }
  }
  enforce_budget(warn);
  std::vector<Request> out;
  size_t taken = 0;
  for (; taken < ready_.size() && out.size() < max; ++taken) {
    auto it = conns_.find(ready_[taken]);
    if (it == conns_.end()) continue;
    Conn& c = it->second;
    auto body = c.reader.take();
    if (!body) continue;
    c.partial_since_ms = -1;
    c.in_supervisor = true;
    watch(it->first, c);
    out.push_back({std::to_string(it->first), std::move(*body),
                   c.have_peer ? std::optional<Peer>(c.peer) : std::nullopt});
  }
  ready_.erase(ready_.begin(), ready_.begin() + ptrdiff_t(taken));
  return out;
}

void ControlChannel::reply(const std::string& identity, nlohmann::json reply,
                           const std::function<void(const std::string&)>& warn) {
  uint64_t id = 0;
  try {
    id = std::stoull(identity);
  } catch (const std::exception&) {
    return;
  }
  auto it = conns_.find(id);
  if (it == conns_.end()) return;  // the client left before its answer
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
  Conn& c = it->second;
  c.in_supervisor = false;
  c.out += protocol::frame_of(body);
  write_some(id, c);
  enforce_budget(warn);
}

}  // namespace zkfarm::supervisor
