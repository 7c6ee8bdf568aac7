// WorkerLink (worker_link.hpp): workers' frames in, messages and heartbeats out.
#include <unistd.h>

#include <variant>

#include "supervisor/clock.hpp"
#include "supervisor/workers/worker_link.hpp"

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

WorkerLink::WorkerLink(const Config& cfg, std::shared_ptr<spdlog::logger> log, std::unique_ptr<WorkerSocket> socket,
                       WorkerTable& workers, EventBus& bus, std::function<void(const std::string& line)> warn)
    : cfg_(cfg), log_(std::move(log)), socket_(std::move(socket)), workers_(workers), bus_(bus), warn_(std::move(warn)) {}

void WorkerLink::serve(size_t max) {
  for (auto& f : socket_->receive(max, warn_)) on_frame(f.route, f.body, f.peer);
}

void WorkerLink::send(const Worker& w, const std::string& frame) {
  const std::string error = socket_->send(protocol::worker_route(w.id, long(w.pid)), frame);
  if (!error.empty()) log_->warn("worker {}: send failed: {}", w.id, error);
}

void WorkerLink::on_frame(const std::string& identity, const std::string& frame, const std::optional<Peer>& peer) {
  const auto route = protocol::parse_worker_route(identity);
  Worker* found = route ? workers_.find(route->first) : nullptr;
  if (!found) {
    warn_("dropped a message from unknown worker '" + printable(identity, 64) + "'");
    return;
  }
  Worker& w = *found;
  // A worker is the process zkfarmd started under that id, as the kernel says
  // (SO_PEERCRED at connect): nothing else can speak, or prove, in its name.
  // The pid in the routing id must be that process too: replies go to it.
  if (!peer || w.pid <= 0 || peer->pid != w.pid || route->second != long(w.pid) || peer->uid != ::geteuid()) {
    warn_("worker " + w.id + ": dropped a message from pid " + (peer ? std::to_string(peer->pid) : "?") +
                         ", not the worker's process (pid " + std::to_string(w.pid) + ")");
    return;
  }
  protocol::Message map;
  try {
    map = protocol::decode(frame);
  } catch (const protocol::VersionError& e) {
    warn_("worker " + w.id + ": dropped a malformed message: " + e.what());
    if (w.state == WorkerState::kStarting) {
      log_->error("worker {}: speaks another protocol version; asking it to exit", w.id);
      workers_.ask_to_stop(w, [this](const Worker& x) { send(x, protocol::encode(protocol::Shutdown{})); },
                            steady_ms());
    }
    return;
  } catch (const protocol::ProtocolError& e) {
    warn_("worker " + w.id + ": dropped a malformed message: " + e.what());
    return;
  }
  // A frame that decodes is a sign of life, even when its fields do not.
  w.last_seen_ms = steady_ms();
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
    w.state.on(WorkerEvent::kReady);  // refused unless starting (a READY after SHUTDOWN changes nothing)
    log_->info("worker {}: READY (version {}, backend {}, pid {})", w.id, w.version, w.backend, ready->pid);
  } else if (const auto* started = std::get_if<protocol::Started>(&msg)) {
    bus_.emit(WorkerStarted{w, *started});
  } else if (const auto* done = std::get_if<protocol::SynthDone>(&msg)) {
    bus_.emit(WorkerAnswered{w, done->ref, done->result, true});
  } else if (const auto* proved = std::get_if<protocol::ProveDone>(&msg)) {
    bus_.emit(WorkerAnswered{w, proved->ref, proved->result, false});
  }  // else HEARTBEAT: last_seen_ms is all it says
}

void WorkerLink::check_deadlines(int64_t now, bool stopping) {
  if (now >= next_heartbeat_ms_) {
    next_heartbeat_ms_ = now + cfg_.heartbeat_ms;
    for (auto& [id, w] : workers_.all())
      if (w.pid > 0 && w.state != WorkerState::kStarting) send(w, protocol::encode(protocol::Heartbeat{}));
  }
  workers_.enforce_deadlines(now);
  workers_.restart_due(now, stopping);
}

}  // namespace zkfarm::supervisor
