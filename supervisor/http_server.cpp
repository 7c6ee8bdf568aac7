#include "supervisor/http_server.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <optional>
#include <stdexcept>
#include <thread>

#include "supervisor/log_limiter.hpp"

namespace zkfarm::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using supervisor::LogLimiter;

namespace {

// Bytes asked of the kernel per read: a probe's or a scraper's whole request
// (curl sends ~80 bytes, Prometheus ~250); a longer head takes a few reads.
// Each waiting connection holds this buffer: 1 KiB rather than 4 KiB saves
// 3 KiB a connection (measured: ~3 KiB in all per waiting connection).
constexpr std::size_t kReadChunk = 1024;
// Connections accepted per wake-up of the listener before the loop turns to
// the connections' own events again.
constexpr int kAcceptBatch = 16;
// What a client may still send after a closing reply before it is reset.
constexpr std::size_t kLingerBytes = 64 * 1024;

std::string lower_first(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
  return s;
}

}  // namespace

std::pair<std::string, uint16_t> split_address(const std::string& address, const std::string& what) {
  auto bad = [&] { return std::runtime_error(what + " must be HOST:PORT, got '" + address + "'"); };
  std::string host, port;
  if (!address.empty() && address[0] == '[') {
    auto close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') throw bad();
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    auto colon = address.rfind(':');
    if (colon == std::string::npos) throw bad();
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string::npos) throw bad();  // IPv6 needs brackets
  }
  if (host.empty() || port.empty() || port.size() > 5) throw bad();
  unsigned long p = 0;
  for (char c : port) {
    if (c < '0' || c > '9') throw bad();
    p = p * 10 + unsigned(c - '0');
  }
  if (p > 65535) throw bad();
  return {host, uint16_t(p)};
}

namespace {

std::string endpoint_text(const tcp::endpoint& ep) {
  auto a = ep.address();
  return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(ep.port());
}

bool out_of_descriptors(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM; }

}  // namespace

struct HttpServer::Impl {
  struct Session;
  using SessionPtr = std::shared_ptr<Session>;
  using SessionList = std::list<SessionPtr>;

  explicit Impl(ServerOptions o) : opts(std::move(o)),
        faults(opts.log_lines_per_second), evictions(opts.log_lines_per_second), accept_errors(opts.log_lines_per_second) {}

  ServerOptions opts;
  asio::io_context io{1};
  // Keeps run() going between events (during an accept pause nothing else may be pending).
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
  tcp::acceptor acceptor{io};
  tcp protocol = tcp::v4();
  asio::steady_timer sweep{io}, pause{io}, flush{io};
  bool sweep_armed = false, flush_armed = false, stopping = false;
  std::optional<Router> router;
  // Connections waiting for a complete request, and connections writing a
  // response; each ordered by when that wait began (appended at the back), so
  // the front is the longest waiter: the first to time out or to be evicted.
  SessionList waiting, writing;
  LogLimiter faults, evictions, accept_errors;
  std::array<char, 4096> scratch;  // lingering connections read into it and drop it (one thread: no sharing)
  std::atomic<uint64_t> n_accepted{0}, n_open{0}, n_evicted{0}, n_timed_out{0}, n_answered{0}, n_accept_errors{0};
  std::thread thread;

  void log(LogLevel level, const std::string& line) {
    if (opts.log) opts.log(level, line);
  }
  // One line about an event of a limited kind, or nothing past the limit.
  void limited(LogLimiter& limiter, const char* kind, const std::string& line);
  void arm_flush();
  void on_flush();

  void accept();
  void on_readable();
  bool evict_one(const char* why);
  void add(SessionPtr s);
  void to(Session& s, SessionList& list);
  void close(Session& s, bool reset);
  void arm_sweep();
  void on_sweep();
  std::chrono::milliseconds timeout() const { return std::chrono::milliseconds(opts.request_timeout_ms); }
};

// One connection: read into its Exchange, write its replies one at a time.
struct HttpServer::Impl::Session : std::enable_shared_from_this<Session> {
  Session(HttpServer::Impl& server, tcp::socket socket)
      : srv(server), sock(std::move(socket)), exchange(*server.router, server.opts.header_limit) {}

