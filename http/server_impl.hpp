#pragma once
// The listener's state, shared by server.cpp (accepting, caps, eviction, the
// log) and session.hpp (one connection). Not part of the library's interface.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "http/server.hpp"
#include "supervisor/log_limiter.hpp"

namespace zkfarm::http::core {

using Clock = std::chrono::steady_clock;

struct Server::Impl {
  /// What the listener knows of a connection: where it is in the eviction
  /// order, and how to drop it.
  struct Conn {
    virtual ~Conn() = default;
    /// Starts the connection's first read (TLS: its handshake); once, after take_slot.
    virtual void start() = 0;
    /// Resets the connection now and gives its slot back (I/O thread; only
    /// with one I/O thread, which is the case when eviction is on).
    virtual void abort() = 0;
    std::string peer;       ///< IP address (the per-address cap's key)
    std::string peer_text;  ///< "IP:PORT", for the log
    enum class Where { kNone, kWaiting, kWriting } where = Where::kNone;
    std::list<Conn*>::iterator pos;
    Clock::time_point since;  ///< when the current wait began
    bool counted = false;     ///< holds a connection slot
  };

  Impl(ServerOptions o, Handler& h);

  // Declared so that the io_context (whose destruction destroys the sessions
  // still open) goes before what the sessions use: the lists, the counts,
  // the limiters and the TLS context.
  ServerOptions opts;
  Handler& handler;
  std::mutex m;  // per_address, waiting, writing, the counted flags
  std::map<std::string, unsigned> per_address;
  // Connections waiting for a complete request (or draining), and
  // connections writing a response; each ordered by when that wait began, so
  // the front is the longest waiter: the first to be evicted.
  std::list<Conn*> waiting, writing;
  std::mutex log_m;  // the limiters and the flush timer
  supervisor::LogLimiter faults, evictions, accept_errors;
  std::atomic<uint64_t> n_accepted{0}, n_open{0}, n_refused{0}, n_evicted{0}, n_timed_out{0}, n_answered{0},
      n_accept_errors{0};
  std::atomic<bool> stopped{false};
  std::optional<boost::asio::ssl::context> tls;
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor{ioc};
  boost::asio::ip::tcp protocol = boost::asio::ip::tcp::v4();
  boost::asio::steady_timer pause{ioc}, flush{ioc};
  bool flush_armed = false;
  std::vector<std::thread> threads;

  void log(LogLevel level, const std::string& line) {
    if (opts.log) opts.log(level, line);
  }
  /// One line about an event of a limited kind, or nothing past the limit
  /// (a summary of what was left out comes when the window closes).
  void limited(supervisor::LogLimiter& limiter, const char* kind, const std::string& line);
  /// A client fault, when they are logged.
  void fault(const Conn& c, const std::string& what) {
    if (opts.log_client_faults) limited(faults, "client faults", "http: bad request from " + c.peer_text + ": " + what);
  }

  void accept();
  void on_readable();
  void pause_accepting();
  /// Counts `c` in; false when a cap stands (after an eviction, if allowed).
  bool take_slot(Conn& c);
  /// Gives `c`'s slot back and takes it off the lists; idempotent.
  void release(Conn& c);
  /// Puts `c` at the back of `where`'s list; its wait starts now.
  void enter(Conn& c, Conn::Where where);
  /// Drops the longest waiter (then the longest writer); false if none.
  bool evict_one(const char* why);

 private:
  void arm_flush();
  void on_flush();
  void unlist(Conn& c);
};

/// A connection's session over `sock`, not started: session.hpp's template
/// for a plain stream (session_plain.cpp) or a TLS stream over `srv.tls`
/// (session_tls.cpp). Each is instantiated in its own translation unit: the
/// TLS one is the costliest code of the project to compile, and apart the two
/// compile side by side.
std::shared_ptr<Server::Impl::Conn> plain_session(Server::Impl& srv, boost::asio::ip::tcp::socket sock);
std::shared_ptr<Server::Impl::Conn> tls_session(Server::Impl& srv, boost::asio::ip::tcp::socket sock);

}  // namespace zkfarm::http::core
