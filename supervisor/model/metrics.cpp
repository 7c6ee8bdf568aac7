#include "supervisor/model/metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace zkfarm::supervisor {

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return std::string(buf, r.ptr);
}

std::vector<double> stage_buckets() { return {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}; }
std::vector<double> wait_buckets() { return {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600, 1800, 3600}; }

const char* refused_reason_name(RefusedReason r) {
  switch (r) {
    case RefusedReason::kInvalid: return "invalid";
    case RefusedReason::kBusy: return "busy";
    case RefusedReason::kStopping: return "stopping";
    case RefusedReason::kIntakeFault: return "intake_fault";
    case RefusedReason::kTimeout: return "timeout";
  }
  return "?";
}

Metrics::Metrics() {
  for (auto r : {RefusedReason::kInvalid, RefusedReason::kBusy, RefusedReason::kStopping, RefusedReason::kIntakeFault,
                 RefusedReason::kTimeout})
    jobs_refused[refused_reason_name(r)] = 0;
  for (const char* s : {"done", "failed", "cancelled"}) jobs_finished[s] = 0;
  for (const char* kind : {"synth", "gpu"})
    for (const char* reason : {"crash", "heartbeat", "no_ready", "stop_timeout", "no_respawn", "operator"})
      restarts[{kind, reason}] = 0;
  for (const char* what : {"restart", "upgrade"})
    for (const char* result : {"done", "failed"}) rolling[{what, result}] = 0;
  for (const char* cache : {"submit", "worker"})
    for (const char* result : {"hit", "miss"}) key_cache[{cache, result}] = 0;
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double seconds) {
  size_t i = 0;
  while (i < bounds_.size() && seconds > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::string out = "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + format_value(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + format_value(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
  return out;
}

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string render_family(const std::string& name, const std::string& type, const std::string& help,
                          const std::vector<Sample>& samples) {
  std::string out = "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  for (const auto& s : samples)
    out += name + (s.labels.empty() ? "" : "{" + s.labels + "}") + " " + format_value(s.value) + "\n";
  return out;
}

std::string render_process_metrics(double start_unix_s) {
  std::string out;
  // /proc/self/stat: fields 14 and 15 are utime and stime in clock ticks,
  // 24 is rss in pages (proc(5)); the command (field 2) may hold spaces, so
  // count from its closing parenthesis.
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (std::getline(stat, line)) {
    const auto close = line.rfind(')');
    if (close != std::string::npos) {
      std::istringstream rest(line.substr(close + 2));
      std::vector<std::string> f{"", "", ""};  // pad: fields 1, 2 are gone; f[3] is field 3
      for (std::string w; rest >> w;) f.push_back(w);
      if (f.size() > 24) {
        const double tick = double(::sysconf(_SC_CLK_TCK));
        const double cpu = (std::stod(f[14]) + std::stod(f[15])) / tick;
        const double rss = std::stod(f[24]) * double(::sysconf(_SC_PAGESIZE));
        out += render_family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
                             {{"", cpu}});
        out += render_family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", {{"", rss}});
      }
    }
  }
  std::error_code ec;
  size_t fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++fds;
  if (!ec) out += render_family("process_open_fds", "gauge", "Number of open file descriptors.", {{"", double(fds)}});
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0)
    out += render_family("process_max_fds", "gauge", "Maximum number of open file descriptors.",
                         {{"", rl.rlim_cur == RLIM_INFINITY ? INFINITY : double(rl.rlim_cur)}});
  out += render_family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
                       {{"", start_unix_s}});
  return out;
}

}  // namespace zkfarm::supervisor
