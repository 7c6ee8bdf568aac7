#include "api/http_server.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "files/sha256.hpp"
#include "supervisor/http_server.hpp"

namespace zkfarm::api {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kHeaderLimit = 16 * 1024;
constexpr std::size_t kChunk = 64 * 1024;
constexpr uint64_t kDrainBytes = 64ull << 20;  // read and dropped after a refusal, so the client sees the answer
constexpr auto kDrainTime = 10s;
constexpr auto kPieceIdle = 30s;  // an upload with no byte for this long is cut

std::string json_error(const char* code, const std::string& message) {
  // Fixed codes and server-made messages: no client bytes to escape.
  return std::string("{\"error\":{\"code\":\"") + code + "\",\"message\":\"" + message + "\"}}";
}

Response error_response(unsigned status, const char* code, const std::string& message) {
  return Response{status, json_error(code, message), "application/json", {}};
}

}  // namespace

bool is_loopback_host(const std::string& address) {
  std::string host = address;
  try {
    host = zkfarm::http::split_address(address, "listen address").first;
  } catch (const std::exception&) {
  }
  if (host == "localhost") return true;
  boost::system::error_code ec;
  auto a = net::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hexval = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
      if (h < 0 || l < 0) return std::nullopt;
      out += char(h * 16 + l);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct HttpServer::Impl {
  // Declared so that the io_context (whose destruction destroys the sessions
  // still open) goes before what the sessions use: the counts and the TLS context.
  ServerOptions opts;
  Handler& handler;
  std::mutex m;
  std::map<std::string, unsigned> per_address;
  std::atomic<uint64_t> accepted{0}, open{0}, refused{0}, timed_out{0}, answered{0};
  std::atomic<bool> stopped{false};
  std::optional<ssl::context> tls;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;

  Impl(ServerOptions o, Handler& h) : opts(std::move(o)), handler(h) {}

  void log(const std::string& line) {
    if (opts.log) opts.log(line);
  }
  void accept();
  // Counts a connection from `addr`; false when a cap is reached.
  bool admit_connection(const std::string& addr) {
    std::lock_guard<std::mutex> lock(m);
    if (open >= opts.max_connections) return false;
    unsigned& n = per_address[addr];
    if (n >= opts.max_per_address) {
      if (n == 0) per_address.erase(addr);
      return false;
    }
    ++n;
    ++open;
    return true;
  }
  void release_connection(const std::string& addr) {
    std::lock_guard<std::mutex> lock(m);
    auto it = per_address.find(addr);
    if (it != per_address.end() && --it->second == 0) per_address.erase(it);
    --open;
  }
};

namespace {

// The layer with the deadline, for either stream type.
beast::tcp_stream& lowest(beast::tcp_stream& s) { return s; }
beast::tcp_stream& lowest(ssl::stream<beast::tcp_stream>& s) { return s.next_layer(); }

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(HttpServer::Impl& srv, Stream stream, std::string peer)
      : srv_(srv), stream_(std::move(stream)), peer_(std::move(peer)) {}
  ~Session() {
    drop_upload();
    srv_.release_connection(peer_);
  }

  void start() {
    lowest(stream_).expires_after(std::chrono::milliseconds(srv_.opts.header_timeout_ms));
    if constexpr (std::is_same_v<Stream, ssl::stream<beast::tcp_stream>>) {
      stream_.async_handshake(ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
        if (ec) return self->fail(ec);
        self->read_head(true);
      });
    } else {
      read_head(true);
    }
  }

 private:
  using Self = Session<Stream>;

  void fail(beast::error_code ec) {
    if (ec == beast::error::timeout) ++srv_.timed_out;
    close();
  }
  void close() {
    drop_upload();  // before the client can see the connection end
    beast::error_code ignored;
    lowest(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest(stream_).close();
  }

  void read_head(bool first = false) {
    head_parser_.emplace();
    head_parser_->header_limit(kHeaderLimit);
    // The body's limit is set when the body is read (its kind decides it).
    head_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    // The first head shares the handshake's deadline (set in start()).
    if (!first) lowest(stream_).expires_after(std::chrono::milliseconds(srv_.opts.header_timeout_ms));
    http::async_read_header(stream_, buffer_, *head_parser_,
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_head(ec); });
  }

  void on_head(beast::error_code ec) {
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) return refuse(error_response(431, "header_too_large", "the request head is over 16 KiB"), false);
    if (ec == http::error::end_of_stream || ec == net::error::eof) return close();
    if (ec) {
      if (ec != beast::error::timeout && ec != net::error::operation_aborted && ec != net::ssl::error::stream_truncated &&
          ec != net::error::connection_reset && buffer_.size() > 0) {
        return refuse(error_response(400, "bad_request", "malformed HTTP request"), false);
      }
      return fail(ec);
    }
    const auto& h = head_parser_->get();
    head_ = RequestHead{};
    head_.method = std::string(h.method_string());
    head_.target = std::string(h.target());
    head_.peer = peer_;
    const auto q = head_.target.find('?');
    head_.path = head_.target.substr(0, q);
    if (q != std::string::npos) {
      std::string_view rest(head_.target);
      rest.remove_prefix(q + 1);
      while (!rest.empty()) {
        auto amp = rest.find('&');
        std::string_view part = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
        if (part.empty()) continue;
        auto eq = part.find('=');
        auto k = percent_decode(part.substr(0, eq));
        auto v = percent_decode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
        if (!k || !v) return refuse(error_response(400, "bad_request", "malformed query string"), has_body());
        head_.query[*k] = *v;
      }
    }
    for (const auto& f : h) {
      std::string name(f.name_string());
      for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
      head_.fields[name] = std::string(f.value());
    }
    if (head_parser_->content_length()) head_.content_length = *head_parser_->content_length();
    head_.chunked = head_parser_->chunked();
    keep_alive_ = h.keep_alive();
    version_ = h.version();

    Admission adm;
    try {
      adm = srv_.handler.admit(head_);
    } catch (const std::exception& e) {
      adm.reject = error_response(500, "internal", "internal error");
    }
    context_ = adm.context;
    if (adm.reject) return refuse(std::move(*adm.reject), has_body());
    limit_ = adm.limit;
    switch (adm.body) {
      case BodyKind::kNone:
        if (has_body()) return refuse(error_response(413, "payload_too_large", "this request takes no body"), true);
        return dispatch();
      case BodyKind::kJson:
        if (head_.content_length && *head_.content_length > limit_) return refuse(srv_.handler.too_large(head_, limit_), true);
        return continue_then([self = this->shared_from_this()] { self->read_json(); });
      case BodyKind::kUpload:
        if (!head_.content_length)
          return refuse(error_response(411, "length_required", "an upload needs a Content-Length"), has_body());
        if (*head_.content_length > limit_) return refuse(srv_.handler.too_large(head_, limit_), true);
        return continue_then([self = this->shared_from_this()] { self->start_upload(); });
    }
  }

  bool has_body() const { return head_.chunked || (head_.content_length && *head_.content_length > 0); }

  // The body's deadline: the head's allowance plus its size at the minimum
  // rate; and no piece may take longer than kPieceIdle, so a large declared
  // body cannot sit idle for hours holding its connection and reservation.
  void body_deadline(uint64_t bytes) {
    const uint64_t ms = srv_.opts.header_timeout_ms + bytes * 1000 / std::max<uint64_t>(1, srv_.opts.min_body_rate);
    body_end_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    piece_deadline();
  }
  void piece_deadline() {
    const auto idle = std::chrono::steady_clock::now() + kPieceIdle;
    lowest(stream_).expires_at(std::min(body_end_, idle));
  }

  // "Expect: 100-continue" (curl's large uploads): say go on before reading.
  template <class Next>
  void continue_then(Next next) {
    std::string expect = head_.field("expect");
    for (auto& c : expect) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (expect != "100-continue") return next();
    auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
    lowest(stream_).expires_after(std::chrono::milliseconds(srv_.opts.write_timeout_ms));
    http::async_write(stream_, *cont, [self = this->shared_from_this(), cont, next](beast::error_code ec, std::size_t) {
      if (ec) return self->fail(ec);
      next();
    });
  }

  void read_json() {
    json_parser_.emplace(std::move(*head_parser_));
    json_parser_->body_limit(limit_);
    body_deadline(head_.content_length.value_or(limit_));
    http::async_read(stream_, buffer_, *json_parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec == http::error::body_limit) return self->refuse(self->srv_.handler.too_large(self->head_, self->limit_), true);
      if (ec) return self->fail(ec);
      self->request_.body = std::move(self->json_parser_->get().body());
      self->json_parser_.reset();
      self->dispatch();
    });
  }

  void start_upload() {
    upload_path_ = srv_.opts.upload_dir + "/.partial-XXXXXX";
    fd_ = ::mkostemp(upload_path_.data(), O_CLOEXEC);
    if (fd_ < 0) {
      srv_.log(std::string("cannot make an upload file in ") + srv_.opts.upload_dir + ": " + std::strerror(errno));
      return refuse(error_response(507, "insufficient_storage", "cannot store the upload"), true);
    }
    upload_parser_.emplace(std::move(*head_parser_));
    upload_parser_->body_limit(limit_);
    body_deadline(*head_.content_length);
    chunk_.resize(kChunk);
    sha_.emplace();
    read_upload_piece();
  }

  void read_upload_piece() {
    if (upload_parser_->is_done()) return finish_upload();
    piece_deadline();
    upload_parser_->get().body().data = chunk_.data();
    upload_parser_->get().body().size = chunk_.size();
    http::async_read(stream_, buffer_, *upload_parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec == http::error::need_buffer) ec = {};
      if (ec == http::error::body_limit) return self->refuse(self->srv_.handler.too_large(self->head_, self->limit_), true);
      if (ec) return self->fail(ec);
      const size_t n = self->chunk_.size() - self->upload_parser_->get().body().size;
      const char* p = self->chunk_.data();
      size_t left = n;
      while (left > 0) {
        const ssize_t w = ::write(self->fd_, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
          const int err = errno;
          self->srv_.log(std::string("cannot write an upload into ") + self->srv_.opts.upload_dir + ": " + std::strerror(err));
          return self->refuse(err == ENOSPC || err == EDQUOT
                                  ? error_response(507, "insufficient_storage", "the server's disk is full")
                                  : error_response(500, "internal", "cannot store the upload"),
                              true);
        }
        p += w;
        left -= size_t(w);
      }
      self->sha_->add(self->chunk_.data(), n);
      self->upload_bytes_ += n;
      self->read_upload_piece();
    });
  }

  // Closed here; synced by the handler on its pool (an fsync of GBs must not
  // stall this I/O thread's other connections).
  void finish_upload() {
    if (::close(fd_) != 0) {
      fd_ = -1;
      ::unlink(upload_path_.c_str());
      return refuse(error_response(500, "internal", "cannot store the upload"), false);
    }
    fd_ = -1;
    request_.upload_path = upload_path_;
    request_.upload_bytes = upload_bytes_;
    request_.upload_sha256 = sha_->hex_digest();
    upload_parser_.reset();
    std::vector<char>().swap(chunk_);
    dispatch();
  }

  // The whole request is here: the Service handles it on its own threads.
  void dispatch() {
    request_.head = head_;
    request_.context = context_;
    lowest(stream_).expires_never();  // a held request (long poll) waits as long as the Service says
    auto self = this->shared_from_this();
    try {
      srv_.handler.handle(std::move(request_), [self](Response r) {
        net::post(lowest(self->stream_).get_executor(), [self, r = std::move(r)]() mutable { self->respond(std::move(r), false); });
      });
    } catch (const std::exception&) {
      respond(error_response(500, "internal", "internal error"), false);
    }
    request_ = Request{};
  }

  // An upload being received is given up: its file goes.
  void drop_upload() {
    if (fd_ < 0) return;
    ::close(fd_);
    ::unlink(upload_path_.c_str());
    fd_ = -1;
  }

  // Answers without reading the body: the connection closes after it.
  void refuse(Response r, bool body_pending) {
    drop_upload();
    respond(std::move(r), true, body_pending);
  }

  void respond(Response r, bool close_after, bool drain = false) {
    context_.reset();
    res_ = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), version_ ? version_ : 11);
    res_->set(http::field::server, "zkfarm-api");
    res_->set(http::field::content_type, r.content_type);
    res_->set(http::field::cache_control, "no-store");
    for (auto& [k, v] : r.headers) res_->set(k, v);
    const bool keep = keep_alive_ && !close_after;
    res_->keep_alive(keep);
    res_->body() = std::move(r.body);
    res_->prepare_payload();
    lowest(stream_).expires_after(std::chrono::milliseconds(srv_.opts.write_timeout_ms));
    http::async_write(stream_, *res_, [self = this->shared_from_this(), keep, drain](beast::error_code ec, std::size_t) {
      self->res_.reset();
      if (ec) return self->fail(ec);
      ++self->srv_.answered;
      if (drain) return self->drain();
      if (!keep) return self->close();
      self->upload_bytes_ = 0;
      self->read_head();
    });
  }

  // After a refusal: read and drop what the client still sends (up to
  // kDrainBytes or kDrainTime), so it reads the answer rather than a reset.
  void drain() {
    if (std::is_same_v<Stream, beast::tcp_stream>) {
      beast::error_code ignored;
      lowest(stream_).socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
    lowest(stream_).expires_after(kDrainTime);
    chunk_.resize(kChunk);
    drain_piece();
  }
  void drain_piece() {
    stream_.async_read_some(net::buffer(chunk_), [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > kDrainBytes) return self->close();
      self->drain_piece();
    });
  }

  HttpServer::Impl& srv_;
  Stream stream_;
  std::string peer_;
  beast::flat_buffer buffer_{kHeaderLimit + 8192};  // a maximum: a whole head and what follows it
  std::optional<http::request_parser<http::empty_body>> head_parser_;
  std::optional<http::request_parser<http::string_body>> json_parser_;
  std::optional<http::request_parser<http::buffer_body>> upload_parser_;
  std::shared_ptr<http::response<http::string_body>> res_;
  RequestHead head_;
  Request request_;
  std::shared_ptr<void> context_;
  bool keep_alive_ = true;
  unsigned version_ = 11;
  uint64_t limit_ = 0;
  std::vector<char> chunk_;
  std::optional<files::Sha256> sha_;
  int fd_ = -1;
  std::string upload_path_;
  uint64_t upload_bytes_ = 0;
  uint64_t drained_ = 0;
  std::chrono::steady_clock::time_point body_end_;
};

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket sock) {
    if (stopped) return;
    if (ec) {
      // Out of descriptors (EMFILE, ENFILE) or a transient fault: pause, never spin.
      auto t = std::make_shared<net::steady_timer>(ioc, 100ms);
      t->async_wait([this, t](beast::error_code) {
        if (!stopped) accept();
      });
      return;
    }
    ++accepted;
    beast::error_code pe;
    const auto ep = sock.remote_endpoint(pe);
    const std::string addr = pe ? std::string("?") : ep.address().to_string();
    if (!admit_connection(addr)) {
      ++refused;
      beast::error_code ignored;
      sock.close(ignored);
    } else if (tls) {
      std::make_shared<Session<ssl::stream<beast::tcp_stream>>>(*this, ssl::stream<beast::tcp_stream>(beast::tcp_stream(std::move(sock)), *tls), addr)
          ->start();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(*this, beast::tcp_stream(std::move(sock)), addr)->start();
    }
    accept();
  });
}

