// Fuzz target: arbitrary bytes through the HTTP listener's request handling
// (Beast's parser → Router → serialized response), without sockets: the
// Exchange one connection of HttpServer runs (supervisor/http_exchange.hpp).
// Links zkfarm_http only.
//
// Input: the first byte picks /status detail (bit 0) and the size of the
// reads the bytes arrive in (1 to 128: bits 1-7), the rest is the byte stream
// of one connection. Besides the sanitizers' findings, it aborts when a
// promise of the Exchange breaks:
// - each reply is a well-formed head ("HTTP/1.1 NNN ", CRLF CRLF at its end)
//   whose Content-Length is the body's size (or, for HEAD, no body at all);
// - nothing is answered after a closing reply;
// - at most the header limit plus one read is buffered (memory per connection);
// - a fault for the log is one of the fixed phrases, never the client's bytes;
// - no more replies than the bytes could hold requests (14 bytes at least each).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "supervisor/http_exchange.hpp"

namespace {

using zkfarm::http::Content;
using zkfarm::http::Exchange;
using zkfarm::http::Reply;
using zkfarm::http::Router;

constexpr std::size_t kHeaderLimit = 8192;

void check(bool ok) {
  if (!ok) std::abort();
}

Content fake_content() {
  return {.status = [] { return std::string(R"({"state":"running","pid":1,"state_dir":"/s","workers":[{"kind":"gpu","state":"idle"}],"jobs":[]})"); },
          .metrics = [] { return std::string("zkfarm_jobs_accepted_total 1\n"); },
          .healthy = [] { return true; },
          .ready = [] { return false; }};
}

bool known_fault(const std::string& f) {
  return f.empty() || f == "method not allowed" || f == "request with a body" || f == "request header fields too large" ||
         f.rfind("malformed request (", 0) == 0;
}

void check_reply(const Reply& r) {
  const std::string& h = r.head;
  check(h.size() > 16 && h.compare(0, 9, "HTTP/1.1 ") == 0);
  check(h.size() >= 4 && h.compare(h.size() - 4, 4, "\r\n\r\n") == 0);
  check(r.status >= 200 && r.status < 600 && h.compare(9, 3, std::to_string(r.status)) == 0);
  const auto at = h.find("\r\nContent-Length: ");
  check(at != std::string::npos);
  const std::size_t length = std::strtoull(h.c_str() + at + 18, nullptr, 10);
  if (r.body) check(r.body->size() == length);
  check(known_fault(r.fault));
  // Faults with parser details carry Beast's fixed messages only: no CR, LF or NUL.
  check(r.fault.find_first_of(std::string("\r\n\0", 3)) == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool detail = data[0] & 1;
  const std::size_t chunk = 1 + (data[0] >> 1);
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  static Router router_counts(fake_content(), false), router_detail(fake_content(), true);
  Exchange ex(detail ? router_detail : router_counts, kHeaderLimit);
  uint64_t replies = 0;
  bool closed = false;
  for (std::size_t off = 0; off < bytes.size(); off += chunk) {
    const std::size_t n = std::min(chunk, bytes.size() - off);
    auto room = ex.prepare(n);
    std::memcpy(room.data(), bytes.data() + off, n);
    ex.commit(n);
    Reply r;
    while (ex.next(r)) {
      check(!closed);
      check_reply(r);
      closed = r.close;
      ++replies;
    }
    check(closed == ex.closed());
    if (closed) break;  // the server closes the connection here: nothing more is read
    check(ex.buffered() <= kHeaderLimit + chunk);
  }
  check(replies == ex.answered());
  check(replies <= bytes.size() / 14 + 1);
  return 0;
}
