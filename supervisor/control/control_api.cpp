// The control API: requests from zkfarmctl (control_channel.hpp brings their
// frames), each checked against who sent it (peer.hpp: the kernel's
// credentials of the connection) before it runs. docs/protocol.md lists the requests; docs/security.md says
// who may make which.
#include <unistd.h>

#include "protocol/control_verbs.hpp"
#include "protocol/messages.hpp"
#include "supervisor/clock.hpp"
#include "supervisor/control/control_api.hpp"
#include "supervisor/status/status_view.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

namespace {

using protocol::Verb;

// A long-polled `job` is held at most this long, and at most this many
// replies are held at once (each is one waiting client; control.sock's
// connection cap bounds them too); past that the reply comes at once.
constexpr uint64_t kMaxHoldMs = 60000;
constexpr size_t kMaxHeldReplies = 4096;

// Names the command its user typed (`zkfarmctl kill WORKER`), and the
// request's type for a client of control.sock that is not zkfarmctl.
json denied(const protocol::VerbInfo& verb) {
  return {{"ok", false},
          {"error", std::string("permission denied: '") + verb.command + "' (request '" + verb.type +
                        "') is for root, zkfarmd's user and members of admin_group (docs/security.md)"}};
}

}  // namespace

ControlApi::ControlApi(const Config& cfg, std::shared_ptr<spdlog::logger> log, std::unique_ptr<ControlChannel> channel,
                       const JobTable& jobs, Lifecycle& lifecycle, CircuitRegistry& circuits, Metrics& metrics,
                       EventBus& bus, Hooks hooks)
    : cfg_(cfg),
      log_(std::move(log)),
      channel_(std::move(channel)),
      jobs_(jobs),
      lifecycle_(lifecycle),
      circuits_(circuits),
      metrics_(metrics),
      hooks_(std::move(hooks)) {
  bus.on<ControlReply>([this](const ControlReply& e) { reply(e.identity, e.reply); });
}

void ControlApi::serve(int64_t now, size_t max) {
  channel_->poll_cap(now);
  for (auto& r : channel_->receive(max, hooks_.warn)) on_frame(r.identity, r.body, r.peer);
}

void ControlApi::on_frame(const std::string& identity, const std::string& frame,
                                  const std::optional<Peer>& peer) {
  json answer;
  try {
    if (!peer) throw protocol::ProtocolError("the connection has no credentials (only ipc:// is served)");
    json req = protocol::decode(frame);
    const std::string type = protocol::type_of(req);
    const Role role = role_of(*peer, cfg_.admin_group);
    // Who may call what: the verb table (protocol/control_verbs.hpp).
    const std::optional<Verb> verb = protocol::verb_of(type);
    if (!verb) return reply(identity, {{"ok", false}, {"error", "unknown request '" + type.substr(0, 64) + "'"}});
    if (protocol::verb_info(*verb).caller == protocol::Caller::kAdmin && role != Role::kAdmin) {
      hooks_.warn("control: uid " + std::to_string(peer->uid) + " (pid " + std::to_string(peer->pid) + ") was refused '" +
                  type + "'");
      return reply(identity, denied(protocol::verb_info(*verb)));
    }
    if (*verb == Verb::kSubmit) {
      const protocol::Submit submit = protocol::decode_submit(req);
      // Critical jumps every queue, on every worker: the operator grants it
      // (admin_group, critical_group), as nice(1) reserves negative values.
      if (submit.priority == "critical" && role != Role::kAdmin &&
          !member_of(*peer, cfg_.critical_group)) {
        ++metrics_.jobs_refused[refused_reason_name(RefusedReason::kInvalid)];
        hooks_.warn("control: uid " + std::to_string(peer->uid) + " was refused priority critical");
        return reply(identity, {{"ok", false},
                                     {"error", "permission denied: priority critical is for root, zkfarmd's user and "
                                               "members of admin_group or critical_group (docs/security.md)"}});
      }
      hooks_.submit(identity, submit, *peer);  // answered when its files are checked (admission.hpp)
      return;
    }
    if (*verb == Verb::kResult) {
      hooks_.result(identity, protocol::decode_result(req), *peer, role);  // answered once the proofs are read (delivery.hpp)
      return;
    }
    if (*verb == Verb::kCircuitAdd) {
      circuits_.start_add(identity, protocol::decode_circuit_add(req), *peer, role, lifecycle_.stopping());  // answered once the generator is built (circuits.cpp)
      return;
    }
    answer = handle(*verb, identity, req, *peer, role);
    if (answer.is_null()) return;  // held: answered later (answer_held)
  } catch (const protocol::ProtocolError& e) {
    hooks_.warn(std::string("control: dropped a bad request: ") + e.what());
    answer = {{"ok", false}, {"error", std::string("bad request: ") + e.what()}};
  }
  reply(identity, std::move(answer));
}

void ControlApi::reply(const std::string& identity, json reply) { channel_->reply(identity, std::move(reply), hooks_.warn); }

