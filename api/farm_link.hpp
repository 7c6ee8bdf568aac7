#pragma once
// zkfarm-api's way to zkfarmd: the same control socket and requests as
// zkfarmctl (docs/protocol.md), through the shared client::Client
// (client/control_client.hpp), one connection per calling thread (a
// connection carries one request at a time). zkfarmd sees
// zkfarm-api as one local user; tenants exist only in zkfarm-api's store.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "protocol/messages.hpp"

namespace zkfarm::api {

/// zkfarmd does not answer (not running, or no reply in time): 503.
class FarmUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// zkfarmd answered {"ok": false}: what() is its error text;
/// `retry_after_ms` > 0 when zkfarmd called it transient (its journal or
/// shared queue cannot be reached now).
class FarmRefused : public std::runtime_error {
 public:
  explicit FarmRefused(const std::string& what, int64_t retry_after_ms = 0)
      : std::runtime_error(what), retry_after_ms(retry_after_ms) {}
  int64_t retry_after_ms;
};

class FarmLink {
 public:
  /// `state_dir`: zkfarmd's state dir (its control.sock); `timeout_ms`: how
  /// long a call waits for its reply unless a call says otherwise.
  FarmLink(std::string state_dir, int timeout_ms) : state_dir_(std::move(state_dir)), timeout_ms_(timeout_ms) {}

  /// One request and its reply (ok true). `timeout_ms` 0: the default.
  /// Throws FarmUnavailable or FarmRefused; never anything else for a reply.
  protocol::Message call(const protocol::Message& request, int timeout_ms = 0) const;

  const std::string& state_dir() const { return state_dir_; }

 private:
  std::string state_dir_;
  int timeout_ms_;
};

}  // namespace zkfarm::api
