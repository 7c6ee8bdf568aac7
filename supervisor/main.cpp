// zkfarmd: the supervisor of a zkfarm instance. Runs in the foreground (init
// systems and containers supervise it; it never daemonizes), logs to stderr
// (with journald priorities under systemd) and to log_file (STATE/zkfarmd.log).
//   zkfarmd --state-dir DIR [--config FILE] [flags overriding the config]
//   zkfarmd --check-config --state-dir DIR [--config FILE] [flags]
// Exit codes (docs/operations.md): 0 stopped cleanly (or --check-config found
// the configuration valid); 1 could not start or failed (another instance
// holds the state dir, no arena, an address in use); 78 (EX_CONFIG) the
// configuration is wrong: the file, a flag, a value, a group or binary it
// names. The unit's RestartPreventExitStatus=78: restarting cannot fix it.
#include <spdlog/spdlog.h>
#include <signal.h>
#include <sysexits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "version/build_info.hpp"
#include "cli/numbers.hpp"
#include "supervisor/config.hpp"
#include "supervisor/model/peer.hpp"
#include "supervisor/status/http_server.hpp"
#include "supervisor/log_sink.hpp"
#include "supervisor/stderr_sink.hpp"
#include "supervisor/signals.hpp"
#include "supervisor/state_lock.hpp"
#include "supervisor/supervisor.hpp"

namespace {

std::string self_dir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

// The HTTP connection cap within the descriptor budget: a cap above a quarter
// of RLIMIT_NOFILE's soft limit would let HTTP clients take the descriptors
// the control socket, the workers' channel and the journal need (libzmq
// aborts when an accept finds none), so it is lowered, with a warning.
unsigned http_connection_cap(unsigned configured, spdlog::logger& log) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return configured;
  const unsigned budget = static_cast<unsigned>(std::min<rlim_t>(rl.rlim_cur / 4, 1u << 30));
  if (configured <= budget) return configured;
  const unsigned cap = std::max(1u, budget);
  log.warn("http_max_connections {} is above a quarter of the descriptor limit ({}): using {}", configured,
           static_cast<uint64_t>(rl.rlim_cur), cap);
  return cap;
}

// GET /status, /metrics, /healthz, /readyz on cfg.http_address. Binds at once,
// so an address in use stops the start (exit 1) before the arena and the
// workers exist; serves once the supervisor is there to answer.
std::unique_ptr<zkfarm::http::HttpServer> bind_http(const zkfarm::supervisor::Config& cfg,
                                                    const std::shared_ptr<spdlog::logger>& log) {
  if (cfg.http_address.empty()) return nullptr;
  zkfarm::http::ServerOptions o;
  o.address = cfg.http_address;
  o.max_connections = http_connection_cap(cfg.http_max_connections, *log);
  o.request_timeout_ms = cfg.http_request_timeout_ms;
  o.status_detail = cfg.http_status_detail;
  o.log = [log](zkfarm::http::LogLevel level, std::string_view line) {
    if (level == zkfarm::http::LogLevel::kWarn)
      log->warn("{}", line);
    else
      log->info("{}", line);
  };
  return std::make_unique<zkfarm::http::HttpServer>(std::move(o));
}

