// The workers' channel (workers.sock): frames from workers, checked against
// the process zkfarmd started under that id, decoded once into their structs
// (protocol/worker_messages.hpp) and routed; messages to workers;
// heartbeats out and the deadlines that follow from them.
#include <variant>

#include "protocol/worker_messages.hpp"
#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

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

void Supervisor::send_to_worker(const Worker& w, const std::string& frame) {
  const std::string error = worker_socket_->send(protocol::worker_route(w.id, long(w.pid)), frame);
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
  protocol::Message map;
  try {
    map = protocol::decode(frame);
  } catch (const protocol::VersionError& e) {
    warn_limited("worker " + w.id + ": dropped a malformed message: " + e.what());
    if (w.state == WorkerState::kStarting) {
      log_->error("worker {}: speaks another protocol version; asking it to exit", w.id);
      workers_->ask_to_stop(w, [this](const Worker& x) { send_to_worker(x, protocol::encode(protocol::Shutdown{})); },
                            now_ms());
    }
    return;
  } catch (const protocol::ProtocolError& e) {
    warn_limited("worker " + w.id + ": dropped a malformed message: " + e.what());
    return;
  }
  // A frame that decodes is a sign of life, even when its fields do not.
  w.last_seen_ms = now_ms();
  protocol::FromWorker msg;
  try {
    msg = protocol::from_worker(map);
  } catch (const protocol::ProtocolError& e) {
    log_->warn("worker {}: dropped a message: {}", w.id, e.what());
    return;
  }
  if (const auto* ready = std::get_if<protocol::Ready>(&msg)) {
    w.version = ready->version;
    w.backend = ready->backend;
    if (w.state == WorkerState::kStarting) w.state = WorkerState::kIdle;
    log_->info("worker {}: READY (version {}, backend {}, pid {})", w.id, w.version, w.backend, ready->pid);
  } else if (const auto* started = std::get_if<protocol::Started>(&msg)) {
    pipeline_->on_started(w, *started);
  } else if (const auto* done = std::get_if<protocol::SynthDone>(&msg)) {
    pipeline_->on_done(w, done->ref, done->result, true);
  } else if (const auto* proved = std::get_if<protocol::ProveDone>(&msg)) {
    pipeline_->on_done(w, proved->ref, proved->result, false);
  }  // else HEARTBEAT: last_seen_ms is all it says
}

void Supervisor::check_deadlines() {
  const int64_t now = now_ms();
  if (now >= next_heartbeat_ms_) {
    next_heartbeat_ms_ = now + cfg_.heartbeat_ms;
    for (auto& [id, w] : workers_->all())
      if (w.pid > 0 && w.state != WorkerState::kStarting) send_to_worker(w, protocol::encode(protocol::Heartbeat{}));
  }
  workers_->enforce_deadlines(now);
  workers_->restart_due(now, lifecycle_->stopping());
}

}  // namespace zkfarm::supervisor
