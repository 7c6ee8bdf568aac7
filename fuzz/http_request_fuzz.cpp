// Fuzz target: arbitrary bytes through the shared HTTP server (http/server.hpp)
// in zkfarmd's configuration (8 KiB heads, no bodies, GET/HEAD, a drain after
// every closing reply), over one loopback connection per input: the server
// reads its sockets itself (Beast), so the bytes go in through a socket.
// Links zkfarm_http only; the Handler here answers as zkfarmd's Router does.
//
// Input: bit 0 of the first byte is unused (it picked /status detail when the
// target drove the old socket-less Exchange; corpora stay valid), bits 1-7
// the size of the writes the bytes go out in (1 to 128), the rest is the byte
// stream of one connection. Besides the sanitizers' findings, it aborts when
// a promise breaks:
// - each reply is a well-formed head ("HTTP/1.1 NNN ", CRLF CRLF at its end)
//   whose Content-Length is the body's size (for HEAD, no body at all);
// - nothing is answered after a closing reply;
// - a fault for the log is one of the fixed phrases, never the client's bytes;
// - no more replies than the bytes could hold requests (14 bytes at least each).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "http/server.hpp"

namespace {

namespace core = zkfarm::http::core;

void check(bool ok) {
  if (!ok) std::abort();
}

class RouterLike : public core::Handler {
 public:
  core::Admission admit(const core::RequestHead&) override { return {}; }
  void handle(core::Request req, std::function<void(core::Response)> done) override {
    core::Response r;
    r.content_type = "text/plain; charset=utf-8";
    if (req.head.method != "GET" && req.head.method != "HEAD") {
      r.status = 405;
      r.body = "only GET and HEAD\n";
      r.headers = {{"Allow", "GET, HEAD"}};
      r.fault = "method not allowed";
    } else if (req.head.path == "/healthz") {
      r.body = "ok\n";
    } else {
      r.status = 404;
      r.body = "not found\n";
    }
    done(std::move(r));
  }
  core::Response too_large(const core::RequestHead&, uint64_t) override { return refusal(core::Refusal::kBodyNotAllowed); }
  core::Response refusal(core::Refusal why) override {
    core::Response r;
    r.content_type = "text/plain; charset=utf-8";
    r.status = why == core::Refusal::kMalformed ? 400 : why == core::Refusal::kHeadTooLarge ? 431 : why == core::Refusal::kBodyNotAllowed ? 413 : 500;
    r.body = "refused\n";
    return r;
  }
};

std::mutex log_m;
std::vector<std::string> faults;

bool known_fault(const std::string& f) {
  return f == "method not allowed" || f == "request with a body" || f == "request header fields too large" ||
         (f.rfind("malformed request (", 0) == 0 && f.find_first_of(std::string("\r\n\0", 3)) == std::string::npos);
}

core::Server& server() {
  static RouterLike handler;
  static core::Server* s = [] {
    core::ServerOptions o;
    o.address = "127.0.0.1:0";
    o.io_threads = 1;
    o.at_cap = core::AtCap::kDropLongestWaiter;
    o.max_per_address = 0;
    o.header_limit = 8192;
    o.header_timeout_ms = o.write_timeout_ms = o.drain_ms = 2000;
    o.drain_bytes = 64 * 1024;
    o.drain_every_close = true;
    o.reply_http11 = true;
    o.log_client_faults = true;
    o.log_lines_per_second = 1u << 30;  // every fault line, to check each
    o.log = [](zkfarm::http::LogLevel, std::string_view line) {
      const std::string_view tag = "http: bad request from ";
      if (line.rfind(tag, 0) != 0) return;
      line.remove_prefix(tag.size());
      std::lock_guard<std::mutex> l(log_m);
      faults.emplace_back(line.substr(line.find(": ") + 2));
    };
    auto* srv = new core::Server(o, handler);
    srv->start();
    return srv;
  }();
  return *s;
}

// Everything the server sends until it closes (or 2 s pass).
std::string converse(std::string_view bytes, std::size_t chunk) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server().port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  for (std::size_t off = 0; off < bytes.size(); off += chunk) {
    const std::size_t n = std::min(chunk, bytes.size() - off);
    if (::send(fd, bytes.data() + off, n, MSG_NOSIGNAL) != ssize_t(n)) break;  // the server closed after a refusal
  }
  ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[16384];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 2000) > 0) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = 1 + (data[0] >> 1);
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string out = converse(bytes, chunk);
  uint64_t replies = 0;
  bool closed = false;
  while (!out.empty()) {
    check(!closed);  // nothing after a closing reply
    const auto end = out.find("\r\n\r\n");
    check(end != std::string::npos);
    const std::string h = out.substr(0, end + 4);
    out.erase(0, end + 4);
    check(h.size() > 16 && h.compare(0, 9, "HTTP/1.1 ") == 0);
    const unsigned status = unsigned(std::strtoul(h.c_str() + 9, nullptr, 10));
    check(status >= 200 && status < 600);
    const auto at = h.find("\r\nContent-Length: ");
    check(at != std::string::npos);
    const std::size_t length = std::strtoull(h.c_str() + at + 18, nullptr, 10);
    // A HEAD answer has no body: the next bytes are the next head (or nothing).
    if (out.size() >= length && (length == 0 || out.compare(0, 9, "HTTP/1.1 ") != 0)) out.erase(0, length);
    closed = h.find("\r\nConnection: close\r\n") != std::string::npos;
    ++replies;
  }
  check(replies <= bytes.size() / 14 + 1);
  std::lock_guard<std::mutex> l(log_m);
  for (const auto& f : faults) check(known_fault(f));
  faults.clear();
  return 0;
}
