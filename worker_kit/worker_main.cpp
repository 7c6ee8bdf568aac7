#include "worker_kit/worker_main.hpp"

#include <cstdio>

#include "shm/arena.hpp"

namespace zkfarm::worker_kit {

void add_worker_flags(CLI::App& app, WorkerFlags& flags, const std::string& threads_help) {
  app.add_option("--endpoint", flags.endpoint, "the supervisor's workers socket, e.g. ipc:///var/lib/zkfarm/workers.sock")
      ->required();
  app.add_option("--arena", flags.arena,
                 "the shared-memory arena: fd:N (a memfd at descriptor N, as zkfarmd passes it) or NAME (/dev/shm/NAME)")
      ->required();
  app.add_option("--id", flags.id, "worker id (routing id, READY's worker)")->capture_default_str();
  app.add_option("--threads", flags.threads, threads_help)->capture_default_str()->check(CLI::Range(0u, 1024u));
  app.add_option("--heartbeat-ms", flags.heartbeat_ms, "heartbeat period (ms)")
      ->capture_default_str()
      ->check(CLI::Range(10u, 600000u));
  app.add_option("--heartbeat-timeout-ms", flags.heartbeat_timeout_ms,
                 "exit after this long without a message from the supervisor (ms)")
      ->capture_default_str()
      ->check(CLI::Range(20u, 3600000u));
  app.footer(protocol::kFaultHelp);
}

std::optional<int> parse_worker_flags(CLI::App& app, int argc, char** argv, const WorkerFlags& flags,
                                      const std::string& program) {
  try {
    app.parse(argc, argv);
    if (flags.heartbeat_timeout_ms <= flags.heartbeat_ms)
      throw CLI::ValidationError("--heartbeat-timeout-ms must exceed --heartbeat-ms");
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", program.c_str(), e.what());
    return protocol::kExitUsage;
  }
  return std::nullopt;
}

protocol::WorkerOptions worker_options(const WorkerFlags& flags, const std::string& kind,
                                       const std::string& version, const std::string& backend) {
  protocol::WorkerOptions opt;
  opt.fault = protocol::TestFault::from_env();
  opt.endpoint = flags.endpoint;
  opt.worker_id = flags.id;
  opt.kind = kind;
  opt.version = version;
  opt.backend = backend;
  opt.heartbeat = std::chrono::milliseconds(flags.heartbeat_ms);
  opt.heartbeat_timeout = std::chrono::milliseconds(flags.heartbeat_timeout_ms);
  return opt;
}

int run_worker(const std::string& program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::invalid_argument& e) {  // ZKFARM_FAULT
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return protocol::kExitUsage;
  } catch (const shm::ArenaError& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return protocol::kExitEnvironment;
  } catch (const protocol::ChannelError& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return protocol::kExitEnvironment;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", program.c_str(), e.what());
    return protocol::kExitInternal;
  }
}

}  // namespace zkfarm::worker_kit
