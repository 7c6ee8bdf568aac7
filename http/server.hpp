#pragma once
// The HTTP server behind every listener of the farm (zkfarmd's status port,
// zkfarm-api's HTTPS API): Boost.Beast on Boost.Asio, asynchronous, TLS
// optional (OpenSSL). A slow or stalled client costs a descriptor and a
// parser, never a thread. What a program serves comes through a Handler;
// limits and timeouts are written (and tested, tests/http/http_core_test.cpp) once.
//
// Bounded, because anyone who can reach the port can hold what it offers:
// - connections: `max_connections` in all and `max_per_address` from one IP
//   address. At the cap a newcomer is either refused (closed at once) or let
//   in by dropping the connection that has waited longest for a complete
//   request (then the one longest in a response): AtCap says which;
// - descriptors: EMFILE/ENFILE on accept drops the longest waiter and retries
//   (AtCap::kDropLongestWaiter), or pauses accepting for `accept_pause_ms`;
//   never a crash, never a busy loop;
// - time: the TLS handshake and a request's head must be complete within
//   `header_timeout_ms` of the connection's start (together) or of the
//   previous response (slowloris gets no more); a body must arrive at
//   `min_body_rate` bytes/s or better (plus the head's allowance), with no
//   pause over 30 s; a response is written within `write_timeout_ms`. Past a
//   deadline the connection is closed;
// - memory: heads ≤ `header_limit` bytes, request line included (431); JSON
//   bodies ≤ the Handler's limit held in memory (413); upload bodies streamed
//   to a file (Content-Length required, 411) in 64 KiB pieces; requests that
//   take no body and send one: 413. One response in flight per connection;
//   pipelined requests are answered one by one, in order;
// - a request refused before its body was read (and, with
//   `drain_every_close`, any closing reply) is answered, then the server
//   sends FIN and reads and drops up to `drain_bytes` of what the client
//   still sends, for up to `drain_ms`, so that the client reads the answer
//   rather than a reset;
// - log: client faults, evictions and accept errors at most
//   `log_lines_per_second` lines a second each, plus how many were left out;
//   never the client's bytes, only fixed text, numbers and the peer's address.
//
// The listener binds without SO_REUSEPORT, so no other socket can share the
// port; SO_REUSEADDR is set (a restart must not fail on the previous run's
// TIME_WAIT connections), which on Linux never lets a second socket bind an
// address with a listener on it. Sockets are close-on-exec from accept on.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zkfarm::http {

/// What a server logs (a Handler's own lines are its own business).
enum class LogLevel { kInfo, kWarn };
/// Called on an I/O thread; every line is fixed text plus numbers and the peer's address.
using LogFn = std::function<void(LogLevel, std::string_view)>;

