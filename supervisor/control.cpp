// The control API: requests from zkfarmctl on control.sock, each checked
// against who sent it (peer.hpp: the kernel's credentials of the connection)
// before it runs. docs/protocol.md lists the requests; docs/security.md says
// who may make which.
#include <unistd.h>

#include "protocol/messages.hpp"
#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

namespace {

// Requests that change the farm for everyone: an admin's only.
bool admin_only(const std::string& type) {
  return type == "stop" || type == "drain" || type == "resume" || type == "kill" || type == "restart" ||
         type == "upgrade";
}

json denied(const std::string& type) {
  return {{"ok", false},
          {"error", "permission denied: '" + type +
                        "' is for root, zkfarmd's user and members of admin_group (docs/security.md)"}};
}

}  // namespace

void Supervisor::on_control_frame(const std::string& identity, const std::string& frame,
                                  const std::optional<Peer>& peer) {
  json reply;
  try {
    if (!peer) throw protocol::ProtocolError("the connection has no credentials (only ipc:// is served)");
    json req = protocol::decode(frame);
    const std::string type = protocol::type_of(req);
    const Role role = role_of(*peer, cfg_.admin_group);
    if (type == "submit") {
      start_submit(identity, req, *peer);  // answered when its files are checked (submit.cpp)
      return;
    }
    if (type == "result") {
      start_result(identity, req, *peer, role);  // answered once the files are written (delivery.cpp)
      return;
    }
    if (admin_only(type) && role != Role::kAdmin) {
      warn_limited("control: uid " + std::to_string(peer->uid) + " (pid " + std::to_string(peer->pid) + ") was refused '" +
                   type.substr(0, 32) + "'");
      reply = denied(type);
    } else {
      reply = handle_request(req, *peer, role);
    }
  } catch (const protocol::ProtocolError& e) {
    warn_limited(std::string("control: dropped a bad request: ") + e.what());
    reply = {{"ok", false}, {"error", std::string("bad request: ") + e.what()}};
  }
  send_reply(identity, reply);
}

void Supervisor::send_reply(const std::string& identity, json reply) {
  reply["v"] = protocol::kProtocolVersion;
  reply["t"] = "REPLY";
  std::string body = protocol::encode(reply);
  if (body.size() > protocol::kMaxFrameBytes) {  // the views are bounded; this is the last guard
    log_->error("control: a reply of {} bytes would pass the frame limit; answered with an error", body.size());
    body = protocol::encode({{"v", protocol::kProtocolVersion},
                             {"t", "REPLY"},
                             {"ok", false},
                             {"error", "the reply would be too large; use `zkfarmctl jobs` with --limit"}});
  }
  std::array<zmq::const_buffer, 3> frames = {zmq::buffer(identity), zmq::const_buffer(), zmq::buffer(body)};
  try {
    zmq::send_multipart(control_sock_, frames, zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    warn_limited(std::string("control: reply not sent: ") + e.what());
  }
}

json Supervisor::handle_request(const json& req, const Peer& peer, Role role) {
  const std::string type = protocol::type_of(req);
  // A user sees and touches only the jobs it submitted; another's job is "no job".
  const std::optional<uint32_t> owner =
      role == Role::kAdmin ? std::nullopt : std::optional<uint32_t>(uint32_t(peer.uid));
  auto visible = [&](uint64_t id) -> Job* {
    Job* job = jobs_.find(id);
    return job && (!owner || job->owner_uid == *owner) ? job : nullptr;
  };
  if (type == "status") return {{"ok", true}, {"status", status(owner)}};
  if (type == "jobs") return jobs_page(req, owner);
  if (type == "job") {
    Job* job = visible(protocol::get_u64(req, "job"));
    if (!job) return {{"ok", false}, {"error", "no job " + std::to_string(protocol::get_u64(req, "job"))}};
    return {{"ok", true}, {"job", job_view(*job)}};
  }
  if (type == "cancel") {
    const uint64_t id = protocol::get_u64(req, "job");
    Job* job = visible(id);
    if (!job) return {{"ok", false}, {"error", "no job " + std::to_string(id)}};
    if (job->terminal()) return {{"ok", false}, {"error", "job " + std::to_string(id) + " is already " + job_state_name(job->state)}};
    free_slots(jobs_.cancel(id, wall_ms()));
    journal_write([this, id, t = job->finished_ms] { journal_.finish_job(id, JobState::kCancelled, "", t); });
    abort_in_flight(id);
    log_->info("job {}: cancelled by uid {}", id, peer.uid);
    return {{"ok", true}};
  }
  if (type == "stop") {
    begin_stop("zkfarmctl stop");
    if (req.contains("timeout_s")) drain_deadline_ms_ = now_ms() + int64_t(protocol::get_u64(req, "timeout_s")) * 1000;
    return {{"ok", true}};
  }
  if (admin_only(type)) return lifecycle_request(type, req);
  return {{"ok", false}, {"error", "unknown request '" + type.substr(0, 64) + "'"}};
}

}  // namespace zkfarm::supervisor