HttpServer::HttpServer(ServerOptions opts, Handler& handler) : impl_(std::make_unique<Impl>(std::move(opts), handler)) {
  Impl& m = *impl_;
  if (!m.opts.tls_cert.empty()) {
    m.tls.emplace(ssl::context::tls_server);
    m.tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
    boost::system::error_code ec;
    m.tls->use_certificate_chain_file(m.opts.tls_cert, ec);
    if (ec) throw std::runtime_error(m.opts.tls_cert + ": cannot read the TLS certificate chain: " + ec.message());
    m.tls->use_private_key_file(m.opts.tls_key, ssl::context::pem, ec);
    if (ec) throw std::runtime_error(m.opts.tls_key + ": cannot read the TLS private key (or it does not match the certificate): " + ec.message());
  }
  const auto [host, port] = zkfarm::http::split_address(m.opts.address, "--listen");
  boost::system::error_code ec;
  tcp::resolver resolver(m.ioc);
  auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) throw std::runtime_error("cannot listen on " + m.opts.address + ": cannot resolve '" + host + "'");
  const tcp::endpoint ep = results.begin()->endpoint();
  m.acceptor.open(ep.protocol(), ec);
  if (!ec) m.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(ep, ec);
  if (!ec) m.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("cannot listen on " + m.opts.address + ": " + ec.message());
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  impl_->accept();
  for (unsigned i = 0; i < std::max(1u, impl_->opts.io_threads); ++i) impl_->threads.emplace_back([this] { impl_->ioc.run(); });
}

void HttpServer::stop() {
  if (impl_->stopped.exchange(true)) return;
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

uint16_t HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }
bool HttpServer::tls() const { return impl_->tls.has_value(); }

ServerStats HttpServer::stats() const {
  return {impl_->accepted, impl_->open, impl_->refused, impl_->timed_out, impl_->answered};
}

}  // namespace zkfarm::api