namespace core {

/// An answer: status, body, content type and extra header fields.
struct Response {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string fault = {};   ///< non-empty: the client erred; logged (rate-limited) as this fixed phrase, never its bytes
  std::string reason = {};  ///< the status line's phrase; empty: Beast's for the status
};

/// A request's head, as the Handler sees it when deciding what to do with the body.
struct RequestHead {
  std::string method;  ///< "GET", "POST", …
  std::string target;  ///< as sent ("/v1/jobs/7?wait_ms=1000")
  std::string path;    ///< the target before '?'
  std::map<std::string, std::string> query;   ///< percent-decoded; a repeated key keeps the last value
  std::map<std::string, std::string> fields;  ///< header fields, names in lowercase
  std::optional<uint64_t> content_length;     ///< when given
  bool chunked = false;
  std::string peer;  ///< the client's IP address
  bool query_malformed = false;  ///< the query string had a bad percent escape (`query` holds what came before it)
  /// A header field by lowercase name, or "".
  std::string field(const std::string& name) const {
    auto it = fields.find(name);
    return it == fields.end() ? std::string() : it->second;
  }
};

/// How a request's body is read.
enum class BodyKind {
  kNone,    ///< no body allowed (a body: 413)
  kJson,    ///< read into memory, at most `limit` bytes
  kUpload,  ///< streamed into a new file (0600) under the upload folder, at most `limit` bytes
};

/// The Handler's decision on a head: answer now, or read the body and call handle().
struct Admission {
  std::optional<Response> reject;  ///< answer this now (the body is not read)
  BodyKind body = BodyKind::kNone;
  uint64_t limit = 0;              ///< bytes, for kJson and kUpload
  std::shared_ptr<void> context;   ///< the Handler's own state for this request; dropped when the request ends
};

/// A complete request.
struct Request {
  RequestHead head;
  std::string body;               ///< kJson: the body
  std::string upload_path;        ///< kUpload: the file written and closed, not yet synced (the handler syncs and renames it, or it is removed)
  uint64_t upload_bytes = 0;
  std::string upload_sha256;      ///< kUpload: SHA-256 of the body, lowercase hex
  std::shared_ptr<void> context;  ///< Admission::context
};

/// Why the server itself refuses a request (the Handler words the answer).
enum class Refusal {
  kMalformed,       ///< 400: not HTTP/1.x
  kHeadTooLarge,    ///< 431: the head is over header_limit
  kBodyNotAllowed,  ///< 413: a body on a request that takes none
  kLengthRequired,  ///< 411: an upload without Content-Length
  kNoStorage,       ///< 507: no file can be made for the upload
  kDiskFull,        ///< 507: writing the upload found the disk full
  kStoreFailed,     ///< 500: writing or closing the upload's file failed otherwise
  kInternal,        ///< 500: the Handler threw
};

/// What a server serves. admit() runs on an I/O thread and must be quick;
/// handle() must call `done` exactly once, from any thread, and must not
/// block its caller for long (post slow work to a pool).
class Handler {
 public:
  virtual ~Handler() = default;
  virtual Admission admit(const RequestHead& head) = 0;
  virtual void handle(Request request, std::function<void(Response)> done) = 0;
  /// The answer when a body goes past the Admission's limit while being read.
  virtual Response too_large(const RequestHead& head, uint64_t limit) = 0;
  /// The answer to a request the server refuses on its own (its status is
  /// the Refusal's; the server fills in `fault` for the log).
  virtual Response refusal(Refusal why) = 0;
};

/// What to do with a new connection when `max_connections` are open.
enum class AtCap {
  kRefuseNewcomer,     ///< close the new one at once
  kDropLongestWaiter,  ///< reset the one longest waiting for a request (or a response), serve the new one; one I/O thread
};

struct ServerOptions {
  std::string address = "127.0.0.1:8443";   ///< "HOST:PORT" or "[V6]:PORT"; port 0 picks one (tests)
  std::string address_name = "--listen";    ///< how errors name the address ("WHAT must be HOST:PORT")
  std::string tls_cert;                     ///< PEM certificate chain; empty: plain HTTP
  std::string tls_key;                      ///< PEM private key
  std::string upload_dir;                   ///< where upload bodies are written
  unsigned io_threads = 2;                  ///< 1 with AtCap::kDropLongestWaiter (the victim is closed on the spot)
  unsigned max_connections = 512;           ///< ≥ 1
  AtCap at_cap = AtCap::kRefuseNewcomer;
  unsigned max_per_address = 64;            ///< 0: no cap per address
  std::size_t header_limit = 16 * 1024;     ///< request line plus header fields, bytes
  unsigned header_timeout_ms = 10000;
  unsigned write_timeout_ms = 30000;
  uint64_t min_body_rate = 256 * 1024;      ///< bytes/s a body must keep up
  uint64_t drain_bytes = 64ull << 20;       ///< read and dropped after a refusal at most
  unsigned drain_ms = 10000;                ///< for at most this long
  bool drain_every_close = false;           ///< drain after any closing reply, not only a refusal
  bool reply_http11 = false;                ///< answer HTTP/1.0 requests as HTTP/1.1 (else as 1.0)
  std::string server_name;                  ///< the Server field; empty: none
  unsigned accept_pause_ms = 100;           ///< pause of the accept loop when out of descriptors
  unsigned log_lines_per_second = 5;        ///< per kind of event (client faults, evictions, accept errors)
  bool log_client_faults = false;           ///< log bad requests and timed-out partial requests
  LogFn log;                                ///< may be empty
};

/// Counters for tests and diagnostics (read from any thread).
struct ServerStats {
  uint64_t accepted = 0;        ///< connections accepted
  uint64_t open = 0;            ///< connections open now
  uint64_t refused_at_cap = 0;  ///< closed at once (AtCap::kRefuseNewcomer, or the per-address cap)
  uint64_t evicted = 0;         ///< dropped to make room (AtCap::kDropLongestWaiter)
  uint64_t timed_out = 0;       ///< closed at a deadline
  uint64_t answered = 0;        ///< responses written
  uint64_t accept_errors = 0;   ///< accepts that failed (EMFILE, ENFILE, …)
};

class Server {
 public:
  /// Binds and listens (TLS when a certificate is given; its files are read
  /// now); serves nothing until start(). Throws std::runtime_error: "cannot
  /// listen on HOST:PORT: address already in use" (or the system's reason),
  /// "WHAT must be HOST:PORT, got '…'", or one naming a TLS file.
  Server(ServerOptions opts, Handler& handler);
  /// stop().
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Starts the I/O threads. Connections made before wait in the backlog. Call once.
  void start();
  /// Stops accepting and closes every connection; joins the I/O threads.
  void stop();
  /// The bound port (the chosen one when the address asked for port 0).
  uint16_t port() const;
  /// The bound address, "127.0.0.1:17100" ("[::1]:17100" for IPv6).
  std::string address() const;
  bool tls() const;
  /// The options in force (caps raised to at least 1).
  const ServerOptions& options() const;
  ServerStats stats() const;

  struct Impl;  ///< the listener and its connections (server.cpp, session.hpp)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace core
}  // namespace zkfarm::http
