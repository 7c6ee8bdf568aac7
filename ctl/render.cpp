#include "ctl/render.hpp"

#include <pwd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>

namespace zkfarm::ctl {

using nlohmann::json;

std::string to_json_text(const json& value) { return value.dump(1, ' ', false, json::error_handler_t::replace); }

std::string cell(const json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) {
    std::string s = value.get<std::string>();
    // One line per row: never let a newline or tab from the wire break a table.
    std::replace_if(s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
    return s.empty() ? "-" : s;
  }
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string cell(const json& obj, const char* key) {
  if (!obj.is_object()) return "-";
  auto it = obj.find(key);
  return it == obj.end() ? "-" : cell(*it);
}

std::string format_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) width[c] = headers[c].size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < headers.size() && c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t c = 0; c < headers.size(); ++c) {
      const std::string& s = c < r.size() ? r[c] : std::string();
      out += s;
      if (c + 1 < headers.size()) out += std::string(width[c] - s.size() + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(headers);
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string progress_bar(uint64_t done, uint64_t total, int width) {
  if (width < 1) width = 1;
  uint64_t filled = 0;
  if (total > 0) filled = done >= total ? uint64_t(width) : done * uint64_t(width) / total;
  std::string out;
  out.reserve(size_t(width) + 48);
  out.append(1, '[').append(filled, '#').append(size_t(width) - filled, '-').append("] ");
  out.append(std::to_string(done)).append(1, '/').append(plural(total, "partition"));
  return out;
}

std::string plural(uint64_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string user_name(const json& uid) {
  if (!uid.is_number_unsigned() && !(uid.is_number_integer() && uid.get<int64_t>() >= 0)) return "-";
  const uint64_t id = uid.get<uint64_t>();
  if (id > uint64_t(uid_t(-1))) return "uid " + std::to_string(id);
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (getpwuid_r(uid_t(id), &pw, buf.data(), buf.size(), &found) == 0 && found && found->pw_name && *found->pw_name)
    return found->pw_name;
  return "uid " + std::to_string(id);
}

std::string format_mib(const json& bytes) {
  if (!bytes.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes.get<double>() / (1024.0 * 1024.0));
  return buf;
}

std::string format_time_ms(const json& ms) {
  if (!ms.is_number()) return "-";
  std::time_t t = std::time_t(ms.get<double>() / 1000.0);
  std::tm tm{};
  if (!localtime_r(&t, &tm)) return "-";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

namespace {
const json& field(const json& obj, const char* key) {
  static const json null_value;
  if (!obj.is_object()) return null_value;
  auto it = obj.find(key);
  return it == obj.end() ? null_value : *it;
}

std::string two_digits(long v) { return (v < 10 ? "0" : "") + std::to_string(v); }
}  // namespace

std::string format_duration(const json& seconds) {
  if (!seconds.is_number()) return "-";
  const double s = seconds.get<double>();
  if (!(s >= 0)) return "-";
  if (s < 1) return std::to_string(long(s * 1000 + 0.5)) + " ms";
  if (s < 10) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", s);
    return buf;
  }
  const long t = long(s);
  if (t < 60) return std::to_string(t) + " s";
  if (t < 3600) return std::to_string(t / 60) + "m " + two_digits(t % 60) + "s";
  if (t < 86400) return std::to_string(t / 3600) + "h " + two_digits(t / 60 % 60) + "m";
  return std::to_string(t / 86400) + "d " + two_digits(t / 3600 % 24) + "h";
}

std::string format_ms_as_s(const json& ms) {
  if (!ms.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", ms.get<double>() / 1000.0);
  return buf;
}

std::string format_jobs(const json& jobs) {
  if (!jobs.is_array() || jobs.empty()) return "no jobs\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& j : jobs) {
    rows.push_back({cell(j, "id"), user_name(field(j, "owner_uid")), cell(j, "state"), cell(j, "priority"),
                    cell(j, "done") + "/" + cell(j, "partitions"), format_time_ms(field(j, "submitted_ms")),
                    format_time_ms(field(j, "finished_ms")), format_ms_as_s(field(j, "queue_wait_ms")),
                    format_ms_as_s(field(j, "synthesis_ms")), format_ms_as_s(field(j, "proving_ms")),
                    format_ms_as_s(field(j, "total_ms")), cell(j, "out"), cell(j, "error")});
  }
  // Timings in seconds: queue wait (submit to first dispatch), synthesis and
  // proving summed over partitions, total (submit to end).
  return format_table({"ID", "USER", "STATE", "PRIORITY", "PROVED", "SUBMITTED", "FINISHED", "WAIT(s)", "SYNTH(s)",
                       "PROVE(s)", "TOTAL(s)", "OUT", "ERROR"},
                      rows);
}

std::string format_worker_activity(const json& w) {
  std::vector<std::string> parts;
  const json& job = field(w, "job");
  const json& index = field(w, "partition_index");
  if (job.is_number() && index.is_number()) {
    std::string doing = "job " + cell(job) + " part " + cell(index);
    const json& held = field(w, "held");
    if (held.is_number_unsigned() && held.get<uint64_t>() > 1)
      doing += " (+" + std::to_string(held.get<uint64_t>() - 1) + " queued)";
    parts.push_back(doing);
  } else if (field(w, "partition").is_string()) {  // an older supervisor: "job/index"
    parts.push_back("partition " + cell(w, "partition"));
  }
  if (field(w, "rolling_step").is_string()) parts.push_back("rolling: " + cell(w, "rolling_step"));
  const json& rw = field(w, "release_wait");
  if (rw.is_object()) {
    std::string line = "release wait " + format_duration(field(rw, "elapsed_ms").is_number()
                                                             ? json(field(rw, "elapsed_ms").get<double>() / 1000.0)
                                                             : json()) +
                       " of " +
                       format_duration(field(rw, "timeout_ms").is_number()
                                           ? json(field(rw, "timeout_ms").get<double>() / 1000.0)
                                           : json());
    if (field(w, "release").is_string()) line += ": " + cell(w, "release");
    parts.push_back(line);
  } else if (field(w, "release").is_string() && !field(w, "release").get<std::string>().empty()) {
    parts.push_back("release: " + cell(w, "release"));
  }
  if (field(w, "restart_in_ms").is_number())
    parts.push_back("restart in " + format_duration(json(field(w, "restart_in_ms").get<double>() / 1000.0)));
  if (field(w, "failed_reason").is_string()) parts.push_back("failed: " + cell(w, "failed_reason"));
  if (parts.empty()) return "-";
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out;
}

std::string format_rolling(const json& r) {
  if (!r.is_object()) return "-";
  std::string out = cell(r, "what") + " " + cell(r, "id") + ": ";
  const std::string result = cell(r, "result");
  const json& total = field(r, "total");
  const std::string progress = cell(r, "replaced") + " of " +
                               (total.is_number_unsigned() ? plural(total.get<uint64_t>(), "worker") : cell(total) + " workers") +
                               " replaced";
  if (result == "running") {
    out += "running, " + progress;
    if (field(r, "current").is_string()) out += ", now " + cell(r, "current");
  } else if (result == "done") {
    out += "done at " + format_time_ms(field(r, "finished_ms")) + ", " + progress;
  } else if (result == "failed") {
    out += "FAILED at " + format_time_ms(field(r, "finished_ms")) + " (" + progress + "): " + cell(r, "error");
  } else {  // an older supervisor: what, current, queued, error
    out += field(r, "error").is_string() && !field(r, "error").get<std::string>().empty()
               ? "FAILED: " + cell(r, "error")
               : "current " + cell(r, "current") + ", " + cell(r, "queued") + " queued";
  }
  return out;
}

namespace {
// A worker's pid, "-" when it runs no process (0 on the wire).
std::string pid_cell(const json& w) {
  const json& pid = field(w, "pid");
  return pid.is_number() && pid.get<double>() <= 0 ? "-" : cell(pid);
}

// "PATH (4.2 MiB, WAL 0.1 MiB)" for the journal; "-" when there is none here.
std::string journal_line(const json& j) {
  if (!j.is_object()) return "-";
  return cell(j, "path") + " (" + format_mib(field(j, "bytes")) + ", WAL " + format_mib(field(j, "wal_bytes")) + ")";
}

// The farm's state in words: what happens to a submit and to queued work.
std::string farm_state(const json& status) {
  const std::string intake = cell(status, "intake");
  if (cell(status, "state") == "stopping" || intake == "closed")
    return "stopping: submits refused; in-flight partitions finish, queued ones stay in the journal";
  if (intake == "draining") return "draining: submits accepted and queued; no new partition starts (`zkfarmctl resume`)";
  if (intake == "refusing") return "REFUSING submits: " + cell(status, "intake_fault");
  if (intake == "open") return "accepting: submits accepted, partitions start";
  return cell(status, "state");
}
}  // namespace

std::string format_status(const json& status, size_t max_live, size_t max_finished) {
  // Through zkfarm-api the host's pid and paths are withheld (docs/api.md):
  // their fields are absent, and so are their words here.
  std::string out = "zkfarmd " + cell(status, "version");
  if (!field(status, "pid").is_null()) out += "  pid " + cell(status, "pid");
  out += "  up " + format_duration(field(status, "uptime_s"));
  if (!field(status, "state_dir").is_null()) out += "  state dir " + cell(status, "state_dir");
  out += "\n";
  auto line = [&](const char* label, const std::string& text) { out += std::string(label) + text + "\n"; };
  // Where things are. A shared queue has no journal here (Queue: below);
  // a zkfarmd older than these fields shows none of these lines.
  if (status.is_object() && status.contains("log_file")) {
    if (!field(status, "journal").is_null()) line("Journal:     ", journal_line(field(status, "journal")));
    line("HTTP:        ", field(status, "http_address").is_string() ? "http://" + cell(status, "http_address") + "/"
                                                                    : std::string("off"));
    line("Config:      ", cell(status, "config_file"));
    line("Log:         ", cell(status, "log_file"));
  }
  line("Farm:        ", farm_state(status));
  const json& ready = field(status, "ready");
  if (ready.is_boolean()) line("Ready:       ", ready.get<bool>() ? "yes" : "no");
  const json& parts = field(status, "partitions");
  if (parts.is_object()) {
    line("Partitions:  ", cell(parts, "queued") + " queued, " + cell(parts, "synthesizing") + " synthesizing, " +
                              cell(parts, "synthesized") + " waiting for a GPU worker, " + cell(parts, "proving") +
                              " proving (" + cell(status, "in_flight") + " in flight)");
  } else {
    const json& queue = field(status, "queue");
    line("Queue:       ", "synth " + cell(queue, "synth") + ", prove " + cell(queue, "prove"));
  }
  const json& arena = field(status, "arena");
  // kind: "memfd" (anonymous, freed with the farm's last process); absent from
  // older supervisors. The name is withheld through zkfarm-api.
  std::string arena_line = cell(arena, "kind") + (field(arena, "name").is_null() ? "" : " " + cell(arena, "name")) +
                           ": " + format_mib(field(arena, "used")) + " used of " + format_mib(field(arena, "bytes"));
  if (field(arena, "used").is_number() && field(arena, "bytes").is_number() && field(arena, "bytes").get<double>() > 0) {
    char pct[32];
    std::snprintf(pct, sizeof pct, " (%.1f %%)", 100.0 * field(arena, "used").get<double>() / field(arena, "bytes").get<double>());
    arena_line += pct;
  }
  if (arena.is_object()) line("Arena:       ", arena_line + ", " + cell(arena, "slots") + " slots");
  line("Rolling:     ", format_rolling(field(status, "rolling")));
  // A shared queue (docs/cluster.md): its state, the hosts on it.
  const json& cluster = field(status, "cluster");
  if (cluster.is_object()) {
    const bool reachable = !field(cluster, "reachable").is_boolean() || field(cluster, "reachable").get<bool>();
    line("Queue:       ", cell(cluster, "queue") + (reachable ? "" : "  UNREACHABLE: " + cell(cluster, "fault")));
    const json& qp = field(cluster, "partitions");
    line("             ", cell(qp, "queued") + " queued, " + cell(qp, "leased") + " leased, " + cell(qp, "done") +
                              " done in " + cell(cluster, "live_jobs") + " live jobs; this host (" +
                              cell(cluster, "host_id") + ") holds " + cell(cluster, "held_here") + ", lease " +
                              cell(cluster, "lease_seconds") + " s");
    out += "\nHosts\n";
    std::vector<std::vector<std::string>> rows;
    const json& hosts = field(cluster, "hosts");
    if (hosts.is_array()) {
      for (const auto& h : hosts) {
        char age[32] = "-";
        if (field(h, "heartbeat_age_s").is_number())
          std::snprintf(age, sizeof age, "%.0f s ago", field(h, "heartbeat_age_s").get<double>());
        const bool alive = field(h, "alive").is_boolean() && field(h, "alive").get<bool>();
        rows.push_back({cell(h, "host_id"), alive ? "yes" : "NO", cell(h, "state"), age, cell(h, "leases"),
                        cell(h, "version"), cell(h, "devices")});
      }
    }
    out += rows.empty() ? "no hosts seen yet\n"
                        : format_table({"HOST", "ALIVE", "STATE", "HEARTBEAT", "LEASES", "VERSION", "DEVICES"}, rows);
  }

  out += "\nWorkers\n";
  const json& workers = field(status, "workers");
  if (!workers.is_array() || workers.empty()) {
    out += "no workers\n";
  } else {
    // Through zkfarm-api pids and binaries are withheld: those columns go,
    // rather than show "-" in every row.
    const bool host = workers[0].is_object() && workers[0].contains("pid");
    std::vector<std::string> headers;
    std::vector<std::vector<std::string>> rows(workers.size());
    auto column = [&](const char* header, const auto& value_of) {
      headers.push_back(header);
      for (size_t i = 0; i < workers.size(); ++i) rows[i].push_back(value_of(workers[i]));
    };
    auto field_column = [&](const char* header, const char* key) {
      column(header, [key](const json& w) { return cell(w, key); });
    };
    field_column("ID", "id");
    field_column("KIND", "kind");
    if (host) column("PID", pid_cell);
    field_column("STATE", "state");
    column("UP", [](const json& w) { return format_duration(field(w, "uptime_s")); });
    field_column("VERSION", "version");
    field_column("BACKEND", "backend");
    field_column("RESTARTS", "restarts");
    if (host) field_column("BINARY", "binary");
    column("DOING", format_worker_activity);
    out += format_table(headers, rows);
  }

  // Jobs: the live ones first (as the supervisor lists them), then the most
  // recent finished ones; the rest are counted.
  const json& jobs = field(status, "jobs");
  json live = json::array(), finished = json::array();
  size_t live_total = 0, finished_total = 0;
  if (jobs.is_array()) {
    for (const auto& j : jobs) {
      const std::string st = cell(j, "state");
      const bool ended = st == "done" || st == "failed" || st == "cancelled";
      if (ended) {
        if (finished.size() < max_finished) finished.push_back(j);
        ++finished_total;
      } else {
        if (live.size() < max_live) live.push_back(j);
        ++live_total;
      }
    }
  }
  std::string counts;
  const json& by_state = field(status, "job_counts");
  if (by_state.is_object()) {
    for (auto it = by_state.begin(); it != by_state.end(); ++it)
      counts += (counts.empty() ? "" : ", ") + cell(it.value()) + " " + it.key();
  }
  out += "\nJobs" + (counts.empty() ? std::string() : " (" + counts + ")") + "\n";
  json shown = live;
  for (auto& j : finished) shown.push_back(j);
  out += format_jobs(shown);
  const json& omitted = field(status, "jobs_omitted");
  const uint64_t more = (live_total - live.size()) + (finished_total - finished.size()) +
                        (omitted.is_number_unsigned() ? omitted.get<uint64_t>() : 0);
  if (more > 0)
    out += std::to_string(more) + " more: zkfarmctl jobs [--state S] [--limit N] [--since T]\n";
  return out;
}

std::string format_worker(const json& w) {
  std::string out = cell(w, "id") + " - " + cell(w, "kind") + " worker, " + cell(w, "state") + "\n";
  auto line = [&](const char* label, const std::string& text) { out += std::string(label) + text + "\n"; };
  if (w.is_object() && w.contains("pid")) {  // withheld through zkfarm-api, with the binary
    line("      PID: ", pid_cell(w));
    line("   Binary: ", cell(w, "binary"));
  }
  std::string build = cell(w, "version") + ", backend " + cell(w, "backend");
  if (field(w, "device").is_string()) build += ", device " + cell(w, "device");
  line("  Version: ", build);
  line("       Up: ", format_duration(field(w, "uptime_s")));
  line(" Restarts: ", cell(w, "restarts"));
  line("    Doing: ", format_worker_activity(w));
  return out;
}

}  // namespace zkfarm::ctl
