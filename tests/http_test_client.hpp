#pragma once
// A blocking loopback HTTP/1.1 client for the HTTP server tests
// (supervisor/status/http_server_test.cpp: zkfarmd's configuration; http/http_core_test.cpp:
// zkfarm-api's): connect, send, read one response by Content-Length, tell a
// peer's close. Every wait has a 30 s hang guard only, never a time bound.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <thread>

namespace zkfarm::test_http {

using namespace std::chrono_literals;

/// A blocking client socket to 127.0.0.1:`port` with a 30 s receive timeout
/// (a hang guard only); -1 when the connection is refused.
inline int connect_to(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// False when the connection failed (reset) before every byte went out.
inline bool send_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    s.remove_prefix(size_t(n));
  }
  return true;
}

/// One response: its status (0 when the connection ended first or the status
/// line is not HTTP/1.x's), its head (up to the blank line) and its body.
struct HttpReply {
  int status = 0;
  std::string head, body;
};

/// Reads one response (Content-Length framing; none for a HEAD request)
/// from fd; `carry` keeps bytes read past it (the next pipelined response).
inline HttpReply read_reply(int fd, std::string& carry, bool head_request = false) {
  HttpReply r;
  char buf[4096];
  size_t end;
  while ((end = carry.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return r;
    carry.append(buf, size_t(n));
  }
  r.head = carry.substr(0, end + 4);
  carry.erase(0, end + 4);
  std::smatch m;
  if (!std::regex_search(r.head, m, std::regex("^HTTP/1\\.[01] (\\d{3}) "))) return r;
  size_t length = 0;
  if (!head_request && std::regex_search(r.head, m, std::regex("Content-Length: (\\d+)", std::regex::icase)))
    length = std::stoul(m[1]);
  while (carry.size() < length) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return r;
    carry.append(buf, size_t(n));
  }
  r.body = carry.substr(0, length);
  carry.erase(0, length);
  r.status = std::stoi(r.head.substr(9, 3));
  return r;
}

/// True when the peer has closed or reset fd (waits up to `guard`).
inline bool closed_by_peer(int fd, std::chrono::milliseconds guard = 30s) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, int(guard.count())) <= 0) return false;
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

/// Waits (hang guard 30 s) until pred() holds; its last answer.
template <class F>
bool eventually(F pred) {
  for (auto end = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < end;) {
    if (pred()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

}  // namespace zkfarm::test_http
