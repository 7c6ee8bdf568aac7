// zkfarm-api: proving as a service (docs/api.md). An HTTPS API for remote
// clients in front of one zkfarmd (or any host of a cluster: its jobs go to
// the shared queue), run as a process of its own so that a fault in the
// network-facing code never takes the farm down, and so that it can be
// restarted or upgraded on its own. It talks to zkfarmd through the control
// socket like zkfarmctl; tenants, tokens, uploads and the tenants' jobs live
// in its own store (API_DIR/api.sqlite).
#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <iostream>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "version/build_info.hpp"
#include "api/farm_link.hpp"
#include "api/http_server.hpp"
#include "api/service.hpp"
#include "supervisor/clock.hpp"
#include "api/store.hpp"

namespace {

using zkfarm::supervisor::wall_ms;

// Makes `dir` (0700) or checks the one there: a directory, ours, not open to
// group or others (it holds tokens' hashes and tenants' files).
void own_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error(dir + ": cannot create: " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw std::runtime_error(dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw std::runtime_error(dir + ": not a directory (a symlink is refused)");
  if (st.st_uid != ::geteuid()) throw std::runtime_error(dir + ": owned by uid " + std::to_string(st.st_uid) + ", not by this process's user");
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", unsigned(st.st_mode & 0777));
    throw std::runtime_error(dir + ": open to group or others (mode " + mode + "); chmod 700");
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace zkfarm::api;
  CLI::App app{"zkfarm-api: an authenticated HTTPS API in front of zkfarmd (docs/api.md)"};
  app.set_version_flag("--version", zkfarm::build_info::version_line("zkfarm-api"));
  app.set_config("--config", "", "a TOML file of these options (key = value, names without the dashes)");
  std::string state_dir, api_dir, listen = "127.0.0.1:8443", cert, key;
  bool allow_plain = false;
  ServerOptions sopt = api_server_options();
  ServiceOptions vopt;
  app.add_option("--state-dir", state_dir, "zkfarmd's state dir (its control.sock)")->required()->envname("ZKFARM_STATE_DIR");
  app.add_option("--api-dir", api_dir, "zkfarm-api's own folder (default STATE/api): its store and uploads");
  app.add_option("--listen", listen, "HOST:PORT to serve")->capture_default_str();
  app.add_option("--tls-cert", cert, "the server's certificate chain (PEM)");
  app.add_option("--tls-key", key, "its private key (PEM)");
  app.add_flag("--allow-plain-http", allow_plain, "serve plain HTTP on a non-loopback address (behind a TLS proxy)");
  app.add_option("--max-connections", sopt.max_connections, "open connections at most")->capture_default_str();
  app.add_option("--max-connections-per-address", sopt.max_per_address, "from one IP address")->capture_default_str();
  app.add_option("--header-timeout-ms", sopt.header_timeout_ms, "TLS handshake and a request's head, at most")->capture_default_str();
  app.add_option("--min-body-rate", sopt.min_body_rate, "bytes/s a request body must keep up")->capture_default_str();
  app.add_option("--io-threads", sopt.io_threads, "threads serving connections")->capture_default_str();
  app.add_option("--workers", vopt.fast_workers, "threads for reads")->capture_default_str();
  app.add_option("--submit-workers", vopt.slow_workers, "threads for submits and circuit registrations")->capture_default_str();
  app.add_option("--wait-workers", vopt.wait_workers, "long polls held at once")->capture_default_str();
  app.add_option("--max-upload-bytes", vopt.max_upload_bytes, "one upload, at most (413)")->capture_default_str();
  app.add_option("--max-json-bytes", vopt.max_json_bytes, "one JSON body, at most (413)")->capture_default_str();
  app.add_option("--max-partitions", vopt.max_partitions, "partitions of one job, at most")->capture_default_str();
  app.add_option("--default-max-queued-partitions", vopt.default_max_queued_partitions,
                 "a tenant's unproved partitions, unless `zkfarmctl tenant set` says otherwise (429)")
      ->capture_default_str();
  app.add_option("--default-max-stored-bytes", vopt.default_max_stored_bytes,
                 "a tenant's uploads kept, unless `zkfarmctl tenant set` says otherwise (429)")
      ->capture_default_str();
  app.add_option("--upload-ttl-s", vopt.upload_ttl_ms, "uploads no circuit uses are removed after this many seconds")
      ->transform([](std::string s) { return std::to_string(std::stoll(s) * 1000); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  auto log = spdlog::stderr_logger_mt("zkfarm-api");
  log->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
  if (cert.empty() != key.empty()) {
    std::cerr << "zkfarm-api: --tls-cert and --tls-key go together\n";
    return 2;
  }
  if (cert.empty() && !is_loopback_host(listen) && !allow_plain) {
    std::cerr << "zkfarm-api: refusing plain HTTP on " << listen
              << " (not a loopback address): give --tls-cert and --tls-key, or --allow-plain-http behind a TLS proxy\n";
    return 2;
  }
  if (api_dir.empty()) api_dir = state_dir + "/api";
  try {
    ::umask(077);
    own_dir(api_dir);
    own_dir(api_dir + "/uploads");
    own_dir(api_dir + "/tmp");
    Store store(api_dir + "/api.sqlite", /*create=*/true);
    vopt.api_dir = api_dir;
    vopt.log = [log](const std::string& line) { log->info("{}", line); };
    Service service(vopt, store, FarmLink(state_dir, 10000));
    sopt.address = listen;
    sopt.tls_cert = cert;
    sopt.tls_key = key;
    sopt.upload_dir = api_dir + "/uploads";
    sopt.log = [log](zkfarm::http::LogLevel, std::string_view line) { log->warn("{}", line); };
    HttpServer server(sopt, service);

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);  // before the threads start: they inherit it
    ::signal(SIGPIPE, SIG_IGN);
    server.start();
    const std::string where = std::string(server.tls() ? "https" : "http") + "://" +
                              listen.substr(0, listen.rfind(':')) + ":" + std::to_string(server.port());
    log->info("listening on {} for zkfarmd at {}; store {}", where, state_dir, store.path());
    std::cout << "listening on " << where << std::endl;
    sd_notify(0, "READY=1");
    service.sweep(wall_ms());
    for (;;) {
      timespec tick{60, 0};
      const int sig = sigtimedwait(&sigs, nullptr, &tick);
      if (sig == SIGTERM || sig == SIGINT) break;
      try {
        service.sweep(wall_ms());
      } catch (const std::exception& e) {
        log->warn("sweep: {}", e.what());
      }
    }
    sd_notify(0, "STOPPING=1");
    log->info("stopping: no new connections; waiting for submits in progress (up to 60 s)");
    server.stop();
    if (!service.wait_for_submits(60000)) log->warn("stopping with submits still in progress");
    // The pools' threads are detached and may still hold a long poll: the
    // process ends here, without running destructors under them.
    log->info("stopped");
    log->flush();
    std::fflush(nullptr);
    ::_exit(0);
  } catch (const std::exception& e) {
    std::cerr << "zkfarm-api: " << e.what() << "\n";
    return 1;
  }
}
