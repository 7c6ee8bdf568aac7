// zkfarmd's HTTP listener on its own: the request handling (through
// Exchange, a test double that drives a real server over one connection;
// Router, public_status), the log limiter, and the server on an ephemeral
// port of 127.0.0.1 (cap and eviction, deadlines, pipelining, the address in
// use, descriptor exhaustion in a child process). The shared server's own
// limits in zkfarm-api's configuration: tests/http/http_core_test.cpp.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <dirent.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/status/http_server.hpp"
#include "supervisor/log_limiter.hpp"
#include "supervisor/status/public_status.hpp"
#include "http_test_client.hpp"

namespace zkfarm::http {
namespace {

using namespace std::chrono_literals;
using supervisor::LogLimiter;

// A status object shaped like Supervisor::status() (docs/protocol.md).
const char* kStatus = R"({
  "version": "0.1.0", "pid": 4242, "state_dir": "/var/lib/zkfarm", "state": "running", "intake": "open",
  "in_flight": 2, "rolling": null,
  "workers": [
    {"id": "synth-0", "kind": "synth", "pid": 4250, "state": "busy", "binary": "/opt/zkfarm/bin/zkfarm-synth"},
    {"id": "synth-1", "kind": "synth", "pid": 4251, "state": "idle", "binary": "/opt/zkfarm/bin/zkfarm-synth"},
    {"id": "synth-2", "kind": "synth", "pid": 4252, "state": "busy", "binary": "/opt/zkfarm/bin/zkfarm-synth"},
    {"id": "gpu-0", "kind": "gpu", "pid": 4260, "state": "releasing", "binary": "/opt/zkfarm/bin/zkfarm-gpu",
     "release": "waiting for /dev/nvidia0"}],
  "queue": {"synth": 12, "prove": 1},
  "arena": {"name": "zkfarm-abc123", "bytes": 1073741824, "used": 4915200, "free": 1068826624, "slots": 2},
  "jobs": [
    {"id": 1, "state": "done", "zkey": "/home/alice/secret.zkey", "out": "/home/alice/proofs"},
    {"id": 2, "state": "running", "zkey": "/home/bob/c.zkey", "out": "/home/bob/out"},
    {"id": 3, "state": "done", "zkey": "/x.zkey", "out": "/y"},
    {"id": 4, "state": "failed", "zkey": "/x.zkey", "out": "/y", "error": "/x.wtns: nVars mismatch"}]
})";

// Content whose answers a test can change while the server runs.
struct Fake {
  std::atomic<bool> healthy{true}, ready{false};
  std::string status = kStatus;
  Content content() {
    return {.status = [this] { return status; },
            .metrics = [] { return std::string("zkfarm_jobs_accepted_total 3\n"); },
            .healthy = [this] { return healthy.load(); },
            .ready = [this] { return ready.load(); }};
  }
};

using namespace test_http;
ServerOptions local(unsigned cap = 64, unsigned timeout_ms = 60000);

// One answer as a client reads it off the connection.
struct Reply {
  unsigned status = 0;
  std::string head;                         // status line and header fields, through the blank line
  std::shared_ptr<const std::string> body;  // null when none came (HEAD, or an empty body)
  bool close = false;                       // "Connection: close": nothing more will be answered
  std::string fault;                        // what the server logged about the client's fault, or ""
};

// The socket-less Exchange of the hand-written server is gone: the shared
// Beast server reads its sockets itself. This double keeps its interface for
// the tests below: a zkfarmd server serving `content` and one connection to
// it; bytes fed go out, next() reads the next answer (or finds none within a
// short wait when no complete request is pending), and the fault comes from
// the server's log line about it.
class Exchange {
 public:
  explicit Exchange(Content content, std::size_t header_limit = 8192) {
    ServerOptions o = local(64, 60000);
    o.header_limit = header_limit;
    o.log = [this](LogLevel, std::string_view line) {
      std::lock_guard<std::mutex> l(m_);
      const std::string_view tag = "http: bad request from ";
      if (line.rfind(tag, 0) != 0) return;
      line.remove_prefix(tag.size());
      faults_.emplace_back(line.substr(line.find(": ") + 2));
    };
    header_limit_ = header_limit;
    server_ = std::make_unique<HttpServer>(o);
    server_->start(std::move(content));
    fd_ = connect_to(server_->port());
  }
  ~Exchange() {
    if (fd_ >= 0) ::close(fd_);
  }

