#include "supervisor/stderr_sink.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace zkfarm::supervisor {

namespace {

/// %* in the pattern: the sd-daemon priority of the line's level.
class PriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    // syslog(3) levels: 2 crit, 3 err, 4 warning, 6 info, 7 debug.
    const char* p = "<6>";
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug: p = "<7>"; break;
      case spdlog::level::info: p = "<6>"; break;
      case spdlog::level::warn: p = "<4>"; break;
      case spdlog::level::err: p = "<3>"; break;
      case spdlog::level::critical: p = "<2>"; break;
      default: break;
    }
    dest.append(p, p + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<PriorityFlag>(); }
};

}  // namespace

bool stderr_is_journal() {
  const char* v = std::getenv("JOURNAL_STREAM");
  if (!v) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(v, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (::fstat(2, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

std::shared_ptr<spdlog::sinks::sink> make_stderr_sink() {
  if (!stderr_is_journal()) return std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto f = std::make_unique<spdlog::pattern_formatter>();
  f->add_flag<PriorityFlag>('*').set_pattern("%*%v");
  sink->set_formatter(std::move(f));
  return sink;
}

}  // namespace zkfarm::supervisor