  HttpServer::Impl& srv;
  tcp::socket sock;
  Exchange exchange;
  std::string peer;
  bool open = true;
  SessionList* list = nullptr;  // waiting or writing
  SessionList::iterator pos;
  Clock::time_point since;      // when the current wait began
  Reply reply;                  // being written
  bool lingering = false;       // a closing reply went out: dropping the client's last bytes
  std::size_t dropped = 0;      // bytes dropped while lingering

  // Answers the next complete request, or reads more.
  void step() {
    if (!open) return;
    if (exchange.next(reply)) {
      if (!reply.fault.empty())
        srv.limited(srv.faults, "client faults", "http: bad request from " + peer + ": " + reply.fault);
      srv.to(*this, srv.writing);
      std::array<asio::const_buffer, 2> bufs{asio::buffer(reply.head),
                                              reply.body ? asio::buffer(*reply.body) : asio::const_buffer()};
      asio::async_write(sock, bufs, [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
        self->on_write(ec);
      });
      return;
    }
    if (exchange.closed()) {
      srv.close(*this, false);
      return;
    }
    auto room = exchange.prepare(kReadChunk);
    sock.async_read_some(asio::buffer(room.data(), room.size()),
                         [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                           self->on_read(ec, n);
                         });
  }

  void on_read(const boost::system::error_code& ec, std::size_t n) {
    exchange.commit(ec ? 0 : n);
    if (!open) return;
    if (ec) {  // end of stream or reset: nothing left to answer
      srv.close(*this, ec != asio::error::eof);
      return;
    }
    step();
  }

  void on_write(const boost::system::error_code& ec) {
    if (!open) return;
    const bool close = reply.close;
    reply = Reply();  // the body may be shared and large: let it go now
    if (ec) {
      srv.close(*this, true);
      return;
    }
    ++srv.n_answered;
    srv.to(*this, srv.waiting);  // the next request's deadline starts now
    if (close) {
      linger();
      return;
    }
    step();
  }

  // After a closing reply: send FIN, then read and drop what the client still
  // sends (the rest of a refused request, pipelined requests) until it closes,
  // so that closing does not reset the connection before the client has read
  // the reply (RFC 9112 §9.6). Bounded by kLingerBytes, the deadline and the cap.
  void linger() {
    boost::system::error_code ec;
    sock.shutdown(tcp::socket::shutdown_send, ec);
    lingering = true;
    discard();
  }

  void discard() {
    sock.async_read_some(asio::buffer(srv.scratch),
                         [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                           if (!self->open) return;
                           self->dropped += n;
                           if (ec || self->dropped > kLingerBytes)
                             self->srv.close(*self, !ec || ec != asio::error::eof);
                           else
                             self->discard();
                         });
  }
};

void HttpServer::Impl::limited(LogLimiter& limiter, const char* kind, const std::string& line) {
  auto v = limiter.admit(Clock::now());
  if (v.suppressed)
    log(LogLevel::kWarn, "http: " + std::to_string(v.suppressed) + " similar lines suppressed (" + kind + ")");
  if (v.log) log(LogLevel::kWarn, line);
  arm_flush();
}

void HttpServer::Impl::arm_flush() {
  if (flush_armed) return;
  std::optional<Clock::time_point> due;
  for (auto* l : {&faults, &evictions, &accept_errors})
    if (auto d = l->flush_due(); d && (!due || *d < *due)) due = d;
  if (!due) return;
  flush_armed = true;
  flush.expires_at(*due);
  flush.async_wait([this](const boost::system::error_code& ec) {
    flush_armed = false;
    if (!ec) on_flush();
  });
}

void HttpServer::Impl::on_flush() {
  const auto now = Clock::now();
  const std::pair<LogLimiter*, const char*> kinds[] = {
      {&faults, "client faults"}, {&evictions, "evictions"}, {&accept_errors, "accept errors"}};
  for (auto [limiter, kind] : kinds)
    if (uint64_t n = limiter->flush(now))
      log(LogLevel::kWarn, "http: " + std::to_string(n) + " similar lines suppressed (" + kind + ")");
  arm_flush();
}

void HttpServer::Impl::accept() {
  if (stopping) return;
  acceptor.async_wait(tcp::acceptor::wait_read, [this](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted || stopping) return;
    if (ec) {
      ++n_accept_errors;
      limited(accept_errors, "accept errors", "http: waiting for connections failed (" + ec.message() + ")");
      pause.expires_after(std::chrono::milliseconds(opts.accept_pause_ms));
      pause.async_wait([this](const boost::system::error_code& e) {
        if (!e) accept();
      });
      return;
    }
    on_readable();
  });
}

