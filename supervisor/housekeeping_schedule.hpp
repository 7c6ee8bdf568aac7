#pragma once
// When housekeeping (housekeeping.cpp) runs: at start, then once a period of
// the monotonic clock. The period is a minute; ZKFARM_TEST_HOUSEKEEPING_MS
// (0 to 3600000; 0: every pass of the loop) is a test knob that makes the
// races between housekeeping and what it must leave alone likely
// (tests/witgen/test_witgen.py).
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace zkfarm::supervisor {

/// A pass's schedule in steady-clock ms (supervisor/clock.hpp's steady_ms).
class HousekeepingSchedule {
 public:
  static constexpr int64_t kDefaultPeriodMs = 60 * 1000;
  static constexpr int64_t kMaxPeriodMs = 3600 * 1000;

  explicit HousekeepingSchedule(int64_t period_ms = kDefaultPeriodMs) : period_ms_(period_ms) {}

  /// The period from ZKFARM_TEST_HOUSEKEEPING_MS (unset: a minute). A value
  /// that is not a decimal count of 0 to kMaxPeriodMs keeps the minute and
  /// says so on stderr: a test that mistyped it must not pass by luck.
  static HousekeepingSchedule from_env() { return HousekeepingSchedule(period_of(std::getenv("ZKFARM_TEST_HOUSEKEEPING_MS"))); }

  /// `text` as a period (nullptr or "": the default).
  static int64_t period_of(const char* text) {
    if (!text || !*text) return kDefaultPeriodMs;
    const std::string_view s(text);
    int64_t ms = -1;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), ms);
    if (ec == std::errc() && end == s.data() + s.size() && ms >= 0 && ms <= kMaxPeriodMs) return ms;
    std::fprintf(stderr, "zkfarmd: ZKFARM_TEST_HOUSEKEEPING_MS=%.32s is not 0 to %lld ms; using %lld\n", text,
                 (long long)kMaxPeriodMs, (long long)kDefaultPeriodMs);
    return kDefaultPeriodMs;
  }

  /// Whether a pass is due at `now_ms` (always `at_start`); when it is, the
  /// next one is a period later.
  bool due(int64_t now_ms, bool at_start) {
    if (!at_start && now_ms < next_ms_) return false;
    next_ms_ = now_ms + period_ms_;
    return true;
  }

  int64_t period_ms() const { return period_ms_; }

 private:
  int64_t period_ms_;
  int64_t next_ms_ = 0;
};

}  // namespace zkfarm::supervisor
