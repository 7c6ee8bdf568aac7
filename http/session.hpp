#pragma once
// One connection of http::core::Server, plain or TLS: read a head, let the
// Handler admit it, read its body (none, JSON in memory, or an upload
// streamed to a file), hand the request over, write the answer; again for
// the next request on a kept-alive connection. Every wait has a deadline
// (server.hpp says which); included by session_plain.cpp and session_tls.cpp
// only, each instantiating it for one stream type.
#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>
#include <cstring>
#include <limits>
#include <type_traits>

#include "files/sha256.hpp"
#include "http/address.hpp"
#include "http/server_impl.hpp"

namespace zkfarm::http::core {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

// The layer with the deadline, for either stream type.
inline beast::tcp_stream& lowest(beast::tcp_stream& s) { return s; }
inline beast::tcp_stream& lowest(boost::asio::ssl::stream<beast::tcp_stream>& s) { return s.next_layer(); }

template <class Stream>
class Session : public Server::Impl::Conn, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  static constexpr std::size_t kChunk = 64 * 1024;                    // upload and drain pieces
  static constexpr auto kPieceIdle = std::chrono::seconds(30);        // an upload with no byte for this long is cut

 public:
  Session(Server::Impl& srv, Stream stream)
      : srv_(srv), stream_(std::move(stream)), buffer_(srv.opts.header_limit + 8192) {}
  ~Session() override {
    drop_upload();
    srv_.release(*this);
  }

