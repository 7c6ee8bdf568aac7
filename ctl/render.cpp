#include "ctl/render.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

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
  out.append(std::to_string(done)).append(1, '/').append(std::to_string(total)).append(" partitions");
  return out;
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
}  // namespace

std::string format_jobs(const json& jobs) {
  if (!jobs.is_array() || jobs.empty()) return "no jobs\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& j : jobs) {
    rows.push_back({cell(j, "id"), cell(j, "state"), cell(j, "priority"),
                    cell(j, "done") + "/" + cell(j, "partitions"), format_time_ms(field(j, "submitted_ms")),
                    format_time_ms(field(j, "finished_ms")), cell(j, "queue_wait_ms"), cell(j, "synthesis_ms"),
                    cell(j, "proving_ms"), cell(j, "total_ms"), cell(j, "out"), cell(j, "error")});
  }
  // Timings in ms: queue wait, summed synthesis and proving, end to end.
  return format_table({"ID", "STATE", "PRIORITY", "PROVED", "SUBMITTED", "FINISHED", "WAIT", "SYNTH", "PROVE", "TOTAL",
                       "OUT", "ERROR"},
                      rows);
}

std::string format_status(const json& status) {
  std::string out = "zkfarmd " + cell(status, "version") + "  pid " + cell(status, "pid") + "  " +
                    cell(status, "state") + "  state dir " + cell(status, "state_dir") + "\n";

  out += "\nWorkers\n";
  const json& workers = field(status, "workers");
  if (!workers.is_array() || workers.empty()) {
    out += "no workers\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const auto& w : workers) {
      rows.push_back({cell(w, "id"), cell(w, "kind"), cell(w, "pid"), cell(w, "state"), cell(w, "version"),
                      cell(w, "backend"), cell(w, "partition"), cell(w, "restarts")});
    }
    out += format_table({"ID", "KIND", "PID", "STATE", "VERSION", "BACKEND", "PARTITION", "RESTARTS"}, rows);
  }

  const json& queue = field(status, "queue");
  out += "\nQueue: ";
  if (queue.is_object() && !queue.empty()) {
    // Pipeline order first (synth, then prove), then anything else.
    std::vector<std::string> keys;
    for (const char* k : {"synth", "prove"}) {
      if (queue.contains(k)) keys.push_back(k);
    }
    for (auto it = queue.begin(); it != queue.end(); ++it) {
      if (it.key() != "synth" && it.key() != "prove") keys.push_back(it.key());
    }
    for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + keys[i] + " " + cell(queue[keys[i]]);
    out += "\n";
  } else {
    out += "-\n";
  }

  const json& arena = field(status, "arena");
  // kind: "memfd" (anonymous, freed with the farm's last process); absent from older supervisors.
  const std::string kind = cell(arena, "kind");
  out += "Arena: " + (kind == "-" ? "" : kind + " ") + cell(arena, "name") + "  " + format_mib(field(arena, "bytes")) +
         ", used " + format_mib(field(arena, "used")) + ", free " + format_mib(field(arena, "free")) + ", " +
         cell(arena, "slots") + " slots\n";

  out += "\nJobs\n" + format_jobs(field(status, "jobs"));
  return out;
}

}  // namespace zkfarm::ctl
