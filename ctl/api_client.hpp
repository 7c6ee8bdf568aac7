#pragma once
// zkfarmctl --api URL --token-file F: the verbs' requests sent to zkfarm-api
// over HTTPS (docs/api.md) instead of a local control socket. Each request
// type maps onto a route, and each reply is given back in the control
// protocol's shape, so `submit`, `wait`, `result`, `cancel`, `jobs`,
// `circuit add|list|remove` and `status` print what they print locally.
// Files a request names (a key, witnesses, inputs, a wasm) are read here, as
// the caller, and uploaded: the API's host never sees the caller's paths.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ctl/client.hpp"

namespace zkfarm::ctl {

class ApiClient : public Caller {
 public:
  /// `url`: "https://HOST:PORT" (or http:// for a loopback API); `token`: the
  /// API token; `ca_file`: PEM file of the CAs to trust ("" : the system's).
  ApiClient(const std::string& url, const std::string& token, const std::string& ca_file, int timeout_ms);
  ~ApiClient() override;

  /// Maps `request` (submit, job, jobs, result, cancel, circuit_add,
  /// circuit_list, circuit_remove, status, and an operator's drain and
  /// resume) onto the API. Throws NoSupervisor
  /// when the API cannot be reached, Refused with the API's message for an
  /// error answer, CtlError (exit 2) for a request the API does not offer.
  protocol::Message call(const protocol::Message& request) override;
  int timeout_ms() const override { return timeout_ms_; }
  void set_timeout_ms(int ms) override { timeout_ms_ = ms; }

 private:
  /// `submit`: reads or uploads the caller's files and posts the job; fills
  /// `names` with what the API calls each file ("input K.json", "upload ID")
  /// and the caller's path for it, as it goes.
  protocol::Message submit(const protocol::Message& req, std::vector<std::pair<std::string, std::string>>& names);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  int timeout_ms_;
};

/// Reads an API token from `path`: the file's first line, trimmed. Throws
/// CtlError (exit 2) when it cannot be read, is empty, or others may read it
/// (like ssh with a private key: chmod 600).
std::string read_token_file(const std::string& path);

}  // namespace zkfarm::ctl
