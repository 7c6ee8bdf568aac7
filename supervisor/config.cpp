#include "supervisor/config.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>
#include <toml++/toml.h>
#include <vector>

#include "cli/suggest.hpp"
#include "files/file_error.hpp"
#include "files/input_file.hpp"
#include "supervisor/model/peer.hpp"

namespace zkfarm::supervisor {

namespace {

// "FILE:LINE: KEY" of a key's value, as compilers name a fault's place.
std::string where(const std::string& file, const toml::node& node, const char* key) {
  const auto line = node.source().begin.line;
  return file + (line ? ":" + std::to_string(line) : std::string()) + ": " + key;
}

template <class T>
void read_uint(const toml::table& t, const std::string& file, const char* key, T& out, uint64_t lo, uint64_t hi) {
  const toml::node* node = t.get(key);
  if (!node) return;
  auto v = node->value<int64_t>();
  if (!v || !node->is_integer()) throw ConfigError(where(file, *node, key) + ": expected an integer");
  if (*v < int64_t(lo) || uint64_t(*v) > hi) {
    throw ConfigError(where(file, *node, key) + ": " + std::to_string(*v) + " is out of range [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  out = T(*v);
}

void read_str(const toml::table& t, const std::string& file, const char* key, std::string& out) {
  const toml::node* node = t.get(key);
  if (!node) return;
  if (!node->is_string()) throw ConfigError(where(file, *node, key) + ": expected a string");
  out = *node->value<std::string>();
}

void read_bool(const toml::table& t, const std::string& file, const char* key, bool& out) {
  const toml::node* node = t.get(key);
  if (!node) return;
  if (!node->is_boolean()) throw ConfigError(where(file, *node, key) + ": expected true or false");
  out = *node->value<bool>();
}

}  // namespace

namespace {

// The file's text, or a ConfigError with the errno: toml++ reports a missing
// file only as "File could not be opened for reading". Opened as every
// outside file is (files/input_file.hpp: a regular file only, never blocking
// on a FIFO), and read up to 1 MiB.
std::string read_config_file(const std::string& path) {
  files::UniqueFd fd;
  try {
    fd = files::open_regular_file(path);
  } catch (const files::FileError& e) {
    throw ConfigError(e.code() ? path + ": cannot read the configuration file: " + std::strerror(e.code())
                               : std::string(e.what()));
  }
  constexpr size_t kMax = 1 << 20;
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConfigError(path + ": cannot read the configuration file: " + std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, size_t(n));
    if (text.size() > kMax) throw ConfigError(path + ": larger than 1 MiB, not a zkfarmd configuration");
  }
}

}  // namespace

bool pg_url_has_password(const std::string& url) {
  // URI form postgresql://user:PASSWORD@…, keyword form password=… (libpq's
  // two forms of a connection string).
  static const std::regex uri(R"(^postgres(?:ql)?://[^:/@]*:[^@]*@)"), keyword(R"((^|[\s&?])password=)");
  return std::regex_search(url, uri) || std::regex_search(url, keyword);
}

void Config::load_toml(const std::string& path) {
  toml::table t;
  const std::string text = read_config_file(path);
  try {
    t = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw ConfigError(path + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  static const std::vector<std::string> known = {
      "synth_workers", "synth_threads", "synth_batch", "gpu_devices", "backend", "gpu_threads", "gpu_key_memory_percent",
      "gpu_msm_copies", "gpu_queue_depth", "gpu_lanes", "verify_threads", "arena_mib",
      "synth_binary", "gpu_binary", "heartbeat_ms", "heartbeat_timeout_ms", "ready_timeout_ms",
      "drain_timeout_ms", "stop_timeout_ms", "restart_backoff_ms", "restart_backoff_max_ms",
      "http_address", "log_level", "log_file", "retention_hours", "flap_max_crashes", "flap_window_ms", "release_timeout_ms",
      "max_attempts", "control_group", "admin_group", "control_max_connections", "http_max_connections",
      "http_request_timeout_ms", "http_status_detail", "submit_checks", "submit_copies", "submit_queue", "submit_timeout_ms",
      "status_finished_jobs", "witness_timeout_ms", "witness_memory_mib", "witness_cpu_s", "sandbox_user", "sandbox_uid_base", "sandbox_uid_count", "witness_engine", "witness_graph_max_nodes",
      "circuit_build_memory_mib", "circuit_build_cpu_s", "circuit_wasm_max_mib", "input_max_bytes", "input_max_signals",
      "input_max_values", "job_input_max_bytes", "critical_group", "upgrade_dir",
      "generator_build_timeout_ms", "generator_build_jobs", "generator_builds", "queue_url", "host_id", "shared_dir",
      "lease_seconds", "claim_poll_ms"};
  for (auto&& [k, v] : t) {
    const std::string key(k.str());
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string near = cli::closest(key, known);
    throw ConfigError(where(path, v, ("unknown key '" + key + "'").c_str()) +
                      (near.empty() ? "" : "; did you mean '" + near + "'?") + " (docs/configuration.md lists the keys)");
  }
  read_uint(t, path, "synth_workers", synth_workers, 0, 1024);
  read_uint(t, path, "synth_threads", synth_threads, 1, 1024);
  read_uint(t, path, "synth_batch", synth_batch, 1, 64);
  read_str(t, path, "gpu_devices", gpu_devices);
  read_str(t, path, "backend", backend);
  read_uint(t, path, "gpu_threads", gpu_threads, 0, 1024);
  read_uint(t, path, "gpu_key_memory_percent", gpu_key_memory_percent, 1, 95);
  if (const toml::node* node = t.get("gpu_msm_copies"); node && node->is_string()) {
    if (node->value<std::string>() != "auto")
      throw ConfigError(where(path, *node, "gpu_msm_copies") + ": expected \"auto\" or an integer from 0 to 16");
    gpu_msm_copies.reset();
  } else if (node) {
    unsigned copies = 1;
    read_uint(t, path, "gpu_msm_copies", copies, 0, 16);
    gpu_msm_copies = copies;
  }
  read_uint(t, path, "gpu_queue_depth", gpu_queue_depth, 1, 32);
  read_uint(t, path, "gpu_lanes", gpu_lanes, 1, 32);
  read_uint(t, path, "verify_threads", verify_threads, 0, 64);
  read_uint(t, path, "arena_mib", arena_mib, 1, uint64_t(1) << 30);
  read_str(t, path, "synth_binary", synth_binary);
  read_str(t, path, "gpu_binary", gpu_binary);
  read_uint(t, path, "heartbeat_ms", heartbeat_ms, 10, 600000);
  read_uint(t, path, "heartbeat_timeout_ms", heartbeat_timeout_ms, 100, 3600000);
  read_uint(t, path, "ready_timeout_ms", ready_timeout_ms, 100, 3600000);
  read_uint(t, path, "drain_timeout_ms", drain_timeout_ms, 0, 86400000);
  read_uint(t, path, "stop_timeout_ms", stop_timeout_ms, 100, 3600000);
  read_uint(t, path, "restart_backoff_ms", restart_backoff_ms, 1, 3600000);
  read_uint(t, path, "restart_backoff_max_ms", restart_backoff_max_ms, 1, 86400000);
  read_str(t, path, "http_address", http_address);
  read_str(t, path, "log_level", log_level);
  read_str(t, path, "log_file", log_file);
  read_uint(t, path, "retention_hours", retention_hours, 0, 24 * 365 * 10);
  read_uint(t, path, "flap_max_crashes", flap_max_crashes, 0, 1000);
  read_uint(t, path, "flap_window_ms", flap_window_ms, 1000, 86400000);
  read_uint(t, path, "release_timeout_ms", release_timeout_ms, 100, 3600000);
  read_uint(t, path, "max_attempts", max_attempts, 1, 1000);
  read_str(t, path, "control_group", control_group);
  read_str(t, path, "admin_group", admin_group);
  read_str(t, path, "critical_group", critical_group);
  read_str(t, path, "upgrade_dir", upgrade_dir);
  read_uint(t, path, "control_max_connections", control_max_connections, 4, 100000);
  read_uint(t, path, "http_max_connections", http_max_connections, 4, 100000);
  read_uint(t, path, "http_request_timeout_ms", http_request_timeout_ms, 100, 600000);
  read_bool(t, path, "http_status_detail", http_status_detail);
  read_uint(t, path, "submit_checks", submit_checks, 1, 64);
  read_uint(t, path, "submit_copies", submit_copies, 1, 64);
  read_uint(t, path, "submit_queue", submit_queue, 1, 100000);
  read_uint(t, path, "submit_timeout_ms", submit_timeout_ms, 1000, 86400000);
  read_uint(t, path, "status_finished_jobs", status_finished_jobs, 0, 10000);
  read_uint(t, path, "witness_timeout_ms", witness_timeout_ms, 100, 86400000);
  read_uint(t, path, "witness_memory_mib", witness_memory_mib, 0, uint64_t(1) << 30);
  read_uint(t, path, "witness_cpu_s", witness_cpu_s, 0, 86400);
  read_str(t, path, "sandbox_user", sandbox_user);
  read_uint(t, path, "sandbox_uid_base", sandbox_uid_base, 1, 0xfffffffdull);
  read_uint(t, path, "sandbox_uid_count", sandbox_uid_count, 0, 1u << 20);
  read_str(t, path, "witness_engine", witness_engine);
  if (witness_engine != "auto" && witness_engine != "graph" && witness_engine != "generator")
    throw ConfigError(path + ": witness_engine = \"" + witness_engine + "\": auto, graph or generator");
  read_uint(t, path, "witness_graph_max_nodes", witness_graph_max_nodes, 1000, (uint64_t(1) << 30) - 1);
  read_uint(t, path, "circuit_build_memory_mib", circuit_build_memory_mib, 64, uint64_t(1) << 30);
  read_uint(t, path, "circuit_build_cpu_s", circuit_build_cpu_s, 1, 86400);
  read_uint(t, path, "circuit_wasm_max_mib", circuit_wasm_max_mib, 1, 65536);
  read_uint(t, path, "input_max_bytes", input_max_bytes, 1024, uint64_t(1) << 32);
  read_uint(t, path, "input_max_signals", input_max_signals, 1, uint64_t(1) << 32);
  read_uint(t, path, "input_max_values", input_max_values, 1, uint64_t(1) << 40);
  read_uint(t, path, "job_input_max_bytes", job_input_max_bytes, 1024, uint64_t(1) << 44);
  read_uint(t, path, "generator_build_timeout_ms", generator_build_timeout_ms, 1000, 86400000);
  read_uint(t, path, "generator_build_jobs", generator_build_jobs, 0, 1024);
  read_uint(t, path, "generator_builds", generator_builds, 1, 64);
  read_str(t, path, "queue_url", queue_url);
  if (pg_url_has_password(queue_url)) {
    // The queue's password opens every job and proof of the farm.
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077))
      throw ConfigError(path + ": queue_url holds a password and the file is readable by others (mode " +
                        std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                        std::to_string(st.st_mode & 7) + "); chmod 600 it, or keep the password in ~/.pgpass");
  }
  read_str(t, path, "host_id", host_id);
  read_str(t, path, "shared_dir", shared_dir);
  read_uint(t, path, "lease_seconds", lease_seconds, kMinLeaseSeconds, kMaxLeaseSeconds);
  read_uint(t, path, "claim_poll_ms", claim_poll_ms, 50, 600000);
}

void Config::finalize(const std::string& self_dir) {
  if (state_dir.empty()) throw ConfigError("--state-dir is required");
  if (backend != "auto" && backend != "cpu" && backend != "cuda")
    throw ConfigError("backend: '" + backend + "' is not one of auto, cpu, cuda");
  if (synth_workers == 0) synth_workers = std::max(2u, std::thread::hardware_concurrency()) - 1;
  if (synth_binary.empty()) synth_binary = (std::filesystem::path(self_dir) / "zkfarm-synth").string();
  if (gpu_binary.empty()) gpu_binary = (std::filesystem::path(self_dir) / "zkfarm-gpu").string();
  if (heartbeat_timeout_ms <= heartbeat_ms)
    throw ConfigError("heartbeat_timeout_ms must be larger than heartbeat_ms");
  if (restart_backoff_max_ms < restart_backoff_ms)
    throw ConfigError("restart_backoff_max_ms must be at least restart_backoff_ms");
  if (!queue_url.empty()) {
    if (shared_dir.empty())
      throw ConfigError("queue_url needs shared_dir: the absolute path of a folder every host mounts (docs/cluster.md)");
    if (shared_dir[0] != '/') throw ConfigError("shared_dir: '" + shared_dir + "' is not an absolute path");
    // Other hosts print host ids in their status and logs: letters, digits
    // and . _ - : / @ only (no spaces, no control characters).
    static const std::string allowed =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:/@";
    if (host_id.empty()) {
      char name[256] = {};
      ::gethostname(name, sizeof name - 1);
      host_id = std::string(name) + ":" + std::filesystem::absolute(state_dir).lexically_normal().string();
      for (char& c : host_id)
        if (allowed.find(c) == std::string::npos) c = '_';
    }
    if (host_id.size() > 200) throw ConfigError("host_id: longer than 200 bytes");
    if (host_id.find_first_not_of(allowed) != std::string::npos)
      throw ConfigError("host_id: only letters, digits and . _ - : / @ (it is shown in every host's status)");
  }
  if (!upgrade_dir.empty() && upgrade_dir[0] != '/')
    throw ConfigError("upgrade_dir: '" + upgrade_dir + "' is not an absolute path");
  static const std::set<std::string> levels = {"trace", "debug", "info", "warn", "error"};
  if (!levels.count(log_level)) throw ConfigError("log_level: '" + log_level + "' is not one of trace, debug, info, warn, error");
}

std::string Config::log_path() const {
  if (log_file.empty()) return "";
  if (log_file[0] == '/') return log_file;
  return (std::filesystem::path(state_dir) / log_file).lexically_normal().string();
}

void Config::check_host() const {
  const auto need_group = [](const char* key, const std::string& name) {
    if (!name.empty() && !group_id(name))
      throw ConfigError(std::string(key) + ": no group named '" + name + "' on this host (getent group " + name + ")");
  };
  need_group("control_group", control_group);
  if (admin_group != kDefaultAdminGroup) need_group("admin_group", admin_group);
  need_group("critical_group", critical_group);
  for (const auto& [key, path] : {std::pair{"synth_binary", synth_binary}, std::pair{"gpu_binary", gpu_binary}}) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      throw ConfigError(std::string(key) + ": " + path + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0)
      throw ConfigError(std::string(key) + ": " + path + " is not an executable file");
  }
  if (!log_file.empty()) {
    if (log_file.find('\0') != std::string::npos) throw ConfigError("log_file: holds a NUL byte");
    // The state dir is made at start; any other folder must be there.
    const auto dir = std::filesystem::path(log_path()).parent_path();
    struct stat st {};
    if (dir != std::filesystem::path(state_dir) && (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)))
      throw ConfigError("log_file: " + log_path() + ": its folder " + dir.string() + " does not exist");
  }
}

}  // namespace zkfarm::supervisor