// The soft limit on descriptors up to the hard one (systemd's default soft
// limit is 1024): connections are capped far below it (listener_cap.hpp, the
// HTTP server), so no client can bring zkfarmd to EMFILE, where libzmq aborts.
void raise_descriptor_limit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = rl.rlim_max == RLIM_INFINITY ? rlim_t(1) << 20 : rl.rlim_max;
  if (rl.rlim_cur < want) {
    rl.rlim_cur = want;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// Why zkfarmd cannot start, on stderr; returns `code`. Under systemd every
// line is at error priority, so `journalctl -p err` shows why the unit failed
// (the logger does not exist yet, or has failed with it).
int fatal(int code, const std::string& why) {
  const char* prio = zkfarm::supervisor::stderr_is_journal() ? "<3>" : "";
  std::string text = std::string(prio) + "zkfarmd: ";
  for (char c : why) text += c == '\n' ? std::string("\n") + prio : std::string(1, c);
  std::fprintf(stderr, "%s\n", text.c_str());
  return code;
}

// --check-config's report: what the configuration resolves to, one key a
// line in the file's own syntax, so it can be pasted back into a file.
void print_resolved(const zkfarm::supervisor::Config& c, const std::string& file) {
  std::printf("zkfarmd: the configuration is valid (%s)\n", file.empty() ? "defaults and flags" : file.c_str());
  std::printf("state_dir = \"%s\"\nlog_file = \"%s\"\nlog_level = \"%s\"\n", c.state_dir.c_str(),
              c.log_path().c_str(), c.log_level.c_str());
  std::printf("synth_workers = %u\nsynth_threads = %u\nbackend = \"%s\"\ngpu_devices = \"%s\"\n", c.synth_workers,
              c.synth_threads, c.backend.c_str(), c.gpu_devices.c_str());
  std::printf("synth_batch = %u\n", c.synth_batch);
  std::printf("arena_mib = %llu\nhttp_address = \"%s\"\n", static_cast<unsigned long long>(c.arena_mib),
              c.http_address.c_str());
  std::printf("synth_binary = \"%s\"\ngpu_binary = \"%s\"\n", c.synth_binary.c_str(), c.gpu_binary.c_str());
  std::printf("control_group = \"%s\"\nadmin_group = \"%s\"%s\n", c.control_group.c_str(), c.admin_group.c_str(),
              zkfarm::supervisor::group_id(c.admin_group) ? "" : "  # no such group here: admins are root and zkfarmd's user");
  std::printf("queue_url = \"%s\"\n", c.queue_url.empty() ? "" : "(set)");
  std::printf("witness_engine = \"%s\"\nwitness_graph_max_nodes = %llu\n", c.witness_engine.c_str(),
              static_cast<unsigned long long>(c.witness_graph_max_nodes));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace zkfarm::supervisor;
  // Block the signals the loop takes through its signalfd before anything else:
  // a SIGTERM during start-up then waits for the loop and becomes a clean stop.
  const sigset_t mask = loop_signals();
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  // A closed stderr (a pipe whose reader went away) must not kill the farm.
  ::signal(SIGPIPE, SIG_IGN);
  // Everything zkfarmd creates is private unless it says otherwise (sockets,
  // the journal, the copies of inputs; outputs get their mode explicitly).
  ::umask(077);
  raise_descriptor_limit();
  CLI::App app{"zkfarmd: supervisor of a zkfarm Groth16 proving farm (runs in the foreground)"};
  app.get_formatter()->column_width(34);
  const Config defaults;
  Config cfg;
  std::string config_file;
  bool check_config = false;
  app.add_option("--state-dir", cfg.state_dir, "state dir: lock, sockets, journal, log (required)")->required();
  app.add_option("--config", config_file, "TOML configuration file (docs/configuration.md)");
  app.add_flag("--check-config", check_config,
               "check the configuration (file and flags), print what it resolves to, and exit: 0 valid, 78 not");
  // Flags override the file: parse into optionals and apply after loading it.
  // The ranges are the file's (config.cpp): a negative number is refused, not wrapped.
  std::optional<unsigned> synth_workers, synth_threads, synth_batch, gpu_threads, gpu_queue_depth;
  std::optional<uint64_t> arena_mib;
  std::optional<std::string> backend, gpu_devices, http_address, synth_binary, gpu_binary, log_level, log_file;
  app.add_option("--synth-workers", synth_workers, "synthesis workers; 0: cores - 1")
      ->check(zkfarm::cli::whole_number(0, 1024))->default_str("0");
  app.add_option("--synth-threads", synth_threads, "threads per synthesis worker")
      ->check(zkfarm::cli::whole_number(1, 1024))->default_str(std::to_string(defaults.synth_threads));
  app.add_option("--synth-batch", synth_batch, "partitions of one job a synthesis worker takes at once")
      ->check(zkfarm::cli::whole_number(1, 64))->default_str(std::to_string(defaults.synth_batch));
  app.add_option("--gpu-threads", gpu_threads, "CPU-backend threads per GPU worker; 0: all cores")
      ->check(zkfarm::cli::whole_number(0, 1024))->default_str(std::to_string(defaults.gpu_threads));
  app.add_option("--arena-mib", arena_mib, "arena size (the memory budget), MiB")
      ->check(zkfarm::cli::whole_number(1, uint64_t(1) << 30))->default_str(std::to_string(defaults.arena_mib));
  app.add_option("--gpu-queue-depth", gpu_queue_depth, "partitions a GPU worker holds at once (1 computing, the rest queued)")
      ->check(zkfarm::cli::whole_number(1, 32))->default_str(std::to_string(defaults.gpu_queue_depth));
  app.add_option("--backend", backend, "prover backend of the GPU workers")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))->default_str(defaults.backend);
  app.add_option("--gpu-devices", gpu_devices, "auto, none, or a list like 0,1")->default_str(defaults.gpu_devices);
  app.add_option("--http", http_address, "HOST:PORT for GET /status, /metrics, /healthz, /readyz; empty: off")
      ->default_str("off");
  app.add_option("--synth-binary", synth_binary, "path of zkfarm-synth")->default_str("zkfarm-synth beside zkfarmd");
  app.add_option("--gpu-binary", gpu_binary, "path of zkfarm-gpu")->default_str("zkfarm-gpu beside zkfarmd");
  app.add_option("--log-level", log_level, "log level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))->default_str(defaults.log_level);
  app.add_option("--log-file", log_file, "log file, relative to the state dir; \"\": none (journal or stderr only)")
      ->default_str(defaults.log_file);
  std::optional<std::string> queue_url, host_id, shared_dir;
  app.add_option("--queue", queue_url, "a PostgreSQL queue shared with other hosts (postgresql://…; docs/cluster.md)")
      ->default_str("none: SQLite journal in the state dir");
  app.add_option("--host-id", host_id, "this host's name in the shared queue")->default_str("hostname:state dir");
  app.add_option("--shared-dir", shared_dir, "with --queue: a folder every host mounts");
  app.set_version_flag("--version", zkfarm::build_info::version_line("zkfarmd"));
  app.footer("Exit codes: 0 stopped cleanly (--check-config: valid); 1 could not start or failed; "
             "78 configuration error (file, flag, value).\nDocs: docs/operations.md, docs/configuration.md.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a wrong flag is a configuration error.
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return fatal(EX_CONFIG, std::string(e.what()) + " (zkfarmd --help lists the options)");
  }

  try {
    if (!config_file.empty()) {
      cfg.load_toml(config_file);
      cfg.config_file = std::filesystem::absolute(config_file).lexically_normal().string();
    }
    if (synth_workers) cfg.synth_workers = *synth_workers;
    if (synth_threads) cfg.synth_threads = *synth_threads;
    if (synth_batch) cfg.synth_batch = *synth_batch;
    if (gpu_threads) cfg.gpu_threads = *gpu_threads;
    if (gpu_queue_depth) cfg.gpu_queue_depth = *gpu_queue_depth;
    if (arena_mib) cfg.arena_mib = *arena_mib;
    if (backend) cfg.backend = *backend;
    if (gpu_devices) cfg.gpu_devices = *gpu_devices;
    if (http_address) cfg.http_address = *http_address;
    if (synth_binary) cfg.synth_binary = *synth_binary;
    if (gpu_binary) cfg.gpu_binary = *gpu_binary;
    if (log_level) cfg.log_level = *log_level;
    if (log_file) cfg.log_file = *log_file;
    if (queue_url && pg_url_has_password(*queue_url))
      throw ConfigError("--queue: the URL holds a password, which every local user reads in the process list; "
                        "keep it in ~/.pgpass (or PGPASSFILE), or in queue_url of a config file of mode 0600");
    if (queue_url) cfg.queue_url = *queue_url;
    if (host_id) cfg.host_id = *host_id;
    if (shared_dir) cfg.shared_dir = *shared_dir;
    cfg.state_dir = std::filesystem::absolute(cfg.state_dir).lexically_normal().string();
    cfg.finalize(self_dir());
    cfg.check_host();
  } catch (const ConfigError& e) {
    return fatal(EX_CONFIG, e.what());
  }
  if (check_config) {
    print_resolved(cfg, config_file);
    return 0;
  }

  try {
    StateLock lock(cfg.state_dir);
    std::vector<spdlog::sink_ptr> sinks{make_stderr_sink()};
    std::shared_ptr<ReopenableFileSink> file_sink;
    if (!cfg.log_path().empty()) {
      // SIGHUP reopens it; the operators (admin_group) read it.
      file_sink = std::make_shared<ReopenableFileSink>(cfg.log_path(), group_id(cfg.admin_group));
      sinks.push_back(file_sink);
    }
    auto log = std::make_shared<spdlog::logger>("zkfarmd", sinks.begin(), sinks.end());
    log->set_level(spdlog::level::from_str(cfg.log_level));
    log->flush_on(spdlog::level::info);
    if (file_sink && !file_sink->group_error().empty()) log->warn("{}", file_sink->group_error());
    auto http = bind_http(cfg, log);
    // Status shows the address bound (port 0 in the file: the port chosen).
    if (http) cfg.http_address = http->address();
    Supervisor sup(cfg, log);
    // The HTTP thread reads the supervisor: it stops before sup goes, also
    // when run() throws.
    struct StopHttp {
      std::unique_ptr<zkfarm::http::HttpServer>& server;
      ~StopHttp() { server.reset(); }
    } stop_http{http};
    if (http) {
      Supervisor* s = &sup;
      http->start({.status = [s] { return s->status_snapshot(); },
                   .metrics = [s] { return s->metrics_snapshot(); },
                   .healthy = [s] { return s->healthy(); },
                   .ready = [s] { return s->ready(); },
                   .not_ready_reason = [s] { return s->ready_reason(); }});
      log->info("HTTP on http://{}/ (status, metrics, healthz, readyz): at most {} connections, {} ms per request, "
                "status {}", http->address(), http->max_connections(), cfg.http_request_timeout_ms,
                cfg.http_status_detail ? "in full" : "as counts");
    }
    return sup.run();
  } catch (const ConfigError& e) {
    return fatal(EX_CONFIG, e.what());
  } catch (const std::exception& e) {
    return fatal(1, e.what());
  }
}
