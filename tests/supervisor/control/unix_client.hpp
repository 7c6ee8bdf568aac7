#pragma once
// A client of control.sock for the control tests: a connected Unix stream
// socket, as zkfarmctl opens one.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace zkfarm::supervisor::fakes {

/// A socket connected to the Unix socket at `path`; -1 when the connect
/// fails. Makes only system calls besides snprintf into a stack buffer, so a
/// forked child of a process with threads may call it.
inline int connect_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace zkfarm::supervisor::fakes
