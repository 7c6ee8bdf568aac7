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
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <httplib.h>
#include <thread>

#include "supervisor/config.hpp"
#include "supervisor/log_sink.hpp"
#include "supervisor/state_lock.hpp"
#include "supervisor/supervisor.hpp"

namespace {

std::string self_dir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

// GET /status on cfg.http_address ("HOST:PORT"), served from the loop's snapshot.
class HttpStatus {
 public:
  HttpStatus(const std::string& address, zkfarm::supervisor::Supervisor& sup) {
    auto colon = address.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("http_address must be HOST:PORT, got '" + address + "'");
    host_ = address.substr(0, colon);
    port_ = std::stoi(address.substr(colon + 1));
    server_.Get("/status", [&sup](const httplib::Request&, httplib::Response& res) {
      res.set_content(sup.status_snapshot(), "application/json");
    });
    server_.Get("/metrics", [&sup](const httplib::Request&, httplib::Response& res) {
      res.set_content(sup.metrics_snapshot(), "text/plain; version=0.0.4");
    });
    // Healthy: the supervisor's loop is alive. Ready: intake open, every worker READY.
    server_.Get("/healthz", [&sup](const httplib::Request&, httplib::Response& res) {
      res.status = sup.healthy() ? 200 : 503;
      res.set_content(sup.healthy() ? "ok\n" : "loop stalled\n", "text/plain");
    });
    server_.Get("/readyz", [&sup](const httplib::Request&, httplib::Response& res) {
      res.status = sup.ready() ? 200 : 503;
      res.set_content(sup.ready() ? "ready\n" : "not ready\n", "text/plain");
    });
    if (!server_.bind_to_port(host_.c_str(), port_)) throw std::runtime_error("cannot listen on " + address);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~HttpStatus() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  httplib::Server server_;
  std::string host_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace zkfarm::supervisor;
  // Block the signals the loop takes through its signalfd before anything else:
  // a SIGTERM during start-up then waits for the loop and becomes a clean stop.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGCHLD, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&mask, s);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  // A closed stderr (a pipe whose reader went away) must not kill the farm.
  ::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"zkfarmd: supervisor of a zkfarm Groth16 proving farm (runs in the foreground)"};
  Config cfg;
  std::string config_file;
  app.add_option("--state-dir", cfg.state_dir, "state dir: lock, sockets, logs (required)")->required();
  app.add_option("--config", config_file, "TOML configuration file (docs/configuration.md)");
  // Flags override the file: parse into optionals and apply after loading it.
  std::optional<unsigned> synth_workers, synth_threads, gpu_threads;
  std::optional<uint64_t> arena_mib;
  std::optional<std::string> backend, gpu_devices, http_address, synth_binary, gpu_binary, log_level;
  app.add_option("--synth-workers", synth_workers, "synthesis workers (default: cores - 1)");
  app.add_option("--synth-threads", synth_threads, "threads per synthesis worker");
  app.add_option("--gpu-threads", gpu_threads, "CPU-backend threads per GPU worker (0: all)");
  app.add_option("--arena-mib", arena_mib, "arena size (the memory budget), MiB");
  app.add_option("--backend", backend, "auto, cpu or cuda");
  app.add_option("--gpu-devices", gpu_devices, "auto, none, or a list like 0,1");
  app.add_option("--http", http_address, "HOST:PORT for GET /status, /metrics, /healthz, /readyz (default: off)");
  app.add_option("--synth-binary", synth_binary, "path of zkfarm-synth");
  app.add_option("--gpu-binary", gpu_binary, "path of zkfarm-gpu");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
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
    if (arena_mib) cfg.arena_mib = *arena_mib;
    if (backend) cfg.backend = *backend;
    if (gpu_devices) cfg.gpu_devices = *gpu_devices;
    if (http_address) cfg.http_address = *http_address;
    if (synth_binary) cfg.synth_binary = *synth_binary;
    if (gpu_binary) cfg.gpu_binary = *gpu_binary;
    if (log_level) cfg.log_level = *log_level;
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
    Supervisor sup(cfg, log);
    std::unique_ptr<HttpStatus> http;
    if (!cfg.http_address.empty()) {
      http = std::make_unique<HttpStatus>(cfg.http_address, sup);
      log->info("HTTP status on http://{}/status", cfg.http_address);
    }
    return sup.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarmd: %s\n", e.what());
    return 1;
  }
}
