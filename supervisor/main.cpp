// zkfarmd: the supervisor of a zkfarm instance. Runs in the foreground (init
// systems and containers supervise it; it never daemonizes), logs to stderr and
// to STATE/zkfarmd.log.
//   zkfarmd --state-dir DIR [--config FILE] [flags overriding the config]
// Exit codes: 0 stopped cleanly; 1 could not start (another instance holds the
// state dir, bad config, no arena); 2 usage.
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "supervisor/config.hpp"
#include "supervisor/status/http_server.hpp"
#include "supervisor/log_sink.hpp"
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
  Config cfg;
  std::string config_file;
  app.add_option("--state-dir", cfg.state_dir, "state dir: lock, sockets, logs (required)")->required();
  app.add_option("--config", config_file, "TOML configuration file (docs/configuration.md)");
  // Flags override the file: parse into optionals and apply after loading it.
  std::optional<unsigned> synth_workers, synth_threads, gpu_threads, gpu_queue_depth;
  std::optional<uint64_t> arena_mib;
  std::optional<std::string> backend, gpu_devices, http_address, synth_binary, gpu_binary, log_level;
  app.add_option("--synth-workers", synth_workers, "synthesis workers (default: cores - 1)");
  app.add_option("--synth-threads", synth_threads, "threads per synthesis worker");
  app.add_option("--gpu-threads", gpu_threads, "CPU-backend threads per GPU worker (0: all)");
  app.add_option("--arena-mib", arena_mib, "arena size (the memory budget), MiB");
  app.add_option("--gpu-queue-depth", gpu_queue_depth, "partitions a GPU worker holds at once (1 computing, the rest queued)")
      ->check(CLI::Range(1u, 32u));
  app.add_option("--backend", backend, "auto, cpu or cuda");
  app.add_option("--gpu-devices", gpu_devices, "auto, none, or a list like 0,1");
  app.add_option("--http", http_address, "HOST:PORT for GET /status, /metrics, /healthz, /readyz (default: off)");
  app.add_option("--synth-binary", synth_binary, "path of zkfarm-synth");
  app.add_option("--gpu-binary", gpu_binary, "path of zkfarm-gpu");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  std::optional<std::string> queue_url, host_id, shared_dir;
  app.add_option("--queue", queue_url, "a PostgreSQL queue shared with other hosts (postgresql://…; docs/cluster.md)");
  app.add_option("--host-id", host_id, "this host's name in the shared queue (default: hostname:state dir)");
  app.add_option("--shared-dir", shared_dir, "with --queue: a folder every host mounts");
  app.set_version_flag("--version", "zkfarmd 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    if (!config_file.empty()) cfg.load_toml(config_file);
    if (synth_workers) cfg.synth_workers = *synth_workers;
    if (synth_threads) cfg.synth_threads = *synth_threads;
    if (gpu_threads) cfg.gpu_threads = *gpu_threads;
    if (gpu_queue_depth) cfg.gpu_queue_depth = *gpu_queue_depth;
    if (arena_mib) cfg.arena_mib = *arena_mib;
    if (backend) cfg.backend = *backend;
    if (gpu_devices) cfg.gpu_devices = *gpu_devices;
    if (http_address) cfg.http_address = *http_address;
    if (synth_binary) cfg.synth_binary = *synth_binary;
    if (gpu_binary) cfg.gpu_binary = *gpu_binary;
    if (log_level) cfg.log_level = *log_level;
    if (queue_url && pg_url_has_password(*queue_url))
      throw ConfigError("--queue: the URL holds a password, which every local user reads in the process list; "
                        "keep it in ~/.pgpass (or PGPASSFILE), or in queue_url of a config file of mode 0600");
    if (queue_url) cfg.queue_url = *queue_url;
    if (host_id) cfg.host_id = *host_id;
    if (shared_dir) cfg.shared_dir = *shared_dir;
    cfg.state_dir = std::filesystem::absolute(cfg.state_dir).lexically_normal().string();
    cfg.finalize(self_dir());
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "zkfarmd: %s\n", e.what());
    return 1;
  }

  try {
    StateLock lock(cfg.state_dir);
    auto stderr_sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    auto file_sink = std::make_shared<ReopenableFileSink>(cfg.state_dir + "/zkfarmd.log");  // SIGHUP reopens it
    auto log = std::make_shared<spdlog::logger>("zkfarmd", spdlog::sinks_init_list{stderr_sink, file_sink});
    log->set_level(spdlog::level::from_str(cfg.log_level));
    log->flush_on(spdlog::level::info);
    auto http = bind_http(cfg, log);
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
                   .ready = [s] { return s->ready(); }});
      log->info("HTTP on http://{}/ (status, metrics, healthz, readyz): at most {} connections, {} ms per request, "
                "status {}", http->address(), http->max_connections(), cfg.http_request_timeout_ms,
                cfg.http_status_detail ? "in full" : "as counts");
    }
    return sup.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarmd: %s\n", e.what());
    return 1;
  }
}
