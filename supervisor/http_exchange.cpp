#include "supervisor/http_exchange.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <optional>
#include <string_view>

#include "supervisor/public_status.hpp"

namespace zkfarm::http {

namespace beast_http = boost::beast::http;

namespace {

std::shared_ptr<const std::string> text(std::string s) { return std::make_shared<const std::string>(std::move(s)); }

Response plain(unsigned status, std::string body) {
  Response r;
  r.status = status;
  r.body = text(std::move(body));
  return r;
}

// Reason phrases of the codes this server sends (RFC 9110 §15; RFC 6585 §5 for 431).
const char* reason(unsigned status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
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
      return content_.ready() ? plain(200, "ready\n") : plain(503, "not ready\n");
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
      // The snapshot changes at most every 200 ms: reduce it once per change,
      // and let every response in flight share the one body.
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

Reply serialize(const Response& r, unsigned request_version, bool close, bool head_only) {
  Reply out;
  out.status = r.status;
  out.close = close;
  const std::size_t length = r.body ? r.body->size() : 0;
  std::string& h = out.head;
  h.reserve(200);
  h += "HTTP/1.1 ";
  h += std::to_string(r.status);
  h += ' ';
  h += reason(r.status);
  h += "\r\nContent-Type: ";
  h += r.content_type;
  h += "\r\nContent-Length: ";
  h += std::to_string(length);
  h += "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n";
  if (r.allow_header) h += "Allow: GET, HEAD\r\n";
  if (close)
    h += "Connection: close\r\n";
  else if (request_version == 10)
    h += "Connection: keep-alive\r\n";
  h += "\r\n";
  if (!head_only && length) out.body = r.body;
  return out;
}

struct Exchange::Parser {
  beast_http::request_parser<beast_http::empty_body> p;
};

Exchange::Exchange(Router& router, std::size_t header_limit)
    : router_(router), header_limit_(header_limit < 64 ? 64 : header_limit) {}

Exchange::~Exchange() = default;

std::span<char> Exchange::prepare(std::size_t max) {
  compact();
  prepared_from_ = in_.size();
  in_.resize(prepared_from_ + max);
  return {in_.data() + prepared_from_, max};
}

void Exchange::commit(std::size_t n) {
  in_.resize(prepared_from_ + std::min(n, in_.size() - prepared_from_));
}

void Exchange::compact() {
  if (off_ == 0) return;
  in_.erase(0, off_);
  off_ = 0;
  // An idle keep-alive connection keeps a few KB at most.
  if (in_.empty() && in_.capacity() > 2 * header_limit_) std::string().swap(in_);
}

Reply Exchange::fail(unsigned status, std::string fault) {
  closed_ = true;
  ++answered_;
  Reply r = serialize(plain(status, std::string(reason(status)) + "\n"), 11, /*close=*/true, /*head_only=*/false);
  r.fault = std::move(fault);
  return r;
}

bool Exchange::next(Reply& out) {
  while (!closed_) {
    if (!parser_) {
      parser_ = std::make_unique<Parser>();
      parser_->p.header_limit(static_cast<std::uint32_t>(header_limit_));
      parser_->p.eager(false);
      request_bytes_ = 0;
    }
    const std::size_t pending = in_.size() - off_;
    if (pending == 0) return false;
    boost::beast::error_code ec;
    const std::size_t n = parser_->p.put(boost::asio::const_buffer(in_.data() + off_, pending), ec);
    off_ += n;
    request_bytes_ += n;
    if (ec == beast_http::error::need_more) {
      // The parser checks the limit against what it was given; the request's
      // whole head (consumed start line plus pending fields) is checked here.
      if (request_bytes_ + (in_.size() - off_) > header_limit_) {
        out = fail(431, "request header fields too large");
        return true;
      }
      return false;
    }
    if (ec == beast_http::error::header_limit) {
      out = fail(431, "request header fields too large");
      return true;
    }
    if (ec == beast_http::error::unexpected_body || ec == beast_http::error::body_limit) {
      out = fail(413, "request with a body");
      return true;
    }
    if (ec) {
      out = fail(400, "malformed request (" + ec.message() + ")");
      return true;
    }
    if (request_bytes_ > header_limit_) {  // Beast applies its limit to the start line and the fields apart
      out = fail(431, "request header fields too large");
      return true;
    }
    if (parser_->p.is_header_done() && !parser_->p.is_done()) {
      // Content-Length above 0 or chunked: this server takes no request bodies.
      out = fail(413, "request with a body");
      return true;
    }
    if (parser_->p.is_done()) {
      const auto& m = parser_->p.get();
      Request req;
      req.method = std::string(m.method_string());
      req.target = std::string(m.target());
      req.version = m.version();
      req.keep_alive = m.keep_alive();
      parser_.reset();
      Response resp = router_.respond(req);
      const bool close = !req.keep_alive;
      out = serialize(resp, req.version, close, req.method == "HEAD");
      if (resp.status == 405) out.fault = "method not allowed";
      closed_ = close;
      ++answered_;
      return true;
    }
    if (n == 0) return false;  // no progress without an error: wait for more bytes
  }
  return false;
}

}  // namespace zkfarm::http