json ControlApi::handle(Verb verb, const std::string& identity, const json& req, const Peer& peer, Role role) {
  // A user sees and touches only the jobs it submitted; another's job is "no job".
  const std::optional<uint32_t> owner =
      role == Role::kAdmin ? std::nullopt : std::optional<uint32_t>(uint32_t(peer.uid));
  auto visible = [&](uint64_t id) -> const Job* {
    const Job* job = jobs_.find(id);
    return job && (!owner || job->owner_uid == *owner) ? job : nullptr;
  };
  // Every verb is a case (-Werror=switch): one without a handler does not build.
  switch (verb) {
    case Verb::kSubmit:
    case Verb::kResult:
    case Verb::kCircuitAdd:
      break;  // answered later: on_frame hands them on before this
    case Verb::kStatus: return {{"ok", true}, {"status", hooks_.status(owner)}};
    case Verb::kJobs: return jobs_page(jobs_, protocol::decode_jobs(req), owner);
    case Verb::kJob: {
      const protocol::JobQuery q = protocol::decode_job(req);
      const Job* job = visible(q.job);
      if (!job) return {{"ok", false}, {"error", "no job " + std::to_string(q.job)}};
      // A long poll (`zkfarmctl wait`): with wait_ms, the reply waits until the
      // job differs from what the client last saw (seen_state, seen_done), the
      // time passes, or zkfarmd stops; so a waiter hears the job's end even
      // when zkfarmd stops right after it.
      const uint64_t wait_ms = std::min<uint64_t>(q.wait_ms, kMaxHoldMs);
      if (wait_ms && !job->terminal() && held_.size() < kMaxHeldReplies &&
          q.seen_state.value_or("") == job_state_name(job->state) &&
          q.seen_done.value_or(UINT64_MAX) == job->done_count()) {
        held_.push_back({identity, false, job->id, job_state_name(job->state), job->done_count(), owner,
                         steady_ms() + int64_t(wait_ms)});
        return nullptr;  // answered by answer_held
      }
      return {{"ok", true}, {"job", job_json(*job)}};
    }
    case Verb::kCancel: {
      const uint64_t id = protocol::decode_cancel(req).job;
      const Job* job = visible(id);
      if (!job) return {{"ok", false}, {"error", "no job " + std::to_string(id)}};
      if (job->terminal())
        return {{"ok", false}, {"error", "job " + std::to_string(id) + " is already " + job_state_name(job->state)}};
      hooks_.cancel(id, peer.uid);
      return {{"ok", true}};
    }
    case Verb::kStop: {
      const protocol::Stop stop = protocol::decode_stop(req);
      if (stop.now) {
        lifecycle_.stop_now("zkfarmctl stop --now");
      } else {
        lifecycle_.begin_stop("zkfarmctl stop");
        if (stop.timeout_s) lifecycle_.set_drain_timeout_s(*stop.timeout_s);
      }
      // With wait, the reply comes as zkfarmd exits, with its exit code.
      if (stop.wait && held_.size() < kMaxHeldReplies) {
        held_.push_back({identity, true, 0, {}, 0, std::nullopt, 0});
        return nullptr;
      }
      return {{"ok", true}, {"pid", getpid()}};
    }
    case Verb::kDrain: return lifecycle_.drain();
    case Verb::kResume: return lifecycle_.resume();
    case Verb::kKill:
      lifecycle_.stop_now("zkfarmctl kill");
      return {{"ok", true}};
    case Verb::kKillWorker: return hooks_.kill_worker(protocol::decode_kill_worker(req).worker);
    case Verb::kCircuitList: return circuits_.list(peer, role);
    case Verb::kCircuitRemove: return circuits_.remove(protocol::decode_circuit_remove(req), peer, role);
    case Verb::kRestart:
    case Verb::kUpgrade: return lifecycle_.roll(protocol::decode_rolling(req));
  }
  return {{"ok", false}, {"error", std::string("no handler for '") + protocol::verb_info(verb).type + "'"}};
}

}  // namespace zkfarm::supervisor

namespace zkfarm::supervisor {

json ControlApi::held_job_reply(const HeldReply& h, bool at_exit) const {
  const Job* job = jobs_.find(h.job);
  if (!job || (h.owner && job->owner_uid != *h.owner))  // pruned meanwhile
    return {{"ok", false}, {"error", "no job " + std::to_string(h.job)}};
  json reply = {{"ok", true}, {"job", job_json(*job)}};
  if (at_exit) reply["supervisor"] = "exiting";
  return reply;
}

void ControlApi::answer_held(bool at_exit, int exit_code, const std::string& exit_error) {
  if (held_.empty()) return;
  const int64_t now = steady_ms();
  std::vector<std::pair<std::string, json>> out;
  std::erase_if(held_, [&](const HeldReply& h) {
    if (h.stop) {
      if (!at_exit) return false;
      json r = {{"ok", exit_code == 0}, {"exit_code", exit_code}, {"pid", getpid()}};
      if (exit_code != 0) r["error"] = "zkfarmd stopped with exit code " + std::to_string(exit_code) + ": " + exit_error;
      out.emplace_back(h.identity, std::move(r));
      return true;
    }
    const Job* job = jobs_.find(h.job);
    const bool changed = !job || job->terminal() || h.seen_state != job_state_name(job->state) ||
                         h.seen_done != job->done_count();
    if (!changed && !at_exit && now < h.deadline_ms) return false;
    out.emplace_back(h.identity, held_job_reply(h, at_exit));
    return true;
  });
  for (auto& [identity, r] : out) reply(identity, std::move(r));
}

}  // namespace zkfarm::supervisor