  void feed(std::string_view bytes) {
    fed_.append(bytes);
    send_all(fd_, bytes);
  }

  bool next(Reply& out) {
    // Requests fed in full and not answered yet: their answer must come.
    while (parsed_ < fed_.size()) {
      const auto end = fed_.find("\r\n\r\n", parsed_);
      if (end == std::string::npos) break;
      methods_.push_back(fed_.substr(parsed_, fed_.find(' ', parsed_) - parsed_));
      parsed_ = end + 4;
    }
    const bool due = !closed_ && (answered_ < methods_.size() || fed_.size() - parsed_ > header_limit_);
    std::size_t end;
    for (auto until = std::chrono::steady_clock::now() + (due ? 10s : 150ms);
         (end = in_.find("\r\n\r\n")) == std::string::npos;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) <= 0) return false;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      in_.append(buf, size_t(n));
    }
    Reply r;
    r.head = in_.substr(0, end + 4);
    in_.erase(0, end + 4);
    r.status = unsigned(std::stoul(r.head.substr(9, 3)));
    const bool head_request = answered_ < methods_.size() && methods_[answered_] == "HEAD";
    std::smatch m;
    std::size_t length = 0;
    if (!head_request && std::regex_search(r.head, m, std::regex("Content-Length: (\\d+)"))) length = std::stoul(m[1]);
    while (in_.size() < length) {
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      in_.append(buf, size_t(n));
    }
    if (length) r.body = std::make_shared<const std::string>(in_.substr(0, length));
    in_.erase(0, std::min(length, in_.size()));
    r.close = r.head.find("Connection: close\r\n") != std::string::npos;
    {
      // The server logs a fault before it writes the answer.
      std::lock_guard<std::mutex> l(m_);
      if (r.status >= 400 && r.status != 404 && r.status < 500 && !faults_.empty()) {
        r.fault = faults_.front();
        faults_.erase(faults_.begin());
      }
    }
    closed_ = closed_ || r.close;
    ++answered_;
    out = std::move(r);
    return true;
  }

  // Bytes fed that belong to no complete request yet.
  std::size_t buffered() const { return fed_.size() - parsed_; }
  // True once a closing reply came.
  bool closed() const { return closed_; }
  // Answers read so far.
  uint64_t answered() const { return answered_; }

 private:
  std::unique_ptr<HttpServer> server_;
  int fd_ = -1;
  std::size_t header_limit_ = 8192;
  std::string fed_, in_;
  std::size_t parsed_ = 0;
  std::vector<std::string> methods_;
  uint64_t answered_ = 0;
  bool closed_ = false;
  std::mutex m_;
  std::vector<std::string> faults_;
};

// Feeds `bytes` to `ex` at once.
void feed(Exchange& ex, std::string_view bytes) { ex.feed(bytes); }

std::string body_of(const Reply& r) { return r.body ? *r.body : std::string(); }

// ---- Exchange: bytes in, replies out ----

