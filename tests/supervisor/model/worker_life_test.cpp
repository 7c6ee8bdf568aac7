// A worker's life as the model has it (supervisor/model/worker_life.hpp):
// every state × event pair, the legal moves and the refusals, and the
// respawn decision (backoff, flapping, do-not-respawn), without a process.
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "supervisor/model/worker_life.hpp"

namespace zkfarm::supervisor {
namespace {

using S = WorkerState;
using E = WorkerEvent;

// A life in `s`, reached through events as the supervisor reaches it (the
// releasing state by way of exited).
WorkerLife life_in(S s) {
  WorkerLife l;
  auto step = [&](E e) { EXPECT_TRUE(l.on(e)) << worker_event_name(e); };
  switch (s) {
    case S::kExited: break;
    case S::kStarting: step(E::kSpawned); break;
    case S::kIdle: step(E::kSpawned), step(E::kReady); break;
    case S::kBusy: step(E::kSpawned), step(E::kReady), step(E::kAssigned); break;
    case S::kStopping: step(E::kSpawned), step(E::kStopAsked); break;
    case S::kReleasing: step(E::kAwaitRelease); break;
    case S::kFailed: step(E::kGivenUp); break;
  }
  EXPECT_EQ(S(l), s);
  return l;
}

// The moves the supervisor's documentation names (workers/worker_table.hpp,
// docs/operations.md), written out here independently of the model's table.
const std::map<std::pair<S, E>, S>& expected_moves() {
  static const std::map<std::pair<S, E>, S> moves = {
      {{S::kExited, E::kSpawned}, S::kStarting},       {{S::kFailed, E::kSpawned}, S::kStarting},
      {{S::kExited, E::kSpawnFailed}, S::kExited},     {{S::kFailed, E::kSpawnFailed}, S::kExited},
      {{S::kStarting, E::kReady}, S::kIdle},           {{S::kIdle, E::kAssigned}, S::kBusy},
      {{S::kBusy, E::kAssigned}, S::kBusy},            {{S::kBusy, E::kAllAnswered}, S::kIdle},
      {{S::kStarting, E::kStopAsked}, S::kStopping},   {{S::kIdle, E::kStopAsked}, S::kStopping},
      {{S::kBusy, E::kStopAsked}, S::kStopping},       {{S::kStopping, E::kStopAsked}, S::kStopping},
      {{S::kStarting, E::kProcessGone}, S::kExited},   {{S::kIdle, E::kProcessGone}, S::kExited},
      {{S::kBusy, E::kProcessGone}, S::kExited},       {{S::kStopping, E::kProcessGone}, S::kExited},
      {{S::kExited, E::kGivenUp}, S::kFailed},         {{S::kExited, E::kAwaitRelease}, S::kReleasing},
      {{S::kFailed, E::kAwaitRelease}, S::kReleasing}, {{S::kReleasing, E::kReleased}, S::kExited},
      {{S::kReleasing, E::kReleaseTimedOut}, S::kFailed},
  };
  return moves;
}

TEST(WorkerLife, EveryStateAndEventPairMovesAsDocumentedOrIsRefusedUnchanged) {
  size_t legal = 0, refused = 0;
  for (S s : kAllWorkerStates) {
    for (E e : kAllWorkerEvents) {
      WorkerLife l = life_in(s);
      const auto it = expected_moves().find({s, e});
      const bool moved = l.on(e);
      if (it == expected_moves().end()) {
        EXPECT_FALSE(moved) << worker_state_name(s) << " × " << worker_event_name(e) << " must be refused";
        EXPECT_EQ(S(l), s) << "a refusal changes nothing";
        ++refused;
      } else {
        EXPECT_TRUE(moved) << worker_state_name(s) << " × " << worker_event_name(e);
        EXPECT_EQ(S(l), it->second) << worker_state_name(s) << " × " << worker_event_name(e);
        ++legal;
      }
    }
  }
  EXPECT_EQ(legal, expected_moves().size());
  EXPECT_EQ(legal + refused, std::size(kAllWorkerStates) * std::size(kAllWorkerEvents));
}

TEST(WorkerLife, TheReleaseWaitEndsInTheStateTheExitDecided) {
  WorkerLife crashed = life_in(S::kExited);  // restarted after its backoff once released
  ASSERT_TRUE(crashed.on(E::kAwaitRelease));
  EXPECT_EQ(crashed.after_release(), S::kExited);
  ASSERT_TRUE(crashed.on(E::kReleased));
  EXPECT_EQ(S(crashed), S::kExited);

  WorkerLife flapping = life_in(S::kFailed);  // retired: stays failed once released
  ASSERT_TRUE(flapping.on(E::kAwaitRelease));
  EXPECT_EQ(flapping.after_release(), S::kFailed);
  ASSERT_TRUE(flapping.on(E::kReleased));
  EXPECT_EQ(S(flapping), S::kFailed);
  EXPECT_FALSE(flapping.on(E::kReleased)) << "released twice";
}

TEST(WorkerLife, NamesAreDistinctForEveryStateAndEvent) {
  std::map<std::string, int> names;
  for (S s : kAllWorkerStates) ++names[worker_state_name(s)];
  for (E e : kAllWorkerEvents) ++names[worker_event_name(e)];
  for (const auto& [name, n] : names) {
    EXPECT_EQ(n, 1) << name;
    EXPECT_NE(name, "?");
  }
}

const RespawnRule kRule{.backoff_ms = 500, .backoff_max_ms = 1500, .flap_window_ms = 60000, .flap_max_crashes = 3};

TEST(Respawn, ACrashRestartsAfterTheBackoffWhichDoublesUpToItsMax) {
  CrashRecord r{.backoff_ms = kRule.backoff_ms};
  const unsigned delays[] = {500, 1000, 1500};
  int64_t now = 0;
  for (unsigned d : delays) {
    now += 100000;  // apart by more than the flap window: never flapping
    const RespawnVerdict v = decide_respawn(r, kRule, ExitKind::kCrash, now);
    ASSERT_EQ(v.what, RespawnVerdict::Do::kRestart);
    EXPECT_EQ(v.delay_ms, d);
    EXPECT_EQ(v.restart_at_ms, now + d);
  }
  EXPECT_EQ(r.backoff_ms, 1500u) << "capped";
  EXPECT_EQ(r.restarts, 3u);
  EXPECT_EQ(r.crash_times.size(), 1u) << "crashes outside the window are forgotten";
}

TEST(Respawn, MoreCrashesThanTheMaxWithinTheWindowRetireTheWorker) {
  CrashRecord r{.backoff_ms = kRule.backoff_ms};
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(decide_respawn(r, kRule, ExitKind::kCrash, 1000 * i).what, RespawnVerdict::Do::kRestart) << i;
  const RespawnVerdict fourth = decide_respawn(r, kRule, ExitKind::kCrash, 3000);
  EXPECT_EQ(fourth.what, RespawnVerdict::Do::kRetireFlapping);
  EXPECT_EQ(r.crash_times.size(), 4u);
  EXPECT_EQ(r.restarts, 4u);
  // The same four crashes spread wider than the window only restart.
  CrashRecord spread{.backoff_ms = kRule.backoff_ms};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(decide_respawn(spread, kRule, ExitKind::kCrash, 30001 * i).what, RespawnVerdict::Do::kRestart) << i;
}

TEST(Respawn, AnAskedExitAnExitThatCannotBootAndARestartAtOnceCountNoCrash) {
  CrashRecord r{.backoff_ms = kRule.backoff_ms};
  EXPECT_EQ(decide_respawn(r, kRule, ExitKind::kAsked, 10).what, RespawnVerdict::Do::kNothing);
  EXPECT_EQ(decide_respawn(r, kRule, ExitKind::kCannotBoot, 10).what, RespawnVerdict::Do::kRetire);
  const RespawnVerdict now = decide_respawn(r, kRule, ExitKind::kRestartAtOnce, 10);
  EXPECT_EQ(now.what, RespawnVerdict::Do::kRestart);
  EXPECT_EQ(now.restart_at_ms, 10);
  EXPECT_EQ(r.restarts, 0u);
  EXPECT_TRUE(r.crash_times.empty());
  EXPECT_EQ(r.backoff_ms, kRule.backoff_ms);
}

TEST(Respawn, ABinaryThatCannotStartIsRetriedAfterADoublingBackoffWithoutACrash) {
  CrashRecord r{.backoff_ms = kRule.backoff_ms};
  EXPECT_EQ(spawn_retry_at(r, kRule, 100), 600);
  EXPECT_EQ(spawn_retry_at(r, kRule, 100), 1100);
  EXPECT_EQ(spawn_retry_at(r, kRule, 100), 1600);
  EXPECT_EQ(spawn_retry_at(r, kRule, 100), 1600);
  EXPECT_EQ(r.restarts, 0u);
}

}  // namespace
}  // namespace zkfarm::supervisor
