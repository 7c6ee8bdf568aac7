#pragma once
// What every worker's main() shares: its flags (endpoint, arena, id, threads,
// heartbeats), their parsing with the worker exit codes
// (protocol/worker_channel.hpp), and the mapping of start-up failures to
// those codes.
#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

#include "protocol/worker_channel.hpp"

namespace zkfarm::worker_kit {

/// The flags zkfarmd passes to every worker.
struct WorkerFlags {
  std::string endpoint, arena, id;
  unsigned threads = 0;
  unsigned heartbeat_ms = 1000, heartbeat_timeout_ms = 10000;
};

/// Adds the common flags to `app` (threads' help text and default from `flags`).
void add_worker_flags(CLI::App& app, WorkerFlags& flags, const std::string& threads_help);

/// Parses argv. Returns the exit code main() should return (help, version:
/// 0; bad flags: kExitUsage with one line on stderr), or nullopt to go on.
std::optional<int> parse_worker_flags(CLI::App& app, int argc, char** argv, const WorkerFlags& flags,
                                      const std::string& program);

/// WorkerOptions for WorkerChannel from the flags; reads ZKFARM_FAULT (throws
/// std::invalid_argument when malformed).
protocol::WorkerOptions worker_options(const WorkerFlags& flags, const std::string& kind,
                                       const std::string& version, const std::string& backend);

/// Runs `body` and maps what escapes it to the worker exit codes: a bad
/// ZKFARM_FAULT (std::invalid_argument) kExitUsage; no arena or no socket
/// (shm::ArenaError, ChannelError) kExitEnvironment; anything else kExitInternal.
/// Each with one line on stderr starting with `program`.
int run_worker(const std::string& program, const std::function<int()>& body);

}  // namespace zkfarm::worker_kit