TEST(HttpExchange, PipelinedRequestsGetOneReplyEachInOrder) {
  Fake f;
  Exchange ex(f.content());
  feed(ex, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /readyz HTTP/1.1\r\nHost: a\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n");
  Reply r;
  ASSERT_TRUE(ex.next(r));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(body_of(r), "ok\n");
  EXPECT_FALSE(r.close);
  ASSERT_TRUE(ex.next(r));
  EXPECT_EQ(r.status, 503u);  // ready is false
  EXPECT_EQ(body_of(r), "not ready\n");
  ASSERT_TRUE(ex.next(r));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(body_of(r), "zkfarm_jobs_accepted_total 3\n");
  EXPECT_NE(r.head.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_FALSE(ex.next(r));
  EXPECT_EQ(ex.answered(), 3u);
  EXPECT_EQ(ex.buffered(), 0u);
}

TEST(HttpExchange, RequestArrivingByteByByteIsAnsweredOnceComplete) {
  Fake f;
  Exchange ex(f.content());
  const std::string req = "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Long: abcdefghij\r\n\r\n";
  Reply r;
  for (size_t i = 0; i + 1 < req.size(); ++i) {
    feed(ex, req.substr(i, 1));
    ASSERT_FALSE(ex.next(r)) << "answered after " << i + 1 << " of " << req.size() << " bytes";
  }
  feed(ex, req.substr(req.size() - 1));
  ASSERT_TRUE(ex.next(r));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_NE(r.head.find("Content-Length: 3\r\n"), std::string::npos);
}

TEST(HttpExchange, RequestBodiesAre413AndClose) {
  Fake f;
  for (const char* req : {"GET /status HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
                          "GET /status HTTP/1.1\r\nContent-Length: 5\r\n\r\n",  // body announced, not sent
                          "POST /status HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"}) {
    Exchange ex(f.content());
    feed(ex, req);
    Reply r;
    ASSERT_TRUE(ex.next(r)) << req;
    EXPECT_EQ(r.status, 413u) << req;
    EXPECT_TRUE(r.close);
    EXPECT_NE(r.head.find("Connection: close\r\n"), std::string::npos);
    EXPECT_EQ(r.fault, "request with a body");
    EXPECT_TRUE(ex.closed());
    feed(ex, "GET /healthz HTTP/1.1\r\n\r\n");
    EXPECT_FALSE(ex.next(r)) << "nothing is answered after a closing reply";
  }
}

TEST(HttpExchange, OtherMethodsAre405WithAllowAndKeepTheConnection) {
  Fake f;
  Exchange ex(f.content());
  feed(ex, "DELETE /status HTTP/1.1\r\n\r\nPOST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n");
  Reply r;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(ex.next(r));
    EXPECT_EQ(r.status, 405u);
    EXPECT_NE(r.head.find("Allow: GET, HEAD\r\n"), std::string::npos);
    EXPECT_FALSE(r.close);
    EXPECT_EQ(r.fault, "method not allowed");
  }
  ASSERT_TRUE(ex.next(r));
  EXPECT_EQ(r.status, 200u);
}

TEST(HttpExchange, HeadersBeyondTheLimitAre431) {
  Fake f;
  auto with_header_of = [](size_t total) {
    std::string start = "GET /healthz HTTP/1.1\r\nX-Pad: ";
    std::string req = start + std::string(total - start.size() - 4, 'a') + "\r\n\r\n";
    EXPECT_EQ(req.size(), total);
    return req;
  };
  {
    Exchange ex(f.content(), 8192);
    feed(ex, with_header_of(8000));
    Reply r;
    ASSERT_TRUE(ex.next(r));
    EXPECT_EQ(r.status, 200u);
  }
  for (size_t total : {8193u, 9000u, 20000u}) {
    Exchange ex(f.content(), 8192);
    feed(ex, with_header_of(total));
    Reply r;
    ASSERT_TRUE(ex.next(r)) << total;
    EXPECT_EQ(r.status, 431u) << total;
    EXPECT_TRUE(r.close);
  }
  {
    // An endless header line, never terminated: refused once past the limit,
    // whatever the read sizes.
    Exchange ex(f.content(), 8192);
    feed(ex, "GET /healthz HTTP/1.1\r\nX-Pad: ");
    Reply r;
    bool answered = false;
    for (int i = 0; i < 10 && !answered; ++i) {
      feed(ex, std::string(1000, 'b'));
      answered = ex.next(r);
    }
    ASSERT_TRUE(answered);
    EXPECT_EQ(r.status, 431u);
    // A long request line too.
    Exchange ex2(f.content(), 8192);
    feed(ex2, "GET /" + std::string(9000, 'x'));
    ASSERT_TRUE(ex2.next(r));
    EXPECT_EQ(r.status, 431u);
  }
}

TEST(HttpExchange, GarbageIs400AndTheFaultNeverEchoesTheBytes) {
  Fake f;
  for (std::string req : {std::string("\x01\x02secret-token\r\n\r\n", 18), std::string("GET /status HTTP/9.Z\r\n\r\n"),
                          std::string("GET /status HTTP/1.1\r\nBad Header secret-token\r\n\r\n"),
                          std::string("G\x7f" "T / HTTP/1.1\r\n\r\n")}) {
    Exchange ex(f.content());
    feed(ex, req);
    Reply r;
    ASSERT_TRUE(ex.next(r)) << req;
    EXPECT_EQ(r.status, 400u) << req;
    EXPECT_TRUE(r.close);
    EXPECT_FALSE(r.fault.empty());
    EXPECT_EQ(r.fault.find("secret"), std::string::npos) << r.fault;
    EXPECT_EQ(r.head.find("secret"), std::string::npos);
  }
}

TEST(HttpExchange, HeadGivesTheLengthWithoutTheBody) {
  Fake f;
  Exchange ex(f.content());
  feed(ex, "HEAD /healthz HTTP/1.1\r\n\r\nHEAD /nowhere HTTP/1.1\r\n\r\n");
  Reply r;
  ASSERT_TRUE(ex.next(r));
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.head.find("Content-Length: 3\r\n"), std::string::npos);
  EXPECT_EQ(r.body, nullptr);
  ASSERT_TRUE(ex.next(r));
  EXPECT_EQ(r.status, 404u);
  EXPECT_TRUE(r.fault.empty()) << "a 404 is not logged";
  EXPECT_EQ(r.body, nullptr);
}

