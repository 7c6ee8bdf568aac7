#pragma once
// The control API (docs/protocol.md): requests from zkfarmctl and zkfarm-api
// over control.sock. It owns the channel (control_channel.hpp: framing,
// connection caps, peer credentials) and the replies it holds (a long-polled
// `job`, `stop --wait`); it checks each request against who sent it (peer.hpp,
// docs/security.md) and turns it into a call on the component that owns what
// the request is about: the lifecycle (stop, drain, resume, kill, restart,
// upgrade), the worker table (kill_worker), the circuit registry, intake
// (submit), delivery (result), the pipeline (cancel). Everything runs on the
// loop's thread.
#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "protocol/control_requests.hpp"
#include "protocol/control_verbs.hpp"
#include "supervisor/intake/circuit_registry.hpp"
#include "supervisor/config.hpp"
#include "supervisor/control/control_channel.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/workers/lifecycle.hpp"
#include "supervisor/model/event_bus.hpp"
#include "supervisor/model/loop_events.hpp"
#include "supervisor/model/metrics.hpp"
#include "supervisor/model/peer.hpp"

namespace zkfarm::supervisor {

/// Events (model/event_bus.hpp): handles ControlReply (loop_events.hpp), the
/// answers of requests other parts held.
class ControlApi {
 public:
  /// The calls a request becomes on components the API does not hold.
  struct Hooks {
    /// `submit`: answered once its files are checked and journaled (intake).
    std::function<void(const std::string& identity, const protocol::Submit& req, const Peer& peer)> submit;
    /// `result`: answered once the proofs are read (delivery).
    std::function<void(const std::string& identity, const protocol::Result& req, const Peer& peer, Role role)> result;
    /// The status object; with an owner, that uid's jobs only.
    std::function<nlohmann::json(std::optional<uint32_t> owner)> status;
    /// Cancels job `id` (live, visible to the caller): slots freed, journaled, aborted in the workers.
    std::function<void(uint64_t id, uint32_t by_uid)> cancel;
    /// `kill_worker`: SIGKILL to one worker by id; the reply object (ok:false
    /// naming the worker when there is none or it runs no process).
    std::function<nlohmann::json(const std::string& worker)> kill_worker;
    /// A warning a client can cause at will (rate-limited by the loop).
    std::function<void(const std::string& line)> warn;
  };

  /// Takes the bound channel; `jobs` is read for job requests and held polls.
  ControlApi(const Config& cfg, std::shared_ptr<spdlog::logger> log, std::unique_ptr<ControlChannel> channel,
             const JobTable& jobs, Lifecycle& lifecycle, CircuitRegistry& circuits, Metrics& metrics, EventBus& bus,
             Hooks hooks);

  /// The channel's listening socket, for the loop's poll.
  zmq::pollitem_t pollitem() { return channel_->pollitem(); }
  /// One pass: the connection cap's bookkeeping, then up to `max` requests
  /// handled (each answered now, held, or answered later by its component).
  void serve(int64_t now, size_t max = 64);
  /// Sends `reply` to the client `identity` (dropped when it has gone).
  void reply(const std::string& identity, nlohmann::json reply);
  /// Answers held `job` polls whose job changed or whose deadline passed; at
  /// exit every held reply, `stop --wait` with the exit code and error.
  void answer_held(bool at_exit, int exit_code, const std::string& exit_error);
  /// Connections open now, and connections shed by the cap (status).
  size_t open_connections() const { return channel_->open_connections(); }
  size_t sheds() const { return channel_->sheds(); }

 private:
  // A reply held until something changes (a long-polled `job`) or until
  // zkfarmd exits (`stop` with wait). Every one is answered before exit.
  struct HeldReply {
    std::string identity;
    bool stop = false;            ///< a `stop` with wait: answered with the outcome at exit
    uint64_t job = 0;             ///< a long-polled `job`: answered when it differs from `seen`
    std::string seen_state;
    uint64_t seen_done = 0;
    std::optional<uint32_t> owner;  ///< a user's view (only its own job)
    int64_t deadline_ms = 0;        ///< monotonic; a job poll is answered then at the latest
  };
  void on_frame(const std::string& identity, const std::string& frame, const std::optional<Peer>& peer);
  /// One request of the verbs answered on the spot (the caller checked who
  /// may make it); null when it is held.
  nlohmann::json handle(protocol::Verb verb, const std::string& identity, const nlohmann::json& req, const Peer& peer,
                        Role role);
  nlohmann::json held_job_reply(const HeldReply& h, bool at_exit) const;

  const Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<ControlChannel> channel_;
  const JobTable& jobs_;
  Lifecycle& lifecycle_;
  CircuitRegistry& circuits_;
  Metrics& metrics_;
  Hooks hooks_;
  std::vector<HeldReply> held_;
};

}  // namespace zkfarm::supervisor
