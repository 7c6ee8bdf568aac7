#pragma once
// The control-socket client shared by zkfarmctl and zkfarm-api's farm link
// (api/farm_link.hpp): a Unix stream connection to STATE/control.sock
// carrying length-prefixed frames (protocol/stream_frame.hpp); one request,
// then its reply (docs/protocol.md). Its errors carry zkfarmctl's exit codes
// (client/exit_codes.hpp) so that zkfarmctl ends with the right status;
// zkfarm-api maps them onto HTTP answers instead.
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "client/exit_codes.hpp"
#include "protocol/messages.hpp"

namespace zkfarm::client {

/// An error that ends zkfarmctl with a given exit code; what() is the line for
/// people (without the "zkfarmctl: " prefix).
class CtlError : public std::runtime_error {
 public:
  CtlError(int exit_code, const std::string& what) : std::runtime_error(what), exit_code_(exit_code) {}
  /// The process exit status this error maps to.
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// No supervisor answers: the socket file is missing or not a socket, or no
/// reply came within the timeout. Exit 3.
class NoSupervisor : public CtlError {
 public:
  NoSupervisor(const std::string& state_dir, const std::string& detail)
      : CtlError(kExitNoSupervisor, "no zkfarmd is running at " + state_dir + " (" + detail + ")") {}
};

/// The state dir or its control.sock exists (or may) but this user may not
/// reach it: a directory it cannot search, a socket it may not write
/// (EACCES, EPERM). Exit 5; what() names the path and the system's reason,
/// never "no zkfarmd is running" (one may well be).
class AccessDenied : public CtlError {
 public:
  AccessDenied(const std::string& state_dir, const std::string& detail)
      : CtlError(kExitAccess, "cannot reach zkfarmd at " + state_dir + ": " + detail) {}
};

/// The supervisor answered {"ok": false, "error": ...}. Exit 1; what() is the
/// supervisor's error text.
class Refused : public CtlError {
 public:
  /// `retry_after_ms` > 0: the refusal is transient (zkfarmd's journal or
  /// shared queue cannot be reached now, or zkfarm-api answered 503) and the
  /// same request may be sent again after that many milliseconds.
  explicit Refused(const std::string& error, int64_t retry_after_ms = 0, bool busy = false)
      : CtlError(busy ? kExitBusy : kExitFailed, error), retry_after_ms(retry_after_ms), busy(busy) {}
  int64_t retry_after_ms;
  /// zkfarmd said "busy": its queue for this request is full; the same
  /// request may be sent again (exit kExitBusy when it is not).
  bool busy;
};

/// The reply frame is not a valid reply (not MessagePack, not a map, no
/// boolean "ok", another protocol version, several frames, too large). Exit 1.
class MalformedReply : public CtlError {
 public:
  explicit MalformedReply(const std::string& detail) : CtlError(kExitFailed, "malformed reply from zkfarmd: " + detail) {}
};

/// Path of the control socket file under a state dir.
std::string control_socket_path(const std::string& state_dir);

/// Parses one reply frame: a MessagePack map with a boolean "ok" (and, if
/// present, "v" equal to protocol::kProtocolVersion; "t" is not required of
/// replies). Returns the reply when ok is true; throws Refused with the
/// "error" text when ok is false, MalformedReply otherwise.
protocol::Message parse_reply(std::string_view frame);

/// Where a verb's requests go: zkfarmd's control socket (Client) or, with
/// --api, zkfarm-api over HTTPS (ApiClient, ctl/api_client.hpp), which maps
/// the same requests onto its routes and returns replies of the same shape,
/// so a verb prints the same either way.
class Caller {
 public:
  virtual ~Caller() = default;
  /// One request (made with protocol::make) and its reply when "ok" is true.
  /// Throws NoSupervisor, Refused or MalformedReply (CtlError).
  virtual protocol::Message call(const protocol::Message& request) = 0;
  /// How long one call waits for its reply (ms).
  virtual int timeout_ms() const = 0;
  virtual void set_timeout_ms(int ms) = 0;
};

/// A connection to one supervisor's control socket. Connects on the first
/// call; every call is one request and one reply. A connection zkfarmd
/// closed while idle (its connection cap, a restart) is made again before
/// the next request. After a NoSupervisor error or a timeout the client must
/// not be used again (a reply may still be on its way).
class Client : public Caller {
 public:
  /// state_dir: the supervisor's state dir (made absolute here);
  /// timeout_ms: how long one call waits for its reply.
  Client(const std::string& state_dir, int timeout_ms);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Sends request (a message made with protocol::make) and returns the reply
  /// when it has "ok": true. Throws NoSupervisor, Refused or MalformedReply.
  protocol::Message call(const protocol::Message& request) override;

  /// The same for a request whose reply may take long (a held `stop`, a
  /// long-polled `job`): waits up to `wait_ms` (< 0: for ever) instead of
  /// the call timeout, calling `tick` every `tick_ms` while it waits (to
  /// show progress; it may use another Client). Returns nullopt when
  /// `wait_ms` passed without a reply (the client must not be used again);
  /// throws as call() does otherwise, NoSupervisor at once when zkfarmd
  /// closes the connection.
  std::optional<protocol::Message> call_waiting(const protocol::Message& request, int64_t wait_ms,
                                                const std::function<void()>& tick = {}, int tick_ms = 250);

  /// How long one call waits for its reply (ms).
  int timeout_ms() const override { return timeout_ms_; }
  void set_timeout_ms(int ms) override { timeout_ms_ = ms; }

  /// The state dir as shown in messages (absolute).
  const std::string& state_dir() const { return state_dir_; }

  /// The pid of the process at the other end of the connection as the kernel
  /// gives it (SO_PEERCRED: zkfarmd's pid in this process's pid namespace,
  /// also when zkfarmd runs in another one; 0 when it cannot be named here).
  /// Connects first when needed; throws as call() does.
  int peer_pid();

 private:
  /// Checks the socket file exists and is a socket, then connects (waiting
  /// up to the call timeout while zkfarmd's backlog is full).
  void connect();
  /// Writes all of `bytes` before the call timeout; throws NoSupervisor.
  void send_all(const std::string& bytes);
  void disconnect();

  std::string state_dir_;
  int timeout_ms_;
  int fd_ = -1;
};

}  // namespace zkfarm::client
