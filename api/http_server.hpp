#pragma once
// zkfarm-api's HTTPS listener: Boost.Beast on Boost.Asio, asynchronous, with
// OpenSSL for TLS (docs/decisions.md says why not cpp-httplib). A few I/O
// threads serve every connection; a slow or stalled client costs a descriptor
// and a parser, never a thread. The request handlers themselves run on the
// Service's bounded pools (service.hpp), never on an I/O thread.
//
// Bounded, because anyone who can reach the port can hold what it offers:
// - connections: `max_connections` in all and `max_per_address` from one IP
//   address; a connection past either cap is closed at once;
// - time: the TLS handshake and a request's head must be complete within
//   `header_timeout_ms` of the connection's start (together) or of the
//   previous response (slowloris gets no more); a body must arrive at
//   `min_body_rate` bytes/s or better (plus the head's allowance), with no
//   pause over 30 s; a response is written within `write_timeout_ms`. Past a
//   deadline the connection is closed;
// - memory: heads ≤ 16 KiB (431), JSON bodies ≤ the Service's limit held in
//   memory (413), upload bodies streamed to a file (Content-Length required,
//   411) in 64 KiB pieces, never held;
// - a request refused before its body was read (401, 403, 413, 429) is
//   answered, then up to 64 MiB of its body is read and dropped so that the
//   client reads the answer rather than a reset, then the connection closes.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zkfarm::api {

/// An answer: status, body, content type and extra header fields.
struct Response {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

/// A request's head, as the Service sees it when deciding what to do with the body.
struct RequestHead {
  std::string method;  ///< "GET", "POST", …
  std::string target;  ///< as sent ("/v1/jobs/7?wait_ms=1000")
  std::string path;    ///< the target before '?'
  std::map<std::string, std::string> query;  ///< percent-decoded; a repeated key keeps the last value
  std::map<std::string, std::string> fields;  ///< header fields, names in lowercase
  std::optional<uint64_t> content_length;      ///< when given
  bool chunked = false;
  std::string peer;  ///< the client's IP address
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

/// The Service's decision on a head: answer now, or read the body and call handle().
struct Admission {
  std::optional<Response> reject;  ///< answer this now (the body is not read)
  BodyKind body = BodyKind::kNone;
  uint64_t limit = 0;               ///< bytes, for kJson and kUpload
  std::shared_ptr<void> context;    ///< the Service's own state for this request (who asks, reservations); dropped when the request ends
};

/// A complete request.
struct Request {
  RequestHead head;
  std::string body;                ///< kJson: the body
  std::string upload_path;         ///< kUpload: the file written and closed, not yet synced (the handler syncs and renames it, or it is removed)
  uint64_t upload_bytes = 0;
  std::string upload_sha256;       ///< kUpload: SHA-256 of the body, lowercase hex
  std::shared_ptr<void> context;   ///< Admission::context
};

/// What the server serves. admit() runs on an I/O thread and must be quick
/// (no waiting on zkfarmd); handle() must call `done` exactly once, from any
/// thread, and must not block the caller for long (it posts to a pool).
class Handler {
 public:
  virtual ~Handler() = default;
  virtual Admission admit(const RequestHead& head) = 0;
  virtual void handle(Request request, std::function<void(Response)> done) = 0;
  /// The answer when a body goes past the Service's limit while being read.
  virtual Response too_large(const RequestHead& head, uint64_t limit) = 0;
};

/// Logs from the server (never the client's bytes; the peer's address only).
using LogFn = std::function<void(std::string_view)>;

struct ServerOptions {
  std::string address = "127.0.0.1:8443";  ///< "HOST:PORT" or "[V6]:PORT"; port 0 picks one (tests)
  std::string tls_cert;                    ///< PEM certificate chain; empty: plain HTTP
  std::string tls_key;                     ///< PEM private key
  std::string upload_dir;                  ///< where upload bodies are written
  unsigned io_threads = 2;
  unsigned max_connections = 512;
  unsigned max_per_address = 64;
  unsigned header_timeout_ms = 10000;
  unsigned write_timeout_ms = 30000;
  uint64_t min_body_rate = 256 * 1024;  ///< bytes/s a body must keep up
  LogFn log;
};

struct ServerStats {
  uint64_t accepted = 0, open = 0, refused_at_cap = 0, timed_out = 0, answered = 0;
};

class HttpServer {
 public:
  /// Binds and listens (TLS when a certificate is given; its files are read
  /// now). Throws std::runtime_error naming the address or the file.
  HttpServer(ServerOptions opts, Handler& handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void start();
  /// Stops accepting and closes every connection; joins the I/O threads.
  void stop();
  uint16_t port() const;
  bool tls() const;
  ServerStats stats() const;

  struct Impl;  ///< the listener and its connections (http_server.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

/// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& address);

/// Percent-decodes a query component ('+' is a space). nullopt for a bad escape.
std::optional<std::string> percent_decode(std::string_view s);

}  // namespace zkfarm::api