TEST(HttpExchange, Http10ClosesUnlessAskedToKeepAlive) {
  Fake f;
  {
    Exchange ex(f.content());
    feed(ex, "GET /healthz HTTP/1.0\r\n\r\n");
    Reply r;
    ASSERT_TRUE(ex.next(r));
    EXPECT_TRUE(r.close);
  }
  {
    Exchange ex(f.content());
    feed(ex, "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    Reply r;
    ASSERT_TRUE(ex.next(r));
    EXPECT_FALSE(r.close);
    EXPECT_NE(r.head.find("Connection: keep-alive\r\n"), std::string::npos);
  }
  {
    Exchange ex(f.content());
    feed(ex, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n");
    Reply r;
    ASSERT_TRUE(ex.next(r));
    EXPECT_TRUE(r.close);
    EXPECT_FALSE(ex.next(r));
  }
}

// ---- /status: counts only unless detail is on ----

TEST(PublicStatus, CountsOnlyNoPathsPidsOrNames) {
  auto out = public_status(kStatus);
  ASSERT_TRUE(out);
  auto j = nlohmann::json::parse(*out);
  std::set<std::string> keys;
  for (auto& [k, v] : j.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"state", "intake", "in_flight", "queue", "workers", "arena", "jobs"}));
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["intake"], "open");
  EXPECT_EQ(j["in_flight"], 2);
  EXPECT_EQ(j["queue"], (nlohmann::json{{"synth", 12}, {"prove", 1}}));
  EXPECT_EQ(j["workers"], (nlohmann::json{{"synth", {{"busy", 2}, {"idle", 1}}}, {"gpu", {{"releasing", 1}}}}));
  EXPECT_EQ(j["arena"], (nlohmann::json{{"bytes", 1073741824}, {"used", 4915200}, {"free", 1068826624}, {"slots", 2}}));
  EXPECT_EQ(j["jobs"], (nlohmann::json{{"done", 2}, {"running", 1}, {"failed", 1}}));
  for (const char* secret : {"/", "pid", "4242", "4250", "zkfarm-abc", "alice", "nVars", "synth-0", "version"})
    EXPECT_EQ(out->find(secret), std::string::npos) << secret << " in " << *out;
}

TEST(PublicStatus, JobCountsCoverTheJobsTheListOmits) {
  auto j = nlohmann::json::parse(kStatus);
  j["job_counts"] = {{"done", 70}, {"running", 1}, {"failed", 1}, {"cancelled", 3}};
  j["jobs_omitted"] = 70;
  auto out = public_status(j.dump());
  ASSERT_TRUE(out);
  EXPECT_EQ(nlohmann::json::parse(*out)["jobs"],
            (nlohmann::json{{"done", 70}, {"running", 1}, {"failed", 1}, {"cancelled", 3}}));
}

TEST(PublicStatus, OddInputIsRefusedOrReducedNeverCopied) {
  EXPECT_FALSE(public_status(""));
  EXPECT_FALSE(public_status("not json"));
  EXPECT_FALSE(public_status("[1, 2]"));
  auto out = public_status(R"({"state": "/etc/passwd", "workers": [{"kind": "Synth/../x", "state": 3}, 7],
                               "jobs": {"not": "a list"}, "in_flight": -1, "queue": "x"})");
  ASSERT_TRUE(out);
  auto j = nlohmann::json::parse(*out);
  EXPECT_EQ(j["state"], "other");
  EXPECT_EQ(j["workers"], (nlohmann::json{{"other", {{"other", 1}}}}));
  EXPECT_FALSE(j.contains("jobs"));
  EXPECT_FALSE(j.contains("in_flight"));
  EXPECT_EQ(j["queue"], nlohmann::json::object());
}

