// The workers' channel (workers.sock): frames from workers, checked against
// the process zkfarmd started under that id, decoded and routed; messages to
// workers; heartbeats out and the deadlines that follow from them.
#include "protocol/messages.hpp"
#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

namespace {

// At most `max` bytes of `s`, with anything but printable ASCII as '?': a
// client's bytes in the log must not forge lines or terminal escapes.
std::string printable(std::string_view s, size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > max) out += "…";
  return out;
}

}  // namespace

void Supervisor::send_to_worker(const Worker& w, const json& msg) {
  const std::string error = worker_socket_->send(protocol::worker_route(w.id, long(w.pid)), protocol::encode(msg));
  if (!error.empty()) log_->warn("worker {}: send failed: {}", w.id, error);
}

void Supervisor::on_worker_frame(const std::string& identity, const std::string& frame,
                                 const std::optional<Peer>& peer) {
  const auto route = protocol::parse_worker_route(identity);
  Worker* found = route ? workers_->find(route->first) : nullptr;
  if (!found) {
    warn_limited("dropped a message from unknown worker '" + printable(identity, 64) + "'");
    return;
  }
  Worker& w = *found;
  // A worker is the process zkfarmd started under that id, as the kernel says
  // (SO_PEERCRED at connect): nothing else can speak, or prove, in its name.
  // The pid in the routing id must be that process too: replies go to it.
  if (!peer || w.pid <= 0 || peer->pid != w.pid || route->second != long(w.pid) || peer->uid != ::geteuid()) {
    warn_limited("worker " + w.id + ": dropped a message from pid " + (peer ? std::to_string(peer->pid) : "?") +
                         ", not the worker's process (pid " + std::to_string(w.pid) + ")");
    return;
  }
  json msg;
  try {
    msg = protocol::decode(frame);
  } catch (const protocol::ProtocolError& e) {
    warn_limited("worker " + w.id + ": dropped a malformed message: " + e.what());
    if (w.state == WorkerState::kStarting && std::string(e.what()).find("protocol version") != std::string::npos) {
      log_->error("worker {}: speaks another protocol version; asking it to exit", w.id);
      workers_->ask_to_stop(w, [this](const Worker& x) { send_to_worker(x, protocol::make(protocol::kShutdown)); },
                            now_ms());
    }
    return;
  }
  w.last_seen_ms = now_ms();
  try {
    const std::string type = protocol::type_of(msg);
    if (type == protocol::kHeartbeat) return;
    if (type == protocol::kReady) {
      w.version = protocol::get_str(msg, "version");
      w.backend = protocol::get_str(msg, "backend");
      if (w.state == WorkerState::kStarting) w.state = WorkerState::kIdle;
      log_->info("worker {}: READY (version {}, backend {}, pid {})", w.id, w.version, w.backend,
                 protocol::get_u64(msg, "pid"));
      return;
    }
    if (type == protocol::kSynthDone || type == protocol::kProveDone) {
      on_worker_done(w, msg, type == protocol::kSynthDone);
      return;
    }
    if (type == protocol::kStarted) {
      on_worker_started(w, msg);
      return;
    }
    log_->warn("worker {}: dropped a message of unknown type {}", w.id, type);
  } catch (const protocol::ProtocolError& e) {
    log_->warn("worker {}: dropped a message: {}", w.id, e.what());
  }
}

void Supervisor::check_deadlines() {
  const int64_t now = now_ms();
  if (now >= next_heartbeat_ms_) {
    next_heartbeat_ms_ = now + cfg_.heartbeat_ms;
    for (auto& [id, w] : workers_->all())
      if (w.pid > 0 && w.state != WorkerState::kStarting) send_to_worker(w, protocol::make(protocol::kHeartbeat));
  }
  workers_->enforce_deadlines(now);
  workers_->restart_due(now, lifecycle_->stopping());
}

}  // namespace zkfarm::supervisor