void HttpServer::Impl::on_readable() {
  for (int i = 0; i < kAcceptBatch; ++i) {
    // accept4 rather than asio's accept: close-on-exec from the first instant,
    // so a worker forked meanwhile never inherits a client's connection.
    int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) break;
      if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;  // that client gave up
      ++n_accept_errors;
      if (out_of_descriptors(err)) {
        // Give one of ours back (the longest waiter) and take the new
        // connection: a probe still gets in while the process is at its limit.
        if (evict_one("to free a descriptor")) continue;
        limited(accept_errors, "accept errors",
                "http: out of file descriptors (" + lower_first(std::strerror(err)) + "); not accepting for " +
                    std::to_string(opts.accept_pause_ms) + " ms");
      } else {
        limited(accept_errors, "accept errors",
                "http: accept failed (" + lower_first(std::strerror(err)) + "); not accepting for " +
                    std::to_string(opts.accept_pause_ms) + " ms");
      }
      // The listener stays readable while the connection waits in the
      // backlog: pause rather than spin.
      pause.expires_after(std::chrono::milliseconds(opts.accept_pause_ms));
      pause.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) accept();
      });
      return;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // pipelined responses go out at once
    tcp::socket sock(io);
    boost::system::error_code ec;
    sock.assign(protocol, fd, ec);
    if (ec) {
      ::close(fd);
      continue;
    }
    ++n_accepted;
    if (n_open >= opts.max_connections) evict_one("at the cap");
    auto s = std::make_shared<Session>(*this, std::move(sock));
    auto remote = s->sock.remote_endpoint(ec);
    s->peer = ec ? std::string("unknown peer") : endpoint_text(remote);
    add(s);
    s->step();
  }
  accept();
}

bool HttpServer::Impl::evict_one(const char* why) {
  SessionList& from = !waiting.empty() ? waiting : writing;
  if (from.empty()) return false;
  Session& victim = *from.front();
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - victim.since).count();
  limited(evictions, "evictions",
          "http: " + std::to_string(n_open.load()) + " connections open (http_max_connections " +
              std::to_string(opts.max_connections) + "); dropped the one from " + victim.peer + " (" + why + "), " +
              (&from == &waiting ? "waiting " : "writing a response for ") + std::to_string(waited) + " ms");
  ++n_evicted;
  close(victim, true);
  return true;
}

void HttpServer::Impl::add(SessionPtr s) {
  ++n_open;
  Session& ref = *s;
  waiting.push_back(std::move(s));
  ref.list = &waiting;
  ref.pos = std::prev(waiting.end());
  ref.since = Clock::now();
  arm_sweep();
}

void HttpServer::Impl::to(Session& s, SessionList& list) {
  // splice keeps the shared_ptr and the iterator; the session goes to the back.
  list.splice(list.end(), *s.list, s.pos);
  s.list = &list;
  s.since = Clock::now();
  arm_sweep();
}

void HttpServer::Impl::close(Session& s, bool reset) {
  if (!s.open) return;
  s.open = false;
  boost::system::error_code ec;
  if (reset) {
    // An abortive close (RST): no TIME_WAIT left behind for an attacker's
    // connections, and no flush of data the peer will never read.
    s.sock.set_option(asio::socket_base::linger(true, 0), ec);
  } else {
    s.sock.shutdown(tcp::socket::shutdown_send, ec);
  }
  s.sock.close(ec);  // pending operations complete with operation_aborted
  --n_open;
  SessionPtr keep = *s.pos;  // erasing drops the list's reference: keep the session alive until we return
  s.list->erase(s.pos);
  s.list = nullptr;
}

void HttpServer::Impl::arm_sweep() {
  // Sessions join the lists' backs with later deadlines than their fronts'
  // deadlines, so an armed timer is never late; it only fires early after a
  // front left, and then re-arms.
  if (sweep_armed || stopping) return;
  std::optional<Clock::time_point> due;
  for (auto* l : {&waiting, &writing})
    if (!l->empty() && (!due || l->front()->since < *due)) due = l->front()->since;
  if (!due) return;
  sweep_armed = true;
  sweep.expires_at(*due + timeout());
  sweep.async_wait([this](const boost::system::error_code& ec) {
    sweep_armed = false;
    if (!ec) on_sweep();
  });
}