TEST(HttpRouter, StatusDetailServesTheSnapshotItselfAndNothingBeforeTheFirstOne) {
  Fake f;
  Router full(f.content(), true), counts(f.content(), false);
  Request req{"GET", "/status?pretty=1", 11, true};
  Response r = full.respond(req);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(*r.body, kStatus);
  EXPECT_EQ(r.content_type, "application/json");
  r = counts.respond(req);
  EXPECT_EQ(*r.body, *public_status(kStatus));
  f.status = "";  // not rendered yet
  EXPECT_EQ(full.respond(req).status, 503u);
  EXPECT_EQ(counts.respond(req).status, 503u);
  Content throwing;
  throwing.status = []() -> std::string { throw std::runtime_error("boom"); };
  Router r3(throwing, false);
  EXPECT_EQ(r3.respond(req).status, 500u);
  EXPECT_EQ(r3.respond({"GET", "/healthz", 11, true}).status, 503u) << "a missing callback answers 503";
}

// ---- LogLimiter ----

TEST(LogLimiter, AFewLinesPerWindowThenASummaryOfTheRest) {
  LogLimiter lim(3, 1s);
  const auto t0 = LogLimiter::Clock::time_point{} + 100s;
  int logged = 0;
  for (int i = 0; i < 10; ++i) {
    auto v = lim.admit(t0 + std::chrono::milliseconds(i));
    logged += v.log;
    EXPECT_EQ(v.suppressed, 0u);
  }
  EXPECT_EQ(logged, 3);
  EXPECT_EQ(lim.flush_due(), t0 + 1s);
  EXPECT_EQ(lim.flush(t0 + 999ms), 0u) << "not before the window closes";
  EXPECT_EQ(lim.flush(t0 + 1s), 7u);
  EXPECT_EQ(lim.flush(t0 + 2s), 0u) << "reported once";
  EXPECT_FALSE(lim.flush_due());
  // Without a flush, the next window's first event carries the count.
  for (int i = 0; i < 5; ++i) lim.admit(t0 + 3s);
  auto v = lim.admit(t0 + 4s + 1ms);
  EXPECT_TRUE(v.log);
  EXPECT_EQ(v.suppressed, 2u);
  EXPECT_EQ(lim.suppressed_total(), 9u);
}

// ---- The server on 127.0.0.1, an ephemeral port ----

HttpReply get(uint16_t port, const std::string& path) {
  int fd = connect_to(port);
  if (fd < 0) return {};
  send_all(fd, "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string carry;
  HttpReply r = read_reply(fd, carry);
  ::close(fd);
  return r;
}


ServerOptions local(unsigned cap, unsigned timeout_ms) {
  ServerOptions o;
  o.address = "127.0.0.1:0";
  o.max_connections = cap;
  o.request_timeout_ms = timeout_ms;
  return o;
}

TEST(HttpServer, AnswersPipelinedRequestsInOrderOverTcp) {
  Fake f;
  f.ready = true;
  HttpServer server(local());
  server.start(f.content());
  int fd = connect_to(server.port());
  ASSERT_GE(fd, 0);
  send_all(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\nGET /readyz HTTP/1.1\r\nHost: t\r\n\r\nHEAD /status HTTP/1.1\r\n\r\n");
  std::string carry;
  HttpReply a = read_reply(fd, carry), b = read_reply(fd, carry), c = read_reply(fd, carry, true);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "ok\n");
  EXPECT_EQ(b.status, 200);
  EXPECT_EQ(b.body, "ready\n");
  EXPECT_EQ(c.status, 200);
  EXPECT_NE(c.head.find("Content-Length: " + std::to_string(public_status(kStatus)->size())), std::string::npos);
  EXPECT_TRUE(carry.empty());
  ::close(fd);
  EXPECT_TRUE(eventually([&] { return server.stats().answered == 3; }));
}

TEST(HttpServer, HeadsLongerThanOneReadAreAnsweredAndPastTheLimitRefused) {
  Fake f;
  HttpServer server(local());
  server.start(f.content());
  for (auto [pad, status] : {std::pair{6000, 200}, std::pair{9000, 431}}) {
    int fd = connect_to(server.port());
    ASSERT_GE(fd, 0);
    send_all(fd, "GET /healthz HTTP/1.1\r\nX-Pad: " + std::string(size_t(pad), 'p') + "\r\n\r\n");
    std::string carry;
    EXPECT_EQ(read_reply(fd, carry).status, status) << pad;
    ::close(fd);
  }
}

TEST(HttpServer, AfterARefusalTheServerDrainsInsteadOfResetting) {
  Fake f;
  HttpServer server(local());
  server.start(f.content());
  int fd = connect_to(server.port());
  ASSERT_GE(fd, 0);
  // The server answers 413 after the head, with the body unread in its
  // buffer. Closing then would reset the connection (and, on some clients'
  // systems, drop the reply); it sends FIN and reads and drops what comes
  // until the client is done: the client may go on sending meanwhile.
  ASSERT_TRUE(send_all(fd, "GET /status HTTP/1.1\r\nContent-Length: 40000\r\n\r\n" + std::string(40000, 'b')));
  std::string carry;
  HttpReply r = read_reply(fd, carry);
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.head.find("Connection: close"), std::string::npos);
  std::this_thread::sleep_for(50ms);  // a reset, had there been one, has arrived by now
  EXPECT_TRUE(send_all(fd, std::string(1000, 'b'))) << "reset: " << std::strerror(errno);
  ::shutdown(fd, SHUT_WR);
  char c;
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0);
  ::close(fd);
  EXPECT_TRUE(eventually([&] { return server.stats().open == 0; }));
}

