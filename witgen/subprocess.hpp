#pragma once
// Running a program zkfarm does not trust to finish or to behave: a compiler
// building a witness generator, or a generator itself. The child runs in a
// process group of its own, dies with its parent (PR_SET_PDEATHSIG), inherits
// no descriptor but the ones given, gets resource limits, and is killed
// (SIGKILL to the whole group) when its time is up or `cancel` turns true.
// What it writes to stdout and stderr is kept, the last `output_limit` bytes.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "witgen/sandbox.hpp"

namespace zkfarm::witgen {

/// How to run one command.
struct RunSpec {
  std::vector<std::string> argv;          ///< argv[0] is the program (a path; PATH is searched when it has no '/')
  std::string cwd;                        ///< "" : the caller's
  std::vector<std::string> env;           ///< "K=V" entries; empty: the caller's, or sandbox_environment(cwd) when sandboxed
  int stdin_fd = -1;                      ///< -1: /dev/null
  int fd3 = -1;                           ///< given to the child as descriptor 3 (-1: none)
  std::chrono::milliseconds timeout{0};   ///< 0: none
  uint64_t memory_bytes = 0;              ///< RLIMIT_DATA and RLIMIT_STACK-independent; 0: unchanged
  uint64_t file_bytes = 0;                ///< RLIMIT_FSIZE: largest file it may write; 0: unchanged
  size_t output_limit = 64 * 1024;        ///< bytes of stdout+stderr kept (the last ones)
  const std::atomic<bool>* cancel = nullptr;  ///< read every 50 ms; true: killed
  Sandbox sandbox;                        ///< circuit code: confined (sandbox.hpp); default: not
  int exec_fd = -1;                       ///< ≥ 0: exec this open file (execveat AT_EMPTY_PATH) instead of argv[0]'s path
};

/// How it ended.
struct RunResult {
  int exit_code = -1;       ///< when it exited; -1 otherwise
  int signal = 0;           ///< the signal that ended it, when one did
  bool timed_out = false;   ///< killed because the timeout passed
  bool cancelled = false;   ///< killed because `cancel` turned true
  std::string output;       ///< stdout and stderr interleaved, the last output_limit bytes
  std::chrono::milliseconds elapsed{0};
  bool ok() const { return exit_code == 0 && !timed_out && !cancelled; }
  /// One line for people: "exit code 2", "killed by signal 6 (Aborted)",
  /// "timed out after 30000 ms", "cancelled".
  std::string how() const;
  /// The last `lines` non-empty lines of the output, joined with " | ", at
  /// most 2000 bytes, anything but printable ASCII as '?'.
  std::string tail(size_t lines = 8) const;
};

/// The children run() is waiting for, process-wide. A thread that reaps
/// every child of the process (zkfarmd: waitpid(-1) as a child subreaper)
/// must peek first (waitid with WNOWAIT) while holding mutex() and leave a
/// child that owns() says is a run()'s: its thread reaps it and reads its
/// exit code. run() registers a child under the same lock as it forks it.
struct ChildRegistry {
  static std::mutex& mutex();
  static std::set<pid_t>& pids();  ///< under mutex()
  static bool owns(pid_t pid);     ///< under mutex()
};

/// Runs `spec` to its end. Throws std::system_error when the child cannot be
/// started (fork, pipe); a program that cannot be executed is exit code 127
/// with the reason in `output`.
RunResult run(const RunSpec& spec);

}  // namespace zkfarm::witgen
