#pragma once
// What zkfarmctl says on stderr besides errors: one line of progress (on a
// terminal redrawn in place; otherwise printed, throttled, so that the logs
// of scripts and CI stay short) and notes (hints after a verb), both silenced
// by -q.
#include <unistd.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <string>

namespace zkfarm::ctl {

/// -q: no progress and no notes (results on stdout and errors stay).
void set_quiet(bool quiet);
bool quiet();
/// A note for people on stderr ("zkfarmctl: " prefixed, a newline added), unless -q.
void note(const std::string& text);

class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;
  /// How often a line whose phase did not change is printed off a terminal.
  static constexpr std::chrono::seconds kOffTtyEvery{5};

  /// quiet: show nothing at all (so does -q). On stderr, tty or not as it is.
  explicit ProgressLine(bool quiet = false)
      : ProgressLine(quiet, isatty(STDERR_FILENO) == 1, std::cerr, [] { return Clock::now(); }) {}
  /// For tests: where it writes, whether that is a terminal, and the clock.
  ProgressLine(bool quiet, bool tty, std::ostream& out, std::function<Clock::time_point()> now)
      : quiet_(quiet || ctl::quiet()), tty_(tty), out_(out), now_(std::move(now)) {}
  ~ProgressLine() { end(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// Shows `text` (one line, no newline) unless it is what is shown already.
  /// Off a terminal a line is printed when its `phase` (the coarse part of
  /// what it says: a state, a worker, a count of workers; "" = the text
  /// itself) differs from the last printed one, else at most every
  /// kOffTtyEvery; so a countdown or a byte count ticking in the text does
  /// not print a line a poll. The last text is printed by end() if it was
  /// held back.
  void show(const std::string& text, const std::string& phase = "") {
    if (quiet_ || text == last_) return;
    last_ = text;
    if (tty_) {
      out_ << "\r" << text << "\033[K" << std::flush;
      drawn_ = true;
      return;
    }
    const std::string& p = phase.empty() ? text : phase;
    const auto now = now_();
    if (printed_once_ && p == last_phase_ && now - last_print_ < kOffTtyEvery) {
      held_ = true;
      return;
    }
    print(text, p, now);
  }

  /// Whether stderr is a terminal (the line is redrawn in place).
  bool tty() const { return tty_; }

  /// Ends the line: on a terminal a newline, so that what follows starts on
  /// a fresh one; off it, the last text if it was held back.
  void end() {
    if (drawn_) out_ << "\n" << std::flush;
    drawn_ = false;
    if (held_) print(last_, last_phase_, now_());
  }

 private:
  void print(const std::string& text, const std::string& phase, Clock::time_point now) {
    out_ << text << "\n" << std::flush;
    printed_once_ = true;
    held_ = false;
    last_phase_ = phase;
    last_print_ = now;
  }

  bool quiet_;
  bool tty_;
  std::ostream& out_;
  std::function<Clock::time_point()> now_;
  bool drawn_ = false, held_ = false, printed_once_ = false;
  std::string last_, last_phase_;
  Clock::time_point last_print_{};
};

}  // namespace zkfarm::ctl