TEST(HttpServer, AtTheCapTheLongestWaiterIsDroppedAndTheNewcomerServed) {
  Fake f;
  HttpServer server(local(4));
  server.start(f.content());
  // Four slowloris connections, accepted in order, each with half a request.
  std::vector<int> slow;
  for (int i = 0; i < 4; ++i) {
    int fd = connect_to(server.port());
    ASSERT_GE(fd, 0);
    send_all(fd, "GET /healthz HTTP/1.1\r\n");
    ASSERT_TRUE(eventually([&] { return server.stats().open == uint64_t(i + 1); }));
    slow.push_back(fd);
  }
  HttpReply probe = get(server.port(), "/healthz");
  EXPECT_EQ(probe.status, 200);
  EXPECT_EQ(probe.body, "ok\n");
  EXPECT_TRUE(closed_by_peer(slow[0])) << "the longest waiter was dropped";
  EXPECT_EQ(server.stats().evicted, 1u);
  // The three others were kept: they finish their requests and are answered.
  for (int i = 1; i < 4; ++i) {
    send_all(slow[i], "\r\n");
    std::string carry;
    EXPECT_EQ(read_reply(slow[i], carry).status, 200) << "connection " << i;
  }
  for (int fd : slow) ::close(fd);
  EXPECT_LE(server.stats().open, 4u);
}

TEST(HttpServer, PartialAndIdleConnectionsAreClosedAtTheDeadline) {
  Fake f;
  HttpServer server(local(64, 300));
  server.start(f.content());
  const auto t0 = std::chrono::steady_clock::now();
  int partial = connect_to(server.port());
  int idle = connect_to(server.port());
  int kept = connect_to(server.port());
  ASSERT_GE(partial, 0);
  ASSERT_GE(idle, 0);
  ASSERT_GE(kept, 0);
  send_all(partial, "GET /healthz HTTP/1.1\r\nX-Slow: ");
  send_all(kept, "GET /healthz HTTP/1.1\r\n\r\n");
  std::string carry;
  EXPECT_EQ(read_reply(kept, carry).status, 200);  // then idle on keep-alive
  EXPECT_TRUE(closed_by_peer(partial));
  EXPECT_TRUE(closed_by_peer(idle));
  EXPECT_TRUE(closed_by_peer(kept));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 290ms) << "not closed before the deadline";
  // Beast's timer closes the socket before the read's handler runs and counts
  // the timeout: the peer can see the close a moment before the count moves.
  EXPECT_TRUE(eventually([&] { return server.stats().timed_out == 3u; })) << server.stats().timed_out;
  for (int fd : {partial, idle, kept}) ::close(fd);
}

TEST(HttpServer, RefusalsKeepTheirReasonPhrasesInTheStatusLineAndBody) {
  Fake f;
  HttpServer server(local());
  server.start(f.content());
  int fd = connect_to(server.port());
  ASSERT_GE(fd, 0);
  send_all(fd, "GET /status HTTP/1.1\r\nContent-Length: 1\r\n\r\nx");
  std::string carry;
  HttpReply r = read_reply(fd, carry);
  EXPECT_EQ(r.head.rfind("HTTP/1.1 413 Content Too Large\r\n", 0), 0u) << r.head;
  EXPECT_EQ(r.body, "Content Too Large\n");
  EXPECT_NE(r.head.find("Content-Type: text/plain; charset=utf-8\r\n"), std::string::npos);
  EXPECT_NE(r.head.find("X-Content-Type-Options: nosniff\r\n"), std::string::npos);
  ::close(fd);
}

