#pragma once
// Process handles without PID-reuse races: a pidfd per child (pidfd_open(2)),
// signals sent through it (pidfd_send_signal(2)), and a record of each child's
// pid plus its start time (/proc/PID/stat field 22) so that a later instance
// can tell its predecessor's leftover workers from unrelated processes that
// reused their pids.
// glibc 2.36 declares pidfd_open without C linkage (design.md §8), so these go
// through syscall(2).
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zkfarm::supervisor {

/// A pidfd for `pid` (a child of ours, not yet reaped), or −1 with errno set.
int pidfd_open_child(pid_t pid);
/// Sends `sig` through the pidfd; false (errno set) if the process is gone.
bool pidfd_signal(int pidfd, int sig);

/// True while `pid` exists and is not a zombie.
bool process_running(pid_t pid);

/// The start time of `pid` in clock ticks since boot, or nullopt if there is
/// no such process.
std::optional<uint64_t> process_start_time(pid_t pid);

/// One worker process of an instance, as recorded in STATE/children.
struct ChildRecord {
  pid_t pid = 0;
  uint64_t start_time = 0;  ///< clock ticks since boot (/proc/PID/stat field 22)
  std::string id;           ///< worker id, for the log
};

/// Writes the records atomically to `path` (one "pid start_time id" a line).
void write_child_records(const std::string& path, const std::vector<ChildRecord>& records);
/// Reads them back; a missing or malformed file reads as none.
std::vector<ChildRecord> read_child_records(const std::string& path);

/// Kills the recorded processes that are still the same processes (same pid
/// AND same start time), and waits up to `timeout_ms` for them to vanish.
/// Processes whose pid now belongs to another process are never touched.
/// Returns a line per record saying what happened, for the log.
std::vector<std::string> kill_stale_children(const std::vector<ChildRecord>& records, int timeout_ms);

}  // namespace zkfarm::supervisor
