#include "supervisor/workers/process.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "groth16/proof_json.hpp"  // write_file_atomic

namespace zkfarm::supervisor {

int pidfd_open_child(pid_t pid) { return int(::syscall(SYS_pidfd_open, pid, 0)); }

bool pidfd_signal(int pidfd, int sig) { return ::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0; }

bool process_running(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!f || !std::getline(f, text)) return false;
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

std::optional<uint64_t> process_start_time(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!f || !std::getline(f, text)) return std::nullopt;
  // Field 2 (comm) may hold spaces and parentheses: the fields after it start
  // behind the last ')'. Field 22 is then the 20th of them.
  auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  try {
    return std::stoull(field);
  } catch (...) {
    return std::nullopt;
  }
}

void write_child_records(const std::string& path, const std::vector<ChildRecord>& records) {
  std::string text;
  for (const auto& r : records) text += std::to_string(r.pid) + " " + std::to_string(r.start_time) + " " + r.id + "\n";
  write_file_atomic(path, text);
}

std::vector<ChildRecord> read_child_records(const std::string& path) {
  std::vector<ChildRecord> out;
  std::ifstream f(path);
  ChildRecord r;
  while (f >> r.pid >> r.start_time >> r.id) {
    if (r.pid > 1) out.push_back(r);
  }
  return out;
}

std::vector<std::string> kill_stale_children(const std::vector<ChildRecord>& records, int timeout_ms) {
  std::vector<std::string> log;
  std::vector<ChildRecord> killed;
  for (const auto& r : records) {
    auto now = process_start_time(r.pid);
    if (!now) {
      log.push_back("stale worker " + r.id + " (pid " + std::to_string(r.pid) + ") is gone");
      continue;
    }
    if (*now != r.start_time) {
      log.push_back("pid " + std::to_string(r.pid) + " of stale worker " + r.id +
                    " now belongs to another process: left alone");
      continue;
    }
    // Same pid and start time: the very process. A pidfd pins it between the
    // check and the signal.
    int fd = int(::syscall(SYS_pidfd_open, r.pid, 0));
    if (fd >= 0 && process_start_time(r.pid) == r.start_time && pidfd_signal(fd, SIGKILL)) {
      log.push_back("killed stale worker " + r.id + " (pid " + std::to_string(r.pid) + ")");
      killed.push_back(r);
    }
    if (fd >= 0) ::close(fd);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (const auto& r : killed) {
    while (process_running(r.pid) && process_start_time(r.pid) == r.start_time &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // not our child: it can only be polled
  }
  return log;
}

}  // namespace zkfarm::supervisor