TEST(HttpServer, AnAddressInUseIsRefusedNamingIt) {
  Fake f;
  HttpServer first(local());
  const std::string address = "127.0.0.1:" + std::to_string(first.port());
  EXPECT_EQ(first.address(), address);
  try {
    ServerOptions o = local();
    o.address = address;
    HttpServer second(o);
    FAIL() << "a second listener on " << address;
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot listen on " + address + ": address already in use");
  }
  for (const char* bad : {"nonsense", "127.0.0.1:", "127.0.0.1:99999", ":80", "::1:80", "127.0.0.1:8x"}) {
    ServerOptions o = local();
    o.address = bad;
    try {
      HttpServer s(o);
      ADD_FAILURE() << bad << " accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("http_address must be HOST:PORT, got '") + bad + "'");
    }
  }
}

TEST(HttpServer, NoOtherSocketCanShareThePort) {
  Fake f;
  HttpServer server(local());
  server.start(f.content());
  for (uint32_t host : {uint32_t(INADDR_LOOPBACK), uint32_t(INADDR_ANY)}) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(server.port());
    a.sin_addr.s_addr = htonl(host);
    EXPECT_NE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << "bound beside the server";
    EXPECT_EQ(errno, EADDRINUSE);
    ::close(fd);
  }
  EXPECT_EQ(get(server.port(), "/healthz").status, 200);
}

// Log lines the server wrote (any thread).
struct Lines {
  std::mutex m;
  std::vector<std::string> lines;
  LogFn fn() {
    return [this](LogLevel, std::string_view s) {
      std::lock_guard<std::mutex> l(m);
      lines.emplace_back(s);
    };
  }
  // (lines about single events matching `what`, events counted in summaries of `kind`)
  std::pair<uint64_t, uint64_t> count(const std::string& what, const std::string& kind) {
    std::lock_guard<std::mutex> l(m);
    uint64_t single = 0, summarized = 0;
    std::regex summary("^http: (\\d+) similar lines suppressed \\(" + kind + "\\)$");
    for (const auto& s : lines) {
      std::smatch mm;
      if (std::regex_match(s, mm, summary))
        summarized += std::stoull(mm[1]);
      else if (s.find(what) != std::string::npos)
        ++single;
    }
    return {single, summarized};
  }
};

TEST(HttpServer, BadRequestsAreLoggedAFewPerSecondWithACountOfTheRest) {
  Fake f;
  Lines log;
  ServerOptions o = local();
  o.log = log.fn();
  o.log_lines_per_second = 5;
  HttpServer server(o);
  server.start(f.content());
  const auto t0 = std::chrono::steady_clock::now();
  constexpr int kBad = 300;
  for (int i = 0; i < kBad; ++i) {
    int fd = connect_to(server.port());
    ASSERT_GE(fd, 0);
    send_all(fd, "\x01\x02 junk\r\n\r\n");
    std::string carry;
    EXPECT_EQ(read_reply(fd, carry).status, 400);
    ::close(fd);
  }
  // Every bad request is either a line of its own or counted in a summary
  // (the last summary comes when its window closes).
  ASSERT_TRUE(eventually([&] {
    auto [single, summarized] = log.count("http: bad request from 127.0.0.1:", "client faults");
    return single + summarized == kBad;
  })) << log.count("bad request", "client faults").first;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto [single, summarized] = log.count("http: bad request from 127.0.0.1:", "client faults");
  EXPECT_LE(double(single), 5 * (seconds + 1)) << "at most 5 lines per window";
  EXPECT_GT(summarized, 0u);
}

// ---- Out of descriptors: the server in a child process with a tight RLIMIT_NOFILE ----

// The lowest soft limit leaving `free_slots` descriptor numbers free.
rlim_t limit_leaving(int free_slots) {
  std::set<int> open;
  DIR* d = ::opendir("/proc/self/fd");
  const int dir_fd = ::dirfd(d);
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.' && std::atoi(e->d_name) != dir_fd) open.insert(std::atoi(e->d_name));
  ::closedir(d);
  int free = 0;
  rlim_t limit = 0;
  while (free < free_slots) free += !open.count(int(limit++));
  return limit;
}

