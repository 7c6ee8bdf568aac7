#include "http/server.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/strand.hpp>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "http/address.hpp"
#include "http/server_impl.hpp"

namespace zkfarm::http::core {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

namespace {

// Connections accepted per wake-up of the listener before the loop turns to
// the connections' own events again.
constexpr int kAcceptBatch = 16;

bool out_of_descriptors(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM; }

}  // namespace

Server::Impl::Impl(ServerOptions o, Handler& h)
    : opts(std::move(o)), handler(h), faults(opts.log_lines_per_second), evictions(opts.log_lines_per_second),
      accept_errors(opts.log_lines_per_second) {}

void Server::Impl::limited(supervisor::LogLimiter& limiter, const char* kind, const std::string& line) {
  std::lock_guard<std::mutex> lock(log_m);
  auto v = limiter.admit(Clock::now());
  if (v.suppressed)
    log(LogLevel::kWarn, "http: " + std::to_string(v.suppressed) + " similar lines suppressed (" + kind + ")");
  if (v.log) log(LogLevel::kWarn, line);
  arm_flush();
}

// Under log_m.
void Server::Impl::arm_flush() {
  if (flush_armed || stopped) return;
  std::optional<Clock::time_point> due;
  for (auto* l : {&faults, &evictions, &accept_errors})
    if (auto d = l->flush_due(); d && (!due || *d < *due)) due = d;
  if (!due) return;
  flush_armed = true;
  flush.expires_at(*due);
  flush.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) on_flush();
  });
}

void Server::Impl::on_flush() {
  std::lock_guard<std::mutex> lock(log_m);
  flush_armed = false;
  const auto now = Clock::now();
  const std::pair<supervisor::LogLimiter*, const char*> kinds[] = {
      {&faults, "client faults"}, {&evictions, "evictions"}, {&accept_errors, "accept errors"}};
  for (auto [limiter, kind] : kinds)
    if (uint64_t n = limiter->flush(now))
      log(LogLevel::kWarn, "http: " + std::to_string(n) + " similar lines suppressed (" + kind + ")");
  arm_flush();
}

void Server::Impl::accept() {
  if (stopped) return;
  acceptor.async_wait(tcp::acceptor::wait_read, [this](const boost::system::error_code& ec) {
    if (ec == net::error::operation_aborted || stopped) return;
    if (ec) {
      ++n_accept_errors;
      limited(accept_errors, "accept errors", "http: waiting for connections failed (" + ec.message() + ")");
      return pause_accepting();
    }
    on_readable();
  });
}

void Server::Impl::pause_accepting() {
  // The listener stays readable while a connection waits in the backlog:
  // pause rather than spin.
  pause.expires_after(std::chrono::milliseconds(opts.accept_pause_ms));
  pause.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) accept();
  });
}

void Server::Impl::on_readable() {
  for (int i = 0; i < kAcceptBatch; ++i) {
    // accept4 rather than asio's accept: close-on-exec from the first instant,
    // so a process forked meanwhile never inherits a client's connection.
    int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) break;
      if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;  // that client gave up
      ++n_accept_errors;
      if (out_of_descriptors(err)) {
        // Give one of ours back (the longest waiter) and take the new
        // connection: a probe still gets in while the process is at its limit.
        if (opts.at_cap == AtCap::kDropLongestWaiter && evict_one("to free a descriptor")) continue;
        limited(accept_errors, "accept errors",
                "http: out of file descriptors (" + lower_first(std::strerror(err)) + "); not accepting for " +
                    std::to_string(opts.accept_pause_ms) + " ms");
      } else {
        limited(accept_errors, "accept errors",
                "http: accept failed (" + lower_first(std::strerror(err)) + "); not accepting for " +
                    std::to_string(opts.accept_pause_ms) + " ms");
      }
      return pause_accepting();
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // pipelined responses go out at once
    // Each connection's handlers run in order on its strand (several I/O threads).
    tcp::socket sock(net::make_strand(ioc));
    boost::system::error_code ec;
    sock.assign(protocol, fd, ec);
    if (ec) {
      ::close(fd);
      continue;
    }
    ++n_accepted;
    const auto remote = sock.remote_endpoint(ec);
    const std::string peer = ec ? std::string("?") : remote.address().to_string();
    const std::string peer_text = ec ? std::string("unknown peer") : endpoint_text(remote);
    std::shared_ptr<Conn> conn = tls ? tls_session(*this, std::move(sock)) : plain_session(*this, std::move(sock));
    conn->peer = peer;
    conn->peer_text = peer_text;
    if (!take_slot(*conn)) {
      ++n_refused;
      continue;  // the session closes its socket as it goes
    }
    conn->start();
  }
  accept();
}

bool Server::Impl::take_slot(Conn& c) {
  std::unique_lock<std::mutex> lock(m);
  if (opts.max_per_address > 0) {
    auto it = per_address.find(c.peer);
    if (it != per_address.end() && it->second >= opts.max_per_address) return false;
  }
  if (n_open >= opts.max_connections) {
    if (opts.at_cap != AtCap::kDropLongestWaiter) return false;
    lock.unlock();
    if (!evict_one("at the cap")) return false;
    lock.lock();
  }
  if (opts.max_per_address > 0) ++per_address[c.peer];
  c.counted = true;
  ++n_open;
  lock.unlock();
  enter(c, Conn::Where::kWaiting);
  return true;
}

