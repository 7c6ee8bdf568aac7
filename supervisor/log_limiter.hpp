#pragma once
// LogLimiter: at most a few lines per time window for events a client can
// cause at will (bad HTTP requests, bad control messages), plus a count of
// what was left out, so that a flood costs a bounded amount of log and the
// operator still learns how big it was. Header-only, no logger dependency:
// the caller decides what a line and a summary say.
//
// Use, for each event:
//   auto v = limiter.admit(LogLimiter::Clock::now());
//   if (v.suppressed) log->warn("… {} similar lines suppressed", v.suppressed);
//   if (v.log) log->warn("the event's own line");
// and, from a timer or a loop pass (so that the tail of a burst is reported
// even when no further event comes):
//   if (auto n = limiter.flush(LogLimiter::Clock::now())) log->warn("… {} similar lines suppressed", n);
// `flush_due()` says when calling flush() next has something to report.
//
// Not thread-safe: one limiter per thread (the HTTP server's I/O thread, the
// supervisor's loop), or the caller serializes.
#include <chrono>
#include <cstdint>
#include <optional>

namespace zkfarm::supervisor {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  /// What to do with one event.
  struct Verdict {
    bool log = false;         ///< write this event's line
    uint64_t suppressed = 0;  ///< > 0: first write a summary of this many events left out before it
  };

  /// At most `lines_per_window` (≥ 1; 0 is taken as 1) lines in each window of
  /// `window` (> 0). A window opens with the first event after the previous
  /// one closed, so a quiet limiter logs the next event at once.
  explicit LogLimiter(unsigned lines_per_window = 5, Clock::duration window = std::chrono::seconds(1))
      : per_window_(lines_per_window ? lines_per_window : 1),
        window_(window > Clock::duration::zero() ? window : std::chrono::seconds(1)) {}

  /// Counts one event at `now` (monotonic, never earlier than the previous call's).
  Verdict admit(Clock::time_point now) {
    Verdict v;
    if (!open_ || now >= start_ + window_) {
      // A new window: report what the closed ones left out, then log again.
      v.suppressed = suppressed_;
      suppressed_ = 0;
      open_ = true;
      start_ = now;
      used_ = 0;
    }
    if (used_ < per_window_) {
      ++used_;
      v.log = true;
    } else {
      ++suppressed_;
      ++suppressed_total_;
    }
    return v;
  }

  /// The events left out and not yet reported, once the window they fell in
  /// has closed (0 before that, or when there are none); resets the count.
  uint64_t flush(Clock::time_point now) {
    if (suppressed_ == 0 || now < start_ + window_) return 0;
    uint64_t n = suppressed_;
    suppressed_ = 0;
    return n;
  }

  /// When flush() will have something to report: the end of the current
  /// window if events were left out in it; nullopt otherwise.
  std::optional<Clock::time_point> flush_due() const {
    if (suppressed_ == 0) return std::nullopt;
    return start_ + window_;
  }

  /// Every event left out since construction (reported or not).
  uint64_t suppressed_total() const { return suppressed_total_; }

  /// The window's length (for a summary line: "… in the last 1 s").
  Clock::duration window() const { return window_; }

 private:
  unsigned per_window_;
  Clock::duration window_;
  bool open_ = false;
  Clock::time_point start_{};
  unsigned used_ = 0;
  uint64_t suppressed_ = 0;
  uint64_t suppressed_total_ = 0;
};

}  // namespace zkfarm::supervisor
