#include "supervisor/status/http_server.hpp"

#include <optional>
#include <stdexcept>
#include <string_view>

#include "supervisor/status/public_status.hpp"

namespace zkfarm::http {

namespace {

std::shared_ptr<const std::string> text(std::string s) { return std::make_shared<const std::string>(std::move(s)); }

Response plain(unsigned status, std::string body) {
  Response r;
  r.status = status;
  r.body = text(std::move(body));
  return r;
}

// What the connection-level refusals say: the reason phrase, in the status
// line and as the body, as zkfarmd has always answered them (RFC 9110 §15,
// whose 413 is "Content Too Large" where Beast says "Payload Too Large";
// RFC 6585 §5 for 431).
core::Response refusal_text(unsigned status, const char* reason) {
  core::Response r;
  r.status = status;
  r.reason = reason;
  r.body = std::string(reason) + "\n";
  r.content_type = "text/plain; charset=utf-8";
  r.headers = {{"X-Content-Type-Options", "nosniff"}};
  return r;
}

}  // namespace

Router::Router(Content content, bool status_detail) : content_(std::move(content)), status_detail_(status_detail) {}

Response Router::respond(const Request& req) {
  if (req.method != "GET" && req.method != "HEAD") {
    Response r = plain(405, "only GET and HEAD\n");
    r.allow_header = true;
    return r;
  }
  std::string_view path(req.target);
  if (auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  try {
    if (path == "/healthz") {
      if (!content_.healthy) return plain(503, "no health check\n");
      return content_.healthy() ? plain(200, "ok\n") : plain(503, "loop stalled\n");
    }
    if (path == "/readyz") {
      if (!content_.ready) return plain(503, "no readiness check\n");
      if (content_.ready()) return plain(200, "ready\n");
      std::string why = content_.not_ready_reason ? content_.not_ready_reason() : std::string();
      return plain(503, why.empty() ? "not ready\n" : "not ready: " + why + "\n");
    }
    if (path == "/metrics") {
      std::string m = content_.metrics ? content_.metrics() : std::string();
      if (m.empty()) return plain(503, "metrics not rendered yet\n");
      Response r = plain(200, std::move(m));
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      return r;
    }
    if (path == "/status") {
      std::string s = content_.status ? content_.status() : std::string();
      // The snapshot changes at most every 200 ms: reduce it once per change.
      if (!last_status_out_ || s != last_status_in_) {
        std::optional<std::string> out = status_detail_ ? (s.empty() ? std::nullopt : std::optional(s)) : public_status(s);
        last_status_out_ = out ? text(std::move(*out)) : nullptr;
        last_status_in_ = std::move(s);
      }
      if (!last_status_out_) return plain(503, "status not rendered yet\n");
      Response r;
      r.content_type = "application/json";
      r.body = last_status_out_;
      return r;
    }
  } catch (const std::exception&) {
    return plain(500, "internal error\n");
  }
  return plain(404, "not found; try /status, /metrics, /healthz, /readyz\n");
}

namespace {

// The Router as the shared server's Handler: no request takes a body, and
// every answer is made at once on the I/O thread (the Content callbacks only
// copy snapshots the supervisor's loop has rendered).
class RouterHandler : public core::Handler {
 public:
  std::optional<Router> router;  // set by start()

  core::Admission admit(const core::RequestHead&) override { return {}; }

  void handle(core::Request request, std::function<void(core::Response)> done) override {
    Response r = router->respond({request.head.method, request.head.target, 11, true});
    core::Response out;
    out.status = r.status;
    out.body = r.body ? *r.body : std::string();
    out.content_type = r.content_type;
    out.headers = {{"X-Content-Type-Options", "nosniff"}};
    if (r.allow_header) out.headers.emplace_back("Allow", "GET, HEAD");
    if (r.status == 405) out.fault = "method not allowed";
    done(std::move(out));
  }

  core::Response too_large(const core::RequestHead&, uint64_t) override { return refusal(core::Refusal::kBodyNotAllowed); }

  core::Response refusal(core::Refusal why) override {
    switch (why) {
      case core::Refusal::kMalformed: return refusal_text(400, "Bad Request");
      case core::Refusal::kHeadTooLarge: return refusal_text(431, "Request Header Fields Too Large");
      case core::Refusal::kBodyNotAllowed: return refusal_text(413, "Content Too Large");
      case core::Refusal::kLengthRequired: return refusal_text(411, "Length Required");
      case core::Refusal::kNoStorage:
      case core::Refusal::kDiskFull: return refusal_text(507, "Insufficient Storage");
      case core::Refusal::kStoreFailed:
      case core::Refusal::kInternal: break;
    }
    return refusal_text(500, "Internal Server Error");
  }
};

// What a request's drain may still read after a closing reply.
constexpr uint64_t kLingerBytes = 64 * 1024;

core::ServerOptions core_options(const ServerOptions& o) {
  core::ServerOptions c;
  c.address = o.address;
  c.address_name = "http_address";
  c.io_threads = 1;
  c.max_connections = o.max_connections;
  c.at_cap = core::AtCap::kDropLongestWaiter;
  c.max_per_address = 0;  // local users all come from 127.0.0.1: one cap for all
  c.header_limit = o.header_limit;
  c.header_timeout_ms = o.request_timeout_ms;
  c.write_timeout_ms = o.request_timeout_ms;
  c.drain_ms = o.request_timeout_ms ? o.request_timeout_ms : 1;
  c.drain_bytes = kLingerBytes;
  c.drain_every_close = true;
  c.reply_http11 = true;
  c.accept_pause_ms = o.accept_pause_ms;
  c.log_lines_per_second = o.log_lines_per_second;
  c.log_client_faults = true;
  c.log = o.log;
  return c;
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(const ServerOptions& o) : status_detail(o.status_detail), server(core_options(o), handler) {}
  bool status_detail;
  RouterHandler handler;  // before the server, which uses it until it is gone
  core::Server server;
};

HttpServer::HttpServer(ServerOptions opts) : impl_(std::make_unique<Impl>(opts)) {}

HttpServer::~HttpServer() = default;

void HttpServer::start(Content content) {
  if (impl_->handler.router) throw std::logic_error("HttpServer::start called twice");
  impl_->handler.router.emplace(std::move(content), impl_->status_detail);
  impl_->server.start();
}

uint16_t HttpServer::port() const { return impl_->server.port(); }
std::string HttpServer::address() const { return impl_->server.address(); }
unsigned HttpServer::max_connections() const { return impl_->server.options().max_connections; }

ServerStats HttpServer::stats() const {
  const core::ServerStats s = impl_->server.stats();
  return {s.accepted, s.open, s.evicted, s.timed_out, s.answered, s.accept_errors};
}

}  // namespace zkfarm::http