  void start() override {
    lowest(stream_).expires_after(std::chrono::milliseconds(srv_.opts.header_timeout_ms));
    if constexpr (kTls) {
      stream_.async_handshake(boost::asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->fail(ec);
                                self->read_head(true);
                              });
    } else {
      read_head(true);
    }
  }

  void abort() override {
    beast::error_code ignored;
    // An abortive close (RST): no TIME_WAIT left behind for an attacker's
    // connections, and no flush of data the peer will never read.
    lowest(stream_).socket().set_option(boost::asio::socket_base::linger(true, 0), ignored);
    drop_upload();
    lowest(stream_).close();  // pending operations complete with operation_aborted
    srv_.release(*this);
  }

 private:
  void fail(beast::error_code ec) {
    if (ec == beast::error::timeout) ++srv_.n_timed_out;
    close();
  }
  void close() {
    drop_upload();  // before the client can see the connection end
    beast::error_code ignored;
    lowest(stream_).socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    lowest(stream_).close();
    srv_.release(*this);
  }
  std::string timeout_text() const { return std::to_string(srv_.opts.header_timeout_ms) + " ms"; }

  void read_head(bool first = false) {
    head_ = RequestHead{};  // a refusal of this head must not answer as the last one (HEAD, version)
    head_parser_.emplace();
    head_parser_->header_limit(static_cast<std::uint32_t>(srv_.opts.header_limit));
    // The body's limit is set when the body is read (its kind decides it).
    head_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    // The first head shares the connection's (and handshake's) deadline, set in start().
    if (!first) {
      srv_.enter(*this, Where::kWaiting);
      lowest(stream_).expires_after(std::chrono::milliseconds(srv_.opts.header_timeout_ms));
    }
    bhttp::async_read_header(stream_, buffer_, *head_parser_,
                             [self = this->shared_from_this()](beast::error_code ec, std::size_t n) { self->on_head(ec, n); });
  }

  // `n`: the head's bytes, request line included.
  void on_head(beast::error_code ec, std::size_t n) {
    namespace error = boost::asio::error;
    // Beast's own check leaves a few bytes of slack (the blank line): the
    // limit is exact here, the whole head.
    if (!ec && n > srv_.opts.header_limit) ec = bhttp::error::header_limit;
    if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow)
      return refuse(Refusal::kHeadTooLarge, "request header fields too large", false);
    if (ec == bhttp::error::end_of_stream || ec == error::eof) return close();
    if (ec) {
      if (ec == beast::error::timeout && buffer_.size() > 0 && srv_.opts.log_client_faults)
        srv_.limited(srv_.faults, "client faults",
                     "http: incomplete request from " + peer_text + " timed out after " + timeout_text());
      if (ec != beast::error::timeout && ec != error::operation_aborted && ec != boost::asio::ssl::error::stream_truncated &&
          ec != error::connection_reset && buffer_.size() > 0)
        return refuse(Refusal::kMalformed, "malformed request (" + ec.message() + ")", false);
      return fail(ec);
    }
    srv_.enter(*this, Where::kNone);  // busy: no longer the longest waiter
    const auto& h = head_parser_->get();
    head_ = RequestHead{};
    head_.method = std::string(h.method_string());
    head_.target = std::string(h.target());
    head_.peer = peer;
    const auto q = head_.target.find('?');
    head_.path = head_.target.substr(0, q);
    bool bad_query = false;
    if (q != std::string::npos) {
      std::string_view rest(head_.target);
      rest.remove_prefix(q + 1);
      while (!rest.empty() && !bad_query) {
        auto amp = rest.find('&');
        std::string_view part = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
        if (part.empty()) continue;
        auto eq = part.find('=');
        auto k = percent_decode(part.substr(0, eq));
        auto v = percent_decode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
        if (!k || !v) bad_query = true;
        else head_.query[*k] = *v;
      }
    }
    for (const auto& f : h) {
      std::string name(f.name_string());
      for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
      head_.fields[name] = std::string(f.value());
    }
    if (head_parser_->content_length()) head_.content_length = *head_parser_->content_length();
    head_.chunked = head_parser_->chunked();
    head_.query_malformed = bad_query;
    keep_alive_ = h.keep_alive();
    version_ = h.version();

    Admission adm;
    try {
      adm = srv_.handler.admit(head_);
    } catch (const std::exception&) {
      adm.reject = srv_.handler.refusal(Refusal::kInternal);
    }
    context_ = adm.context;
    if (adm.reject) return refuse(std::move(*adm.reject), has_body());
    limit_ = adm.limit;
    switch (adm.body) {
      case BodyKind::kNone:
        if (has_body()) return refuse(Refusal::kBodyNotAllowed, "request with a body", true);
        return dispatch();
      case BodyKind::kJson:
        if (head_.content_length && *head_.content_length > limit_) return refuse(srv_.handler.too_large(head_, limit_), true);
        return continue_then([self = this->shared_from_this()] { self->read_json(); });
      case BodyKind::kUpload:
        if (!head_.content_length) return refuse(Refusal::kLengthRequired, "", has_body());
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
    body_end_ = Clock::now() + std::chrono::milliseconds(ms);
    piece_deadline();
  }
  void piece_deadline() { lowest(stream_).expires_at(std::min(body_end_, Clock::now() + kPieceIdle)); }

  // "Expect: 100-continue" (curl's large uploads): say go on before reading.
  template <class Next>
  void continue_then(Next next) {
    std::string expect = head_.field("expect");
    for (auto& c : expect) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (expect != "100-continue") return next();
    auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_, version_);
    lowest(stream_).expires_after(std::chrono::milliseconds(srv_.opts.write_timeout_ms));
    bhttp::async_write(stream_, *cont, [self = this->shared_from_this(), cont, next](beast::error_code ec, std::size_t) {
      if (ec) return self->fail(ec);
      next();
    });
  }

  void read_json() {
    json_parser_.emplace(std::move(*head_parser_));
    json_parser_->body_limit(limit_);
    body_deadline(head_.content_length.value_or(limit_));
    bhttp::async_read(stream_, buffer_, *json_parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec == bhttp::error::body_limit) return self->refuse(self->srv_.handler.too_large(self->head_, self->limit_), true);
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
      srv_.log(LogLevel::kWarn, std::string("cannot make an upload file in ") + srv_.opts.upload_dir + ": " + std::strerror(errno));
      return refuse(Refusal::kNoStorage, "", true);
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
    bhttp::async_read(stream_, buffer_, *upload_parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec == bhttp::error::need_buffer) ec = {};
      if (ec == bhttp::error::body_limit) return self->refuse(self->srv_.handler.too_large(self->head_, self->limit_), true);
      if (ec) return self->fail(ec);
      self->store_piece(self->chunk_.size() - self->upload_parser_->get().body().size);
    });
  }

  void store_piece(size_t n) {
    const char* p = chunk_.data();
    size_t left = n;
    while (left > 0) {
      const ssize_t w = ::write(fd_, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        const int err = errno;
        srv_.log(LogLevel::kWarn, std::string("cannot write an upload into ") + srv_.opts.upload_dir + ": " + std::strerror(err));
        return refuse(err == ENOSPC || err == EDQUOT ? Refusal::kDiskFull : Refusal::kStoreFailed, "", true);
      }
      p += w;
      left -= size_t(w);
    }
    sha_->add(chunk_.data(), n);
    upload_bytes_ += n;
    read_upload_piece();
  }

  // Closed here; synced by the handler on its pool (an fsync of GBs must not
  // stall this I/O thread's other connections).
  void finish_upload() {
    if (::close(fd_) != 0) {
      fd_ = -1;
      ::unlink(upload_path_.c_str());
      return refuse(Refusal::kStoreFailed, "", false);
    }
    fd_ = -1;
    request_.upload_path = upload_path_;
    request_.upload_bytes = upload_bytes_;
    request_.upload_sha256 = sha_->hex_digest();
    upload_parser_.reset();
    std::vector<char>().swap(chunk_);
    dispatch();
  }

  // The whole request is here: the Handler answers it, on its own threads or at once.
  void dispatch() {
    request_.head = head_;
    request_.context = context_;
    lowest(stream_).expires_never();  // a held request (long poll) waits as long as the Handler says
    auto self = this->shared_from_this();
    try {
      srv_.handler.handle(std::move(request_), [self](Response r) {
        boost::asio::post(lowest(self->stream_).get_executor(),
                          [self, r = std::move(r)]() mutable { self->respond(std::move(r), false); });
      });
    } catch (const std::exception&) {
      respond(srv_.handler.refusal(Refusal::kInternal), false);
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
  void refuse(Refusal why, std::string fault, bool body_pending) {
    Response r = srv_.handler.refusal(why);
    if (r.fault.empty()) r.fault = std::move(fault);
    refuse(std::move(r), body_pending);
  }
  void refuse(Response r, bool body_pending) {
    drop_upload();
    respond(std::move(r), true, body_pending);
  }

  void respond(Response r, bool close_after, bool drain = false) {
    context_.reset();
    if (!r.fault.empty()) srv_.fault(*this, r.fault);
    const bool keep = keep_alive_ && !close_after;
    const unsigned version = srv_.opts.reply_http11 || !version_ ? 11 : version_;
    auto fill = [&](auto& res) {
      if (!r.reason.empty()) res.reason(r.reason);
      if (!srv_.opts.server_name.empty()) res.set(bhttp::field::server, srv_.opts.server_name);
      res.set(bhttp::field::content_type, r.content_type);
      res.content_length(r.body.size());  // for HEAD too: the size of what GET would send (RFC 9110 §9.3.2)
      res.set(bhttp::field::cache_control, "no-store");
      for (auto& [k, v] : r.headers) res.set(k, v);
      if (!keep)
        res.set(bhttp::field::connection, "close");
      else if (version_ == 10)
        res.set(bhttp::field::connection, "keep-alive");
    };
    srv_.enter(*this, Where::kWriting);
    lowest(stream_).expires_after(std::chrono::milliseconds(srv_.opts.write_timeout_ms));
    const auto status = static_cast<bhttp::status>(r.status);
    if (head_.method == "HEAD") {
      auto res = std::make_shared<bhttp::response<bhttp::empty_body>>(status, version);
      fill(*res);
      write(res, keep, drain);
    } else {
      auto res = std::make_shared<bhttp::response<bhttp::string_body>>(status, version);
      fill(*res);
      res->body() = std::move(r.body);
      write(res, keep, drain);
    }
  }

  template <class Message>
  void write(std::shared_ptr<Message> res, bool keep, bool drain) {
    bhttp::async_write(stream_, *res, [self = this->shared_from_this(), res, keep, drain](beast::error_code ec, std::size_t) {
      if (ec) {
        if (ec == beast::error::timeout && self->srv_.opts.log_client_faults)
          self->srv_.limited(self->srv_.faults, "client faults",
                             "http: response to " + self->peer_text + " not taken within " +
                                 std::to_string(self->srv_.opts.write_timeout_ms) + " ms");
        return self->fail(ec);
      }
      ++self->srv_.n_answered;
      self->upload_bytes_ = 0;
      if (drain || (!keep && self->srv_.opts.drain_every_close)) return self->drain();
      if (!keep) return self->close();
      self->read_head();
    });
  }

  // After a closing answer: send FIN (plain TCP), then read and drop what the
  // client still sends (up to drain_bytes or drain_ms), so that it reads the
  // answer rather than a reset (RFC 9112 §9.6).
  void drain() {
    if constexpr (!kTls) {
      beast::error_code ignored;
      lowest(stream_).socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
    }
    srv_.enter(*this, Where::kWaiting);
    lowest(stream_).expires_after(std::chrono::milliseconds(srv_.opts.drain_ms));
    chunk_.resize(kChunk);
    drain_piece();
  }
  void drain_piece() {
    stream_.async_read_some(boost::asio::buffer(chunk_), [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
      self->drained_ += n;
      if (ec == beast::error::timeout) return self->fail(ec);
      if (ec || self->drained_ > self->srv_.opts.drain_bytes) return self->close();
      self->drain_piece();
    });
  }

  Server::Impl& srv_;
  Stream stream_;
  beast::flat_buffer buffer_;  // at most a whole head and what follows it
  std::optional<bhttp::request_parser<bhttp::empty_body>> head_parser_;
  std::optional<bhttp::request_parser<bhttp::string_body>> json_parser_;
  std::optional<bhttp::request_parser<bhttp::buffer_body>> upload_parser_;
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
  Clock::time_point body_end_;
};

}  // namespace zkfarm::http::core
