#pragma once
// One line of progress on stderr: on a terminal redrawn in place, otherwise
// printed once each time it changes (so logs of scripts stay short).
#include <unistd.h>

#include <iostream>
#include <string>

namespace zkfarm::ctl {

class ProgressLine {
 public:
  /// quiet: show nothing at all.
  explicit ProgressLine(bool quiet = false) : quiet_(quiet), tty_(isatty(STDERR_FILENO) == 1) {}
  ~ProgressLine() { end(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// Shows `text` (one line, no newline) unless it is what is shown already.
  void show(const std::string& text) {
    if (quiet_ || text == last_) return;
    last_ = text;
    if (tty_) {
      std::cerr << "\r" << text << "\033[K" << std::flush;
      drawn_ = true;
    } else {
      std::cerr << text << "\n" << std::flush;
    }
  }

  /// Whether stderr is a terminal (the line is redrawn in place).
  bool tty() const { return tty_; }

  /// Ends a line drawn in place, so that what follows starts on a fresh one.
  void end() {
    if (drawn_) std::cerr << "\n" << std::flush;
    drawn_ = false;
  }

 private:
  bool quiet_;
  bool tty_;
  bool drawn_ = false;
  std::string last_;
};

}  // namespace zkfarm::ctl
