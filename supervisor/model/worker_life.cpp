#include "supervisor/model/worker_life.hpp"

#include <algorithm>

namespace zkfarm::supervisor {

const char* worker_state_name(WorkerState s) {
  switch (s) {
    case WorkerState::kStarting: return "starting";
    case WorkerState::kIdle: return "idle";
    case WorkerState::kBusy: return "busy";
    case WorkerState::kStopping: return "stopping";
    case WorkerState::kReleasing: return "releasing";
    case WorkerState::kExited: return "exited";
    case WorkerState::kFailed: return "failed";
  }
  return "?";
}

const char* worker_event_name(WorkerEvent e) {
  switch (e) {
    case WorkerEvent::kSpawned: return "spawned";
    case WorkerEvent::kSpawnFailed: return "spawn failed";
    case WorkerEvent::kReady: return "ready";
    case WorkerEvent::kAssigned: return "assigned";
    case WorkerEvent::kAllAnswered: return "all answered";
    case WorkerEvent::kStopAsked: return "stop asked";
    case WorkerEvent::kProcessGone: return "process gone";
    case WorkerEvent::kGivenUp: return "given up";
    case WorkerEvent::kAwaitRelease: return "await release";
    case WorkerEvent::kReleased: return "released";
    case WorkerEvent::kReleaseTimedOut: return "release timed out";
  }
  return "?";
}

namespace {

using S = WorkerState;
using E = WorkerEvent;

// kAfterRelease in `to`: the state remembered when the release wait began.
constexpr S kAfterRelease = S(-1);

struct Move {
  S from;
  E event;
  S to;
};

// Every legal move; any pair not here is refused. A running state is one
// with a process: starting, idle, busy, stopping.
constexpr Move kMoves[] = {
    {S::kExited, E::kSpawned, S::kStarting},       {S::kFailed, E::kSpawned, S::kStarting},  // `zkfarmctl restart`
    {S::kExited, E::kSpawnFailed, S::kExited},     {S::kFailed, E::kSpawnFailed, S::kExited},
    {S::kStarting, E::kReady, S::kIdle},
    {S::kIdle, E::kAssigned, S::kBusy},            {S::kBusy, E::kAssigned, S::kBusy},
    {S::kBusy, E::kAllAnswered, S::kIdle},
    {S::kStarting, E::kStopAsked, S::kStopping},   {S::kIdle, E::kStopAsked, S::kStopping},
    {S::kBusy, E::kStopAsked, S::kStopping},       {S::kStopping, E::kStopAsked, S::kStopping},  // a stop renewed
    {S::kStarting, E::kProcessGone, S::kExited},   {S::kIdle, E::kProcessGone, S::kExited},
    {S::kBusy, E::kProcessGone, S::kExited},       {S::kStopping, E::kProcessGone, S::kExited},
    {S::kExited, E::kGivenUp, S::kFailed},
    {S::kExited, E::kAwaitRelease, S::kReleasing}, {S::kFailed, E::kAwaitRelease, S::kReleasing},
    {S::kReleasing, E::kReleased, kAfterRelease},
    {S::kReleasing, E::kReleaseTimedOut, S::kFailed},
};

}  // namespace

std::optional<WorkerLife> WorkerLife::after(WorkerEvent e) const {
  for (const Move& m : kMoves) {
    if (m.from != state_ || m.event != e) continue;
    WorkerLife next = *this;
    if (e == E::kAwaitRelease) next.after_release_ = state_;
    next.state_ = m.to == kAfterRelease ? after_release_ : m.to;
    return next;
  }
  return std::nullopt;
}

bool WorkerLife::on(WorkerEvent e) {
  const std::optional<WorkerLife> next = after(e);
  if (next) *this = *next;
  return next.has_value();
}

RespawnVerdict decide_respawn(CrashRecord& record, const RespawnRule& rule, ExitKind how, int64_t now) {
  using Do = RespawnVerdict::Do;
  switch (how) {
    case ExitKind::kAsked: return {};
    case ExitKind::kRestartAtOnce: return {Do::kRestart, now, 0};
    case ExitKind::kCannotBoot: return {Do::kRetire, 0, 0};
    case ExitKind::kCrash: break;
  }
  ++record.restarts;
  record.crash_times.push_back(now);
  std::erase_if(record.crash_times, [&](int64_t t) { return now - t > int64_t(rule.flap_window_ms); });
  if (record.crash_times.size() > rule.flap_max_crashes) return {Do::kRetireFlapping, 0, 0};
  const unsigned delay = record.backoff_ms;
  record.backoff_ms = std::min(record.backoff_ms * 2, rule.backoff_max_ms);
  return {Do::kRestart, now + delay, delay};
}

int64_t spawn_retry_at(CrashRecord& record, const RespawnRule& rule, int64_t now) {
  const int64_t at = now + record.backoff_ms;
  record.backoff_ms = std::min(record.backoff_ms * 2, rule.backoff_max_ms);
  return at;
}

}  // namespace zkfarm::supervisor
