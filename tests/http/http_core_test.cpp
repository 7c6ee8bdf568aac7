// The shared HTTP server (http/server.hpp) in zkfarm-api's configuration
// (refuse at the cap, a cap per address, bodies by kind): the limits that
// zkfarmd's configuration does not reach. zkfarmd's: tests/supervisor/status/http_server_test.cpp.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <regex>
#include <string>
#include <thread>

#include "http/server.hpp"
#include "http_test_client.hpp"

namespace zkfarm::http::core {
namespace {

using namespace std::chrono_literals;

using namespace test_http;
using Reply = HttpReply;

Reply ask(uint16_t port, const std::string& request, bool head_request = false) {
  int fd = connect_to(port);
  if (fd < 0) return {};
  send_all(fd, request);
  std::string carry;
  Reply r = read_reply(fd, carry, head_request);
  ::close(fd);
  return r;
}

// /none takes no body, /json a JSON body of at most 10 bytes, /upload an
// upload of at most 100; every answer says what the handler saw.
class Echo : public Handler {
 public:
  std::mutex m;
  std::vector<Request> seen;

  Admission admit(const RequestHead& head) override {
    Admission a;
    if (head.path == "/json") a.body = BodyKind::kJson, a.limit = 10;
    if (head.path == "/upload") a.body = BodyKind::kUpload, a.limit = 100;
    if (head.path == "/reject") a.reject = Response{403, "no\n", "text/plain", {}, {}, "Nope"};
    return a;
  }
  void handle(Request request, std::function<void(Response)> done) override {
    Response r;
    r.content_type = "text/plain";
    r.body = request.head.path + " " + request.body + " " + std::to_string(request.upload_bytes) + " " +
             request.upload_sha256 + (request.head.query_malformed ? " bad-query" : "");
    {
      std::lock_guard<std::mutex> l(m);
      seen.push_back(std::move(request));
    }
    done(std::move(r));
  }
  Response too_large(const RequestHead&, uint64_t limit) override {
    return Response{413, "over " + std::to_string(limit) + "\n", "text/plain", {}};
  }
  Response refusal(Refusal why) override {
    return Response{why == Refusal::kMalformed        ? 400u
                    : why == Refusal::kHeadTooLarge   ? 431u
                    : why == Refusal::kBodyNotAllowed ? 413u
                    : why == Refusal::kLengthRequired ? 411u
                                                      : 500u,
                    "refused\n", "text/plain", {}};
  }
};

ServerOptions api_like() {
  ServerOptions o;
  o.address = "127.0.0.1:0";
  o.io_threads = 2;
  o.max_connections = 8;
  o.max_per_address = 8;
  o.header_limit = 1024;
  o.header_timeout_ms = 60000;
  o.server_name = "zkfarm-test";
  o.upload_dir = std::filesystem::temp_directory_path().string();
  return o;
}

TEST(HttpCore, AtTheCapTheNewcomerIsRefusedAndTheOthersKept) {
  Echo echo;
  ServerOptions o = api_like();
  o.max_connections = 2;
  Server server(o, echo);
  server.start();
  int a = connect_to(server.port()), b = connect_to(server.port());
  ASSERT_TRUE(eventually([&] { return server.stats().open == 2; }));
  int c = connect_to(server.port());
  EXPECT_TRUE(closed_by_peer(c)) << "past the cap";
  EXPECT_EQ(server.stats().refused_at_cap, 1u);
  EXPECT_EQ(server.stats().evicted, 0u);
  for (int fd : {a, b}) {
    send_all(fd, "GET /x HTTP/1.1\r\n\r\n");
    std::string carry;
    EXPECT_EQ(read_reply(fd, carry).status, 200) << "the open ones are kept";
  }
  for (int fd : {a, b, c}) ::close(fd);
  EXPECT_TRUE(eventually([&] { return server.stats().open == 0; }));
  EXPECT_EQ(ask(server.port(), "GET /x HTTP/1.1\r\n\r\n").status, 200) << "room again";
}

TEST(HttpCore, OneAddressHasACapOfItsOwn) {
  Echo echo;
  ServerOptions o = api_like();
  o.max_per_address = 1;
  Server server(o, echo);
  server.start();
  int a = connect_to(server.port());
  ASSERT_TRUE(eventually([&] { return server.stats().open == 1; }));
  int b = connect_to(server.port());
  EXPECT_TRUE(closed_by_peer(b));
  EXPECT_EQ(server.stats().refused_at_cap, 1u);
  ::close(a);
  ::close(b);
}

TEST(HttpCore, BodiesAreReadByKindWithinTheirLimits) {
  Echo echo;
  Server server(api_like(), echo);
  server.start();
  const uint16_t port = server.port();
  Reply r = ask(port, "POST /json HTTP/1.1\r\nContent-Length: 4\r\n\r\n{\"a\"");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "/json {\"a\" 0 ");
  r = ask(port, "POST /json HTTP/1.1\r\nContent-Length: 20\r\n\r\n" + std::string(20, 'x'));
  EXPECT_EQ(r.status, 413) << "declared over the limit";
  EXPECT_EQ(r.body, "over 10\n");
  r = ask(port, "POST /json HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n" + std::string(20, 'x') + "\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, 413) << "found over the limit while read";
  r = ask(port, "POST /none HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.head.find("Connection: close"), std::string::npos);
  r = ask(port, "POST /upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, 411);
  r = ask(port, "POST /upload HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "/upload  3 ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  {
    std::lock_guard<std::mutex> l(echo.m);
    ASSERT_FALSE(echo.seen.empty());
    const std::string path = echo.seen.back().upload_path;
    EXPECT_TRUE(std::filesystem::exists(path));
    std::filesystem::remove(path);
  }
  r = ask(port, "POST /reject HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(r.status, 403) << "the Handler's own refusal";
  EXPECT_EQ(r.head.rfind("HTTP/1.1 403 Nope\r\n", 0), 0u) << "the Handler's reason phrase";
  EXPECT_NE(r.head.find("Connection: close"), std::string::npos);
}

TEST(HttpCore, TheHeadLimitIsExactAndHeadGetsNoBody) {
  Echo echo;
  Server server(api_like(), echo);
  server.start();
  auto head_of = [](size_t total) {
    std::string start = "GET /x HTTP/1.1\r\nX-Pad: ";
    return start + std::string(total - start.size() - 4, 'a') + "\r\n\r\n";
  };
  EXPECT_EQ(ask(server.port(), head_of(1024)).status, 200);
  EXPECT_EQ(ask(server.port(), head_of(1025)).status, 431);
  int fd = connect_to(server.port());
  send_all(fd, "HEAD /x HTTP/1.1\r\n\r\nGET /y HTTP/1.1\r\n\r\n");
  std::string carry;
  Reply h = read_reply(fd, carry, true);
  EXPECT_EQ(h.status, 200);
  EXPECT_NE(h.head.find("Content-Length: 6\r\n"), std::string::npos) << h.head;
  Reply g = read_reply(fd, carry);
  EXPECT_EQ(g.status, 200) << "the next answer follows the head at once";
  EXPECT_EQ(g.body, "/y  0 ");
  ::close(fd);
}

TEST(HttpCore, VersionServerFieldAndQueryAsConfigured) {
  Echo echo;
  Server server(api_like(), echo);
  server.start();
  Reply r = ask(server.port(), "GET /x?a=%zz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_EQ(r.head.rfind("HTTP/1.0 200", 0), 0u) << r.head;
  EXPECT_NE(r.head.find("Server: zkfarm-test\r\n"), std::string::npos);
  EXPECT_NE(r.head.find("Connection: keep-alive\r\n"), std::string::npos);
  EXPECT_NE(r.head.find("Cache-Control: no-store\r\n"), std::string::npos);
  EXPECT_EQ(r.body, "/x  0  bad-query") << "a bad escape is the Handler's to refuse";
  ServerOptions o = api_like();
  o.reply_http11 = true;
  o.server_name.clear();
  Server eleven(o, echo);
  eleven.start();
  r = ask(eleven.port(), "GET /x HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.head.rfind("HTTP/1.1 200", 0), 0u) << r.head;
  EXPECT_NE(r.head.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(r.head.find("Server:"), std::string::npos);
}

TEST(HttpCore, HeadsMustArriveBeforeTheDeadline) {
  Echo echo;
  ServerOptions o = api_like();
  o.header_timeout_ms = 200;
  Server server(o, echo);
  server.start();
  const auto t0 = std::chrono::steady_clock::now();
  int fd = connect_to(server.port());
  send_all(fd, "GET /x HTTP/1.1\r\nX-Slow: ");
  EXPECT_TRUE(closed_by_peer(fd));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 190ms);
  EXPECT_TRUE(eventually([&] { return server.stats().timed_out == 1; }));
  ::close(fd);
}

TEST(HttpCore, MalformedAddressesAreNamedAsConfigured) {
  Echo echo;
  ServerOptions o = api_like();
  o.address = "nonsense";
  try {
    Server s(o, echo);
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "--listen must be HOST:PORT, got 'nonsense'");
  }
}

}  // namespace
}  // namespace zkfarm::http::core