// Runs a server (cap 1000) in a child whose descriptors leave room for
// `spare` connections beyond the server's own (epoll, eventfd, timerfd,
// listener). Returns the child's pid; its port and log lines come on `out`.
pid_t server_child(int spare, int out_fd) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = limit_leaving(4 + spare);
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) ::_exit(3);
  try {
    Fake f;
    ServerOptions o = local(1000, 60000);
    o.accept_pause_ms = 50;
    o.log = [out_fd](LogLevel, std::string_view s) {
      std::string line = "LOG " + std::string(s) + "\n";
      (void)!::write(out_fd, line.data(), line.size());
    };
    HttpServer server(o);
    server.start(f.content());
    std::string hello = "PORT " + std::to_string(server.port()) + "\n";
    (void)!::write(out_fd, hello.data(), hello.size());
    for (;;) ::pause();
  } catch (const std::exception& e) {
    std::string line = std::string("FAIL ") + e.what() + "\n";
    (void)!::write(out_fd, line.data(), line.size());
    ::_exit(2);
  }
}

// Reads what the child wrote so far (waits up to `wait` for the first bytes).
std::string read_some(int fd, std::chrono::milliseconds wait) {
  std::string out;
  pollfd p{fd, POLLIN, 0};
  char buf[4096];
  while (::poll(&p, 1, out.empty() ? int(wait.count()) : 0) > 0) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

uint16_t child_port(int fd) {
  std::string text;
  for (int i = 0; i < 30 && text.find('\n') == std::string::npos; ++i) text += read_some(fd, 1s);
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("PORT (\\d+)"))) {
    ADD_FAILURE() << "child said: " << text;
    return 0;
  }
  return uint16_t(std::stoi(m[1]));
}

TEST(HttpServer, OutOfDescriptorsAnIdleConnectionMakesRoomForTheProbe) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  pid_t child = server_child(2, p[1]);
  ::close(p[1]);
  const uint16_t port = child_port(p[0]);
  ASSERT_NE(port, 0);
  std::vector<int> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(connect_to(port));  // far more than the child can hold
  HttpReply probe = get(port, "/healthz");
  EXPECT_EQ(probe.status, 200);
  EXPECT_EQ(::waitpid(child, nullptr, WNOHANG), 0) << "the server process died";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  std::string log = read_some(p[0], 1s);
  EXPECT_NE(log.find("(to free a descriptor)"), std::string::npos) << log;
  for (int fd : idle) ::close(fd);
  ::close(p[0]);
}

TEST(HttpServer, OutOfDescriptorsWithNoneToGiveBackItPausesAndRecovers) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  pid_t child = server_child(0, p[1]);
  ::close(p[1]);
  const uint16_t port = child_port(p[0]);
  ASSERT_NE(port, 0);
  const auto t0 = std::chrono::steady_clock::now();
  // The connection waits in the backlog: every accept finds no descriptor.
  int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  send_all(fd, "GET /healthz HTTP/1.1\r\n\r\n");
  std::string log;
  ASSERT_TRUE(eventually([&] {
    log += read_some(p[0], 10ms);
    return log.find("out of file descriptors (too many open files); not accepting for 50 ms") != std::string::npos;
  })) << log;
  std::this_thread::sleep_for(300ms);  // several pauses: still one line per pause at most, and no crash
  log += read_some(p[0], 10ms);
  EXPECT_EQ(::waitpid(child, nullptr, WNOHANG), 0) << "the server process died";
  // Room again (as when another part of the process closes files): the
  // waiting connection is accepted and answered.
  rlimit rl{};
  ASSERT_EQ(::prlimit(child, RLIMIT_NOFILE, nullptr, &rl), 0);
  rl.rlim_cur += 16;
  ASSERT_EQ(::prlimit(child, RLIMIT_NOFILE, &rl, nullptr), 0);
  std::string carry;
  EXPECT_EQ(read_reply(fd, carry).status, 200);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  log += read_some(p[0], 100ms);
  size_t lines = 0;
  for (size_t at = 0; (at = log.find("LOG http: out of file descriptors", at)) != std::string::npos; ++at) ++lines;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(lines, 1u);
  EXPECT_LE(double(lines), 5 * (seconds + 1)) << "rate-limited: " << log;
  ::close(fd);
  ::close(p[0]);
}

}  // namespace
}  // namespace zkfarm::http
