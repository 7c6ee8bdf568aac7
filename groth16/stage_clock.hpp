#pragma once
// Stage times on stderr when ZKFARM_PROFILE is set ("zkfarm profile: STAGE
// 12.3 ms", the time since the previous lap): where a proof's time goes, on the
// CPU prover and the GPU backend alike. Costs one getenv when off.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace zkfarm {

class StageClock {
 public:
  StageClock() : on_(std::getenv("ZKFARM_PROFILE") != nullptr), last_(std::chrono::steady_clock::now()) {}

  /// Whether ZKFARM_PROFILE is set (a GPU caller then syncs its stream before lap()).
  bool on() const { return on_; }

  /// Prints `stage` and the milliseconds since the last lap (or construction).
  void lap(const std::string& stage) {
    if (!on_) return;
    auto now = std::chrono::steady_clock::now();
    std::fprintf(stderr, "zkfarm profile: %-12s %8.2f ms\n", stage.c_str(),
                 std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

 private:
  bool on_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace zkfarm