void HttpServer::Impl::on_sweep() {
  const auto now = Clock::now();
  while (!waiting.empty() && waiting.front()->since + timeout() <= now) {
    Session& s = *waiting.front();
    // An idle keep-alive connection closing is normal; a partial request at
    // the deadline is a slow or hostile client.
    if (s.exchange.buffered() > 0 && !s.lingering)
      limited(faults, "client faults",
              "http: incomplete request from " + s.peer + " timed out after " + std::to_string(opts.request_timeout_ms) + " ms");
    ++n_timed_out;
    close(s, true);
  }
  while (!writing.empty() && writing.front()->since + timeout() <= now) {
    Session& s = *writing.front();
    limited(faults, "client faults",
            "http: response to " + s.peer + " not taken within " + std::to_string(opts.request_timeout_ms) + " ms");
    ++n_timed_out;
    close(s, true);
  }
  arm_sweep();
}

HttpServer::HttpServer(ServerOptions opts) : impl_(std::make_unique<Impl>(std::move(opts))) {
  Impl& m = *impl_;
  if (m.opts.max_connections == 0) m.opts.max_connections = 1;
  if (m.opts.request_timeout_ms == 0) m.opts.request_timeout_ms = 1;
  const std::string& address = m.opts.address;
  auto [host, port] = split_address(address);
  boost::system::error_code ec;
  tcp::endpoint ep;
  auto ip = asio::ip::make_address(host, ec);
  if (!ec) {
    ep = tcp::endpoint(ip, port);
  } else {
    tcp::resolver resolver(m.io);
    auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service, ec);
    if (ec || results.empty())
      throw std::runtime_error("cannot listen on " + address + ": cannot resolve '" + host + "' (" +
                               lower_first(ec ? ec.message() : "no address") + ")");
    ep = results.begin()->endpoint();
  }
  auto fail = [&](const boost::system::error_code& e) {
    return std::runtime_error("cannot listen on " + address + ": " + lower_first(e.message()));
  };
  m.protocol = ep.protocol();
  m.acceptor.open(ep.protocol(), ec);
  if (ec) throw fail(ec);
  // Close-on-exec before any worker is forked; SO_REUSEADDR only (see the
  // header): never SO_REUSEPORT, which would let another socket share the port.
  ::fcntl(m.acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
  m.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) throw fail(ec);
  m.acceptor.bind(ep, ec);
  if (ec) throw fail(ec);
  m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw fail(ec);
  m.acceptor.non_blocking(true, ec);
  if (ec) throw fail(ec);
}

HttpServer::~HttpServer() {
  Impl& m = *impl_;
  if (m.thread.joinable()) {
    m.io.stop();
    m.thread.join();
  }
  // The I/O thread is gone: tear down from here.
  m.stopping = true;
  boost::system::error_code ec;
  m.acceptor.close(ec);
  while (!m.waiting.empty()) m.close(*m.waiting.front(), true);
  while (!m.writing.empty()) m.close(*m.writing.front(), true);
}

void HttpServer::start(Content content) {
  Impl& m = *impl_;
  if (m.thread.joinable()) throw std::logic_error("HttpServer::start called twice");
  m.router.emplace(std::move(content), m.opts.status_detail);
  m.accept();
  m.thread = std::thread([&m] {
    for (;;) {
      try {
        m.io.run();
        return;
      } catch (const std::exception& e) {  // a handler threw (out of memory): log it and go on serving
        m.log(LogLevel::kWarn, std::string("http: ") + e.what());
      }
    }
  });
}

uint16_t HttpServer::port() const {
  boost::system::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

std::string HttpServer::address() const {
  boost::system::error_code ec;
  return endpoint_text(impl_->acceptor.local_endpoint(ec));
}

unsigned HttpServer::max_connections() const { return impl_->opts.max_connections; }

ServerStats HttpServer::stats() const {
  const Impl& m = *impl_;
  return {m.n_accepted.load(), m.n_open.load(), m.n_evicted.load(), m.n_timed_out.load(), m.n_answered.load(),
          m.n_accept_errors.load()};
}

}  // namespace zkfarm::http