void Server::Impl::unlist(Conn& c) {
  if (c.where == Conn::Where::kNone) return;
  (c.where == Conn::Where::kWaiting ? waiting : writing).erase(c.pos);
  c.where = Conn::Where::kNone;
}

void Server::Impl::release(Conn& c) {
  std::lock_guard<std::mutex> lock(m);
  unlist(c);
  if (!c.counted) return;
  c.counted = false;
  if (opts.max_per_address > 0) {
    auto it = per_address.find(c.peer);
    if (it != per_address.end() && --it->second == 0) per_address.erase(it);
  }
  --n_open;
}

void Server::Impl::enter(Conn& c, Conn::Where where) {
  std::lock_guard<std::mutex> lock(m);
  unlist(c);
  c.since = Clock::now();
  if (where == Conn::Where::kNone || !c.counted) return;
  auto& list = where == Conn::Where::kWaiting ? waiting : writing;
  c.pos = list.insert(list.end(), &c);
  c.where = where;
}

bool Server::Impl::evict_one(const char* why) {
  Conn* victim = nullptr;
  bool was_waiting = false;
  {
    std::lock_guard<std::mutex> lock(m);
    auto& from = !waiting.empty() ? waiting : writing;
    if (from.empty()) return false;
    victim = from.front();
    was_waiting = &from == &waiting;
  }
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - victim->since).count();
  limited(evictions, "evictions",
          "http: " + std::to_string(n_open.load()) + " connections open (http_max_connections " +
              std::to_string(opts.max_connections) + "); dropped the one from " + victim->peer_text + " (" + why +
              "), " + (was_waiting ? "waiting " : "writing a response for ") + std::to_string(waited) + " ms");
  ++n_evicted;
  victim->abort();
  return true;
}

Server::Server(ServerOptions opts, Handler& handler) : impl_(std::make_unique<Impl>(std::move(opts), handler)) {
  Impl& m = *impl_;
  if (m.opts.max_connections == 0) m.opts.max_connections = 1;
  if (m.opts.header_timeout_ms == 0) m.opts.header_timeout_ms = 1;
  if (m.opts.write_timeout_ms == 0) m.opts.write_timeout_ms = 1;
  if (m.opts.header_limit < 64) m.opts.header_limit = 64;
  if (m.opts.io_threads == 0 || m.opts.at_cap == AtCap::kDropLongestWaiter) m.opts.io_threads = 1;
  if (!m.opts.tls_cert.empty()) {
    m.tls.emplace(ssl::context::tls_server);
    m.tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
    boost::system::error_code ec;
    m.tls->use_certificate_chain_file(m.opts.tls_cert, ec);
    if (ec) throw std::runtime_error(m.opts.tls_cert + ": cannot read the TLS certificate chain: " + ec.message());
    m.tls->use_private_key_file(m.opts.tls_key, ssl::context::pem, ec);
    if (ec)
      throw std::runtime_error(m.opts.tls_key +
                               ": cannot read the TLS private key (or it does not match the certificate): " + ec.message());
  }
  const std::string& address = m.opts.address;
  const auto [host, port] = split_address(address, m.opts.address_name);
  boost::system::error_code ec;
  tcp::endpoint ep;
  auto ip = net::ip::make_address(host, ec);
  if (!ec) {
    ep = tcp::endpoint(ip, port);
  } else {
    tcp::resolver resolver(m.ioc);
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
  m.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw fail(ec);
  m.acceptor.non_blocking(true, ec);
  if (ec) throw fail(ec);
}

Server::~Server() { stop(); }

void Server::start() {
  Impl& m = *impl_;
  if (!m.threads.empty()) throw std::logic_error("http::core::Server::start called twice");
  m.accept();
  for (unsigned i = 0; i < m.opts.io_threads; ++i)
    m.threads.emplace_back([&m] {
      for (;;) {
        try {
          m.ioc.run();
          return;
        } catch (const std::exception& e) {  // a handler threw (out of memory): log it and go on serving
          m.log(LogLevel::kWarn, std::string("http: ") + e.what());
        }
      }
    });
}

void Server::stop() {
  Impl& m = *impl_;
  if (m.stopped.exchange(true)) return;
  m.ioc.stop();
  for (auto& t : m.threads) t.join();
  m.threads.clear();
  boost::system::error_code ignored;
  m.acceptor.close(ignored);
}

uint16_t Server::port() const {
  boost::system::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

std::string Server::address() const {
  boost::system::error_code ec;
  return endpoint_text(impl_->acceptor.local_endpoint(ec));
}

bool Server::tls() const { return impl_->tls.has_value(); }
const ServerOptions& Server::options() const { return impl_->opts; }

ServerStats Server::stats() const {
  const Impl& m = *impl_;
  return {m.n_accepted.load(), m.n_open.load(), m.n_refused.load(), m.n_evicted.load(), m.n_timed_out.load(),
          m.n_answered.load(), m.n_accept_errors.load()};
}

}  // namespace zkfarm::http::core
